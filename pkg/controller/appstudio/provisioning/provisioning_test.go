package provisioning

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	appstudiolisters "github.com/gitops-service/gitops-service/pkg/generated/listers/appstudio/v1alpha1"
)

const provisioner appstudiov1alpha1.Provisioner = "example.com/p"

func TestWanted(t *testing.T) {
	class := &appstudiov1alpha1.DeploymentTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"},
		Spec: appstudiov1alpha1.DeploymentTargetClassSpec{Provisioner: provisioner}}
	claim := func(mutate func(*appstudiov1alpha1.DeploymentTargetClaim)) *appstudiov1alpha1.DeploymentTargetClaim {
		c := &appstudiov1alpha1.DeploymentTargetClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Annotations: map[string]string{appstudiov1alpha1.AnnTargetProvisioner: "gold"}},
			Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: "gold"},
		}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	other := class.DeepCopy()
	other.Spec.Provisioner = "example.com/other"
	for _, tc := range []struct {
		name  string
		claim *appstudiov1alpha1.DeploymentTargetClaim
		class *appstudiov1alpha1.DeploymentTargetClass
		want  bool
	}{
		{"annotated by the binder for its class", claim(nil), class, true},
		{"no claim", nil, class, false},
		{"no class", claim(nil), nil, false},
		{"another provisioner's class", claim(nil), other, false},
		{"not annotated", claim(func(c *appstudiov1alpha1.DeploymentTargetClaim) { c.Annotations = nil }), class, false},
		{"annotated for another class", claim(func(c *appstudiov1alpha1.DeploymentTargetClaim) {
			c.Annotations[appstudiov1alpha1.AnnTargetProvisioner] = "silver"
		}), class, false},
		{"names a target", claim(func(c *appstudiov1alpha1.DeploymentTargetClaim) { c.Spec.TargetName = "t" }), class, false},
		{"bound", claim(func(c *appstudiov1alpha1.DeploymentTargetClaim) {
			c.Annotations[appstudiov1alpha1.AnnBindCompleted] = "true"
		}), class, false},
		{"being deleted", claim(func(c *appstudiov1alpha1.DeploymentTargetClaim) { c.DeletionTimestamp = &metav1.Time{} }), class, false},
	} {
		if got := Wanted(tc.claim, tc.class, provisioner); got != tc.want {
			t.Errorf("%s: Wanted = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMadeByAndOfClass(t *testing.T) {
	target := func(name, class string, annotated bool, finalizers ...string) *appstudiov1alpha1.DeploymentTarget {
		t := &appstudiov1alpha1.DeploymentTarget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers},
			Spec: appstudiov1alpha1.DeploymentTargetSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)}}
		if annotated {
			t.Annotations = map[string]string{appstudiov1alpha1.AnnDynamicallyProvisioned: string(provisioner)}
		}
		return t
	}
	annotated, held, foreign := target("a", "gold", true), target("b", "silver", false, "example.com/finalizer"), target("c", "gold", false)
	for _, tc := range []struct {
		t    *appstudiov1alpha1.DeploymentTarget
		want bool
	}{{annotated, true}, {held, true}, {foreign, false}} {
		if got := MadeBy(tc.t, provisioner, "example.com/finalizer"); got != tc.want {
			t.Errorf("MadeBy(%s) = %v, want %v", tc.t.Name, got, tc.want)
		}
	}
	targets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	claims := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, obj := range []*appstudiov1alpha1.DeploymentTarget{annotated, held, foreign} {
		_ = targets.Add(obj)
	}
	for i, class := range []string{"gold", "silver", "gold"} {
		_ = claims.Add(&appstudiov1alpha1.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("claim-", i)},
			Spec: appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: appstudiov1alpha1.DeploymentTargetClassName(class)}})
	}
	gotClaims, gotTargets := OfClass(appstudiolisters.NewDeploymentTargetClaimLister(claims), appstudiolisters.NewDeploymentTargetLister(targets), "gold")
	var names []string
	for _, c := range gotClaims {
		names = append(names, c.Name)
	}
	for _, t := range gotTargets {
		names = append(names, t.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"a", "c", "claim-0", "claim-2"}) {
		t.Errorf("claims and targets of class gold: %v", names)
	}
}
