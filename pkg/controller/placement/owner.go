package placement

import (
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// maxProvisionedDepth bounds the walk from a provisioned namespace to the namespace of its
// claim. The server refuses claims in provisioned namespaces, so one step is all a chain
// should have; the bound only keeps labels written by hand into a loop from looping.
const maxProvisionedDepth = 8

// OwnerOf is the owner namespace counts against (Tenant.Owner), given the labels of the
// namespaces (nil for one not known): the value of its LabelTenantOwner, set by an admin;
// else, for a namespace the namespace provisioner made, the owner of the namespace of the
// claim it was made for, since whoever may claim there made it; else the namespace itself.
// It is pure: the controller passes its namespace cache.
func OwnerOf(namespace string, labelsOf func(namespace string) map[string]string) string {
	ns := namespace
	for range maxProvisionedDepth {
		l := labelsOf(ns)
		if owner := l[managedv1alpha1.LabelTenantOwner]; owner != "" {
			return owner
		}
		claimNamespace := l[appstudiov1alpha1.LabelProvisionedClaimNamespace]
		if l[appstudiov1alpha1.LabelProvisionedTarget] == "" || claimNamespace == "" || claimNamespace == ns {
			return ns
		}
		ns = claimNamespace
	}
	return ns
}
