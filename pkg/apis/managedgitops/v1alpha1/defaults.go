package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// addDefaultingFuncs registers the generated defaulters. The core API has no defaults of its
// own: every optional field's zero value already means what users expect (an empty destination
// deploys into the object's own namespace, an empty targetRevision is HEAD), and filling them in
// would change objects that clients of the original service read back byte for byte.
func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_GitOpsDeploymentHoldSpec defaults releaseOn to Manual: a hold made before the
// field existed, or without it, is released only by hand, as it always was.
func SetDefaults_GitOpsDeploymentHoldSpec(obj *GitOpsDeploymentHoldSpec) {
	if obj.ReleaseOn == "" {
		obj.ReleaseOn = HoldReleaseManual
	}
}
