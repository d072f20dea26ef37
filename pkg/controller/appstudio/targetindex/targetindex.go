// Package targetindex holds the informer index functions of the controllers that follow an
// Environment through its DeploymentTargetClaim to the DeploymentTarget: each keys an object by
// the "namespace/name" of the one it names. Each controller registers them under index names
// of its own, since it shares the informers with the others.
package targetindex

import appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"

// ClaimOfEnvironment keys an Environment by its DeploymentTargetClaim.
func ClaimOfEnvironment(obj interface{}) ([]string, error) {
	env, ok := obj.(*appstudiov1alpha1.Environment)
	if !ok || env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName == "" {
		return nil, nil
	}
	return []string{env.Namespace + "/" + env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName}, nil
}

// TargetOfClaim keys a DeploymentTargetClaim by the DeploymentTarget it names.
func TargetOfClaim(obj interface{}) ([]string, error) {
	claim, ok := obj.(*appstudiov1alpha1.DeploymentTargetClaim)
	if !ok || claim.Spec.TargetName == "" {
		return nil, nil
	}
	return []string{claim.Namespace + "/" + claim.Spec.TargetName}, nil
}

// ClaimRefOfTarget keys a DeploymentTarget by the DeploymentTargetClaim that claims it.
func ClaimRefOfTarget(obj interface{}) ([]string, error) {
	t, ok := obj.(*appstudiov1alpha1.DeploymentTarget)
	if !ok || t.Spec.ClaimRef == "" {
		return nil, nil
	}
	return []string{t.Namespace + "/" + t.Spec.ClaimRef}, nil
}
