package namespaceprovisioner

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetbinder"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetreclaim"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
)

// TestWithTheBinder runs the provisioner with the binder and the reclaim controller: a new
// claim of the class is marked by the binder, provisioned here, and bound by the binder to the
// target made for it; then the three are quiet (no controller undoes another's writes).
func TestWithTheBinder(t *testing.T) {
	claim := newClaim()
	claim.Annotations = nil
	claim.Status.Phase = ""
	f := newFixture(t, newClass("Delete", ""), claim)
	a := f.gf.AppStudio().V1alpha1()
	binder, err := deploymenttargetbinder.New(a.DeploymentTargetClaims(), a.DeploymentTargets(), a.DeploymentTargetClasses(), f.gitops, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	reclaim, err := deploymenttargetreclaim.New(a.DeploymentTargets(), a.DeploymentTargetClaims(), a.DeploymentTargetClasses(), f.gitops, record.NewFakeRecorder(100))
	if err != nil {
		t.Fatal(err)
	}
	// The informers started before these handlers: they get the objects as adds now.
	controllertest.StartInformers(t, f.ctx, f.gf)
	go binder.Run(f.ctx, 1)
	go reclaim.Run(f.ctx, 1)
	go f.c.Run(f.ctx, 1)
	f.c.Add(f.key())

	controllertest.Eventually(t, f.ctx, "the claim bound to the provisioned target", func() bool {
		c, d := f.claim(), f.target()
		return c.Status.Phase == appstudiov1alpha1.DeploymentTargetClaimPhaseBound && c.Spec.TargetName == unitTarget &&
			d != nil && d.Status.Phase == appstudiov1alpha1.DeploymentTargetPhaseBound && d.Spec.ClaimRef == "preview"
	})
	// The binder may bind the target before the provisioner has reported the claim provisioned.
	controllertest.Eventually(t, f.ctx, "the claim reported provisioned", func() bool {
		cond := meta.FindStatusCondition(f.claim().Status.Conditions, ConditionProvisioned)
		return cond != nil && cond.Status == metav1.ConditionTrue
	})
	c := f.claim()
	if cond := meta.FindStatusCondition(c.Status.Conditions, appstudiov1alpha1.DeploymentTargetConditionErrorOccurred); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("ErrorOccurred %+v", cond)
	}
	if f.namespace() == nil || f.secret() == nil {
		t.Error("no namespace or Secret")
	}

	// Quiet: no controller keeps rewriting what another wrote.
	var last int
	controllertest.Eventually(t, f.ctx, "quiet", func() bool {
		n := len(f.gitops.Actions()) + len(f.kube.Actions())
		time.Sleep(100 * time.Millisecond)
		quiet := n == last && n == len(f.gitops.Actions())+len(f.kube.Actions())
		last = n
		return quiet
	})
	if n := f.tokens.Load(); n != 1 {
		t.Errorf("%d tokens", n)
	}
}
