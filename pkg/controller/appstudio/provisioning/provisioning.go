// Package provisioning is what the DeploymentTarget provisioners (namespaceprovisioner,
// devsandboxprovisioner) share: which claims the binder has asked a provisioner for a target,
// which targets a provisioner made, and the claims and targets of a class.
package provisioning

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

// Wanted tells whether the binder asks provisioner for a target for claim, of class (the
// claim's class, nil when there is none): a live claim that names no target, whose binding has
// not completed, and that carries the binder's provisioner annotation for its class.
func Wanted(claim *appstudiov1alpha1.DeploymentTargetClaim, class *appstudiov1alpha1.DeploymentTargetClass,
	provisioner appstudiov1alpha1.Provisioner) bool {
	if claim == nil || claim.DeletionTimestamp != nil || claim.Spec.TargetName != "" || claim.Spec.DeploymentTargetClassName == "" {
		return false
	}
	if _, bound := claim.Annotations[appstudiov1alpha1.AnnBindCompleted]; bound {
		return false
	}
	return claim.Annotations[appstudiov1alpha1.AnnTargetProvisioner] == string(claim.Spec.DeploymentTargetClassName) &&
		class != nil && class.Name == string(claim.Spec.DeploymentTargetClassName) && class.Spec.Provisioner == provisioner
}

// MadeBy tells whether provisioner made t: it says so (the provisioned-by annotation), or it
// holds the provisioner's finalizer.
func MadeBy(t *appstudiov1alpha1.DeploymentTarget, provisioner appstudiov1alpha1.Provisioner, finalizer string) bool {
	return t.Annotations[appstudiov1alpha1.AnnDynamicallyProvisioned] == string(provisioner) || slices.Contains(t.Finalizers, finalizer)
}

// OfClass are the claims and the targets, in every namespace, of the class named class.
func OfClass(claims appstudiolisters.DeploymentTargetClaimLister, targets appstudiolisters.DeploymentTargetLister,
	class string) ([]*appstudiov1alpha1.DeploymentTargetClaim, []*appstudiov1alpha1.DeploymentTarget) {
	allClaims, _ := claims.List(labels.Everything())
	allTargets, _ := targets.List(labels.Everything())
	return slices.DeleteFunc(allClaims, func(c *appstudiov1alpha1.DeploymentTargetClaim) bool {
			return string(c.Spec.DeploymentTargetClassName) != class
		}), slices.DeleteFunc(allTargets, func(t *appstudiov1alpha1.DeploymentTarget) bool {
			return string(t.Spec.DeploymentTargetClassName) != class
		})
}
