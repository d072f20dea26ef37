// Package v1alpha1 is the v1alpha1 version of the managed-gitops.redhat.com API group:
// the core GitOps Service API that maps one to one onto Argo CD objects.
//
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/gitops-service/gitops-service/pkg/apis/managedgitops
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +groupName=managed-gitops.redhat.com
// +groupGoName=ManagedGitops
package v1alpha1
