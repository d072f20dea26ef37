package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_DeploymentTargetClass defaults reclaimPolicy to Delete, as Kubernetes does for a
// StorageClass and as the class that the original service shipped set it.
func SetDefaults_DeploymentTargetClass(obj *DeploymentTargetClass) {
	if obj.Spec.ReclaimPolicy == "" {
		obj.Spec.ReclaimPolicy = ReclaimPolicyDelete
	}
}
