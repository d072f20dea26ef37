package targetindex

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

func TestFollower(t *testing.T) {
	informers := externalversions.NewSharedInformerFactory(fake.NewSimpleClientset(), 0).AppStudio().V1alpha1()
	envs, claims, targets := informers.Environments().Informer(), informers.DeploymentTargetClaims().Informer(), informers.DeploymentTargets().Informer()
	// Two controllers share the informers: the second registration must neither fail nor
	// register the indexes twice.
	if _, err := NewFollower(envs, claims, targets); err != nil {
		t.Fatal(err)
	}
	f, err := NewFollower(envs, claims, targets)
	if err != nil {
		t.Fatalf("second controller on the same informers: %v", err)
	}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	env := func(ns, name, claim string) *appstudiov1alpha1.Environment {
		e := &appstudiov1alpha1.Environment{ObjectMeta: meta(ns, name)}
		e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = claim
		return e
	}
	claim := func(ns, name, target string) *appstudiov1alpha1.DeploymentTargetClaim {
		return &appstudiov1alpha1.DeploymentTargetClaim{ObjectMeta: meta(ns, name), Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{TargetName: target}}
	}
	target := func(ns, name, claimRef string) *appstudiov1alpha1.DeploymentTarget {
		return &appstudiov1alpha1.DeploymentTarget{ObjectMeta: meta(ns, name), Spec: appstudiov1alpha1.DeploymentTargetSpec{ClaimRef: claimRef}}
	}
	for _, obj := range []interface{}{env("a", "dev", "c1"), env("a", "staging", "c2"), env("a", "plain", ""), env("b", "dev", "c1")} {
		_ = envs.GetIndexer().Add(obj)
	}
	for _, obj := range []interface{}{claim("a", "c1", "t1"), claim("a", "c2", ""), claim("b", "c1", "t1")} {
		_ = claims.GetIndexer().Add(obj)
	}
	claimed := target("a", "t2", "c2")
	// Bound to an earlier claim c2, deleted since: the claim of that name now is another.
	stale := target("a", "t3", "c2")
	stale.Annotations = map[string]string{appstudiov1alpha1.AnnClaimUID: "deleted-uid"}
	for _, obj := range []interface{}{target("a", "t1", ""), claimed, stale, target("b", "t1", "c1")} {
		_ = targets.GetIndexer().Add(obj)
	}
	names := func(envs []*appstudiov1alpha1.Environment) []string {
		var out []string
		for _, e := range envs {
			out = append(out, e.Namespace+"/"+e.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		obj  interface{}
		want []string
	}{
		{"a target a claim names", target("a", "t1", ""), []string{"a/dev"}},
		{"a target that claims a claim", claimed, []string{"a/staging"}},
		{"a target both named and claiming, in another namespace", target("b", "t1", "c1"), []string{"b/dev", "b/dev"}},
		{"a tombstone", cache.DeletedFinalStateUnknown{Key: "a/t2", Obj: claimed}, []string{"a/staging"}},
		{"a target nobody uses", target("a", "t9", ""), nil},
		{"not a target", claim("a", "c1", "t1"), nil},
	} {
		if got := names(f.EnvironmentsOfTarget(tc.obj)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Environments %v, want %v", tc.name, got, tc.want)
		}
	}
	got, err := f.TargetsClaimedBy(claim("a", "c2", ""))
	if err != nil || len(got) != 1 || got[0].Name != "t2" {
		t.Errorf("TargetsClaimedBy(a/c2) = %v, %v; want a/t2 (not a/t3, bound to an earlier a/c2)", got, err)
	}
	if got := len(envs.GetIndexer().GetIndexers()); got != 2 { // the namespace index, and ours
		t.Errorf("the Environments' informer has %d indexes, want 2", got)
	}
}
