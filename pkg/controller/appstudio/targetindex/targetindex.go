// Package targetindex holds the informer indexes of the controllers that follow an Environment
// through its DeploymentTargetClaim to the DeploymentTarget: each keys an object by the
// "namespace/name" of the one it names. The controllers share the informers, so they register
// the indexes under these shared names (Add leaves out those an informer holds already): each
// index is kept once per informer, however many controllers read it.
package targetindex

import (
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// Index names, and the index functions registered under them.
const (
	// EnvironmentsByClaim: Environments by their DeploymentTargetClaim (ClaimOfEnvironment).
	EnvironmentsByClaim = "appstudio/environments-by-claim"
	// ClaimsByTarget: DeploymentTargetClaims by the DeploymentTarget they name (TargetOfClaim).
	ClaimsByTarget = "appstudio/claims-by-target"
	// TargetsByClaimRef: DeploymentTargets by the claim that claims them (ClaimRefOfTarget).
	TargetsByClaimRef = "appstudio/targets-by-claimref"
)

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

// Claims tells whether t claims claim: its claimRef names the claim, and the claim UID the
// binder recorded on it, if any (AnnClaimUID), is this claim's. A claim deleted and made again
// under its name is another claim, and does not inherit the target.
func Claims(t *appstudiov1alpha1.DeploymentTarget, claim *appstudiov1alpha1.DeploymentTargetClaim) bool {
	if t.Spec.ClaimRef != claim.Name {
		return false
	}
	uid, ok := t.Annotations[appstudiov1alpha1.AnnClaimUID]
	return !ok || uid == string(claim.UID)
}

// Add registers indexers on inf, except those of a name it holds already: a shared name means
// the same function, registered by another controller.
func Add(inf cache.SharedIndexInformer, indexers cache.Indexers) error {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return inf.AddIndexers(missing)
}

// Follower tells which Environments a change of a claim or a target concerns, and which
// targets a claim claims.
type Follower struct {
	environments, claims, targets cache.Indexer
}

// NewFollower registers the three indexes on the informers.
func NewFollower(environments, claims, targets cache.SharedIndexInformer) (*Follower, error) {
	for _, ix := range []struct {
		inf  cache.SharedIndexInformer
		name string
		fn   cache.IndexFunc
	}{
		{environments, EnvironmentsByClaim, ClaimOfEnvironment},
		{claims, ClaimsByTarget, TargetOfClaim},
		{targets, TargetsByClaimRef, ClaimRefOfTarget},
	} {
		if err := Add(ix.inf, cache.Indexers{ix.name: ix.fn}); err != nil {
			return nil, err
		}
	}
	return &Follower{environments: environments.GetIndexer(), claims: claims.GetIndexer(), targets: targets.GetIndexer()}, nil
}

// EnvironmentsOfClaim are the Environments that name the claim "namespace/name".
func (f *Follower) EnvironmentsOfClaim(claimKey string) []*appstudiov1alpha1.Environment {
	objs, _ := f.environments.ByIndex(EnvironmentsByClaim, claimKey)
	out := make([]*appstudiov1alpha1.Environment, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.(*appstudiov1alpha1.Environment))
	}
	return out
}

// EnvironmentsOfTarget are the Environments of the claims that the target obj (or its
// tombstone) claims or that name it; an Environment may come twice.
func (f *Follower) EnvironmentsOfTarget(obj interface{}) []*appstudiov1alpha1.Environment {
	t, ok := framework.UnwrapTombstone(obj).(*appstudiov1alpha1.DeploymentTarget)
	if !ok {
		return nil
	}
	var out []*appstudiov1alpha1.Environment
	if t.Spec.ClaimRef != "" {
		out = f.EnvironmentsOfClaim(t.Namespace + "/" + t.Spec.ClaimRef)
	}
	claims, _ := f.claims.ByIndex(ClaimsByTarget, t.Namespace+"/"+t.Name)
	for _, obj := range claims {
		c := obj.(*appstudiov1alpha1.DeploymentTargetClaim)
		out = append(out, f.EnvironmentsOfClaim(c.Namespace+"/"+c.Name)...)
	}
	return out
}

// TargetsClaimedBy are the DeploymentTargets that claim the claim (Claims).
func (f *Follower) TargetsClaimedBy(claim *appstudiov1alpha1.DeploymentTargetClaim) ([]*appstudiov1alpha1.DeploymentTarget, error) {
	objs, err := f.targets.ByIndex(TargetsByClaimRef, claim.Namespace+"/"+claim.Name)
	if err != nil {
		return nil, err
	}
	out := make([]*appstudiov1alpha1.DeploymentTarget, 0, len(objs))
	for _, obj := range objs {
		if t := obj.(*appstudiov1alpha1.DeploymentTarget); Claims(t, claim) {
			out = append(out, t)
		}
	}
	return out, nil
}
