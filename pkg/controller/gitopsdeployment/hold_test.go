package gitopsdeployment

import (
	"context"
	"slices"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/deployer"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

const heldSHA = "0123456789abcdef0123456789abcdef01234567"

var heldSince = metav1.NewTime(time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC))

func holdOf(mutate func(*managedv1alpha1.GitOpsDeploymentHold)) *managedv1alpha1.GitOpsDeploymentHold {
	h := &managedv1alpha1.GitOpsDeploymentHold{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web", Generation: 2, CreationTimestamp: heldSince},
		Spec: managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: heldSHA, DeploymentRecord: "web-1796597202",
			Reason: "v2 breaks checkout", HeldBy: "alice"},
	}
	if mutate != nil {
		mutate(h)
	}
	return h
}

// The Application deploys the hold's revision while there is one, whatever the deployment's
// spec says, a binding's deployment (rewritten by promotions) included.
func TestTargetRevision(t *testing.T) {
	promoted := deployment(func(d *managedv1alpha1.GitOpsDeployment) {
		d.Labels = map[string]string{"appstudio.openshift.io/binding": "shop-prod"}
		d.Spec.Source.TargetRevision = "release-43"
	})
	for _, tc := range []struct {
		name string
		depl *managedv1alpha1.GitOpsDeployment
		hold *managedv1alpha1.GitOpsDeploymentHold
		want string
	}{
		{"no hold: the spec's branch", deployment(nil), nil, "main"},
		{"no hold, no revision: Argo CD's HEAD", deployment(func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.TargetRevision = "" }), nil, ""},
		{"held at a commit", deployment(nil), holdOf(nil), heldSHA},
		{"held at a tag", deployment(nil), holdOf(func(h *managedv1alpha1.GitOpsDeploymentHold) { h.Spec.Revision = "v1.2.0" }), "v1.2.0"},
		{"promoted since the hold", promoted, holdOf(nil), heldSHA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := targetRevision(tc.depl, tc.hold); got != tc.want {
				t.Errorf("targetRevision = %q, want %q", got, tc.want)
			}
			app, err := desiredApplication(tc.depl, tc.hold, "argocd", localJane)
			if err != nil {
				t.Fatal(err)
			}
			if got := app.Spec.Source.TargetRevision; got != tc.want {
				t.Errorf("Application targetRevision = %q, want %q", got, tc.want)
			}
		})
	}
}

// A hold changes the Application (re-applied), and its release changes it back.
func TestHoldAndReleaseReapply(t *testing.T) {
	d := deployment(nil)
	free, _ := desiredApplication(d, nil, "argocd", localJane)
	held, _ := desiredApplication(d, holdOf(nil), "argocd", localJane)
	asApp := func(a *applicationApply) *argov1alpha1.Application {
		return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Labels: a.Metadata.Labels, Annotations: a.Metadata.Annotations},
			Spec: *a.Spec.DeepCopy()}
	}
	if held.upToDate(asApp(free)) || free.upToDate(asApp(held)) {
		t.Error("an Application at the other revision is taken as up to date")
	}
	if !held.upToDate(asApp(held)) {
		t.Error("a held Application is re-applied on every sync")
	}
}

func TestHeldCondition(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	msg := "Held at revision " + heldSHA + " (DeploymentRecord web-1796597202) by \"alice\" since 2026-12-07T01:02:03Z: v2 breaks checkout; " +
		"delete GitOpsDeploymentHold web to release it"
	held := managedv1alpha1.GitOpsDeploymentCondition{Type: managedv1alpha1.GitOpsDeploymentConditionHeld, Status: managedv1alpha1.GitOpsConditionStatusTrue,
		Reason: managedv1alpha1.GitOpsDeploymentReasonRolledBack, Message: msg, LastProbeTime: earlier, LastTransitionTime: &earlier}
	errResolved := managedv1alpha1.GitOpsDeploymentCondition{Type: managedv1alpha1.GitOpsDeploymentConditionErrorOccurred,
		Status: managedv1alpha1.GitOpsConditionStatusFalse, Reason: managedv1alpha1.GitOpsDeploymentReasonErrorOccurredResolved}
	heldNow := held
	heldNow.LastProbeTime, heldNow.LastTransitionTime = now, &now
	for _, tc := range []struct {
		name  string
		conds []managedv1alpha1.GitOpsDeploymentCondition
		hold  *managedv1alpha1.GitOpsDeploymentHold
		want  []managedv1alpha1.GitOpsDeploymentCondition
	}{
		{"never held", nil, nil, nil},
		{"never held, other conditions kept", []managedv1alpha1.GitOpsDeploymentCondition{errResolved}, nil,
			[]managedv1alpha1.GitOpsDeploymentCondition{errResolved}},
		{"held: the condition says what, who, when and why", []managedv1alpha1.GitOpsDeploymentCondition{errResolved}, holdOf(nil),
			[]managedv1alpha1.GitOpsDeploymentCondition{errResolved, heldNow}},
		// No churn: an unchanged hold keeps the condition as it was, timestamps included.
		{"still held", []managedv1alpha1.GitOpsDeploymentCondition{held}, holdOf(nil), []managedv1alpha1.GitOpsDeploymentCondition{held}},
		{"held elsewhere", []managedv1alpha1.GitOpsDeploymentCondition{held},
			holdOf(func(h *managedv1alpha1.GitOpsDeploymentHold) {
				h.Spec.Revision = "v1.2.0"
				h.Spec.DeploymentRecord, h.Spec.Reason = "", ""
			}),
			[]managedv1alpha1.GitOpsDeploymentCondition{{Type: managedv1alpha1.GitOpsDeploymentConditionHeld,
				Status: managedv1alpha1.GitOpsConditionStatusTrue, Reason: managedv1alpha1.GitOpsDeploymentReasonRolledBack,
				Message:       "Held at revision v1.2.0 by \"alice\" since 2026-12-07T01:02:03Z; delete GitOpsDeploymentHold web to release it",
				LastProbeTime: now, LastTransitionTime: &now}}},
		{"released: the condition goes", []managedv1alpha1.GitOpsDeploymentCondition{errResolved, held}, nil,
			[]managedv1alpha1.GitOpsDeploymentCondition{errResolved}},
		{"released, nothing else", []managedv1alpha1.GitOpsDeploymentCondition{held}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]managedv1alpha1.GitOpsDeploymentCondition, len(tc.conds))
			copy(in, tc.conds)
			if tc.conds == nil {
				in = nil
			}
			got := heldCondition(in, tc.hold, now)
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestHeldMessageWithoutUserOrTime(t *testing.T) {
	h := holdOf(func(h *managedv1alpha1.GitOpsDeploymentHold) { h.Spec.HeldBy, h.CreationTimestamp = "", metav1.Time{} })
	want := "Held at revision " + heldSHA + " (DeploymentRecord web-1796597202) by an unknown user: v2 breaks checkout; delete GitOpsDeploymentHold web to release it"
	if got := heldMessage(h); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestHoldStatus(t *testing.T) {
	at := func(rev string) *argov1alpha1.Application {
		return &argov1alpha1.Application{Spec: argov1alpha1.ApplicationSpec{Source: &argov1alpha1.ApplicationSource{TargetRevision: rev}}}
	}
	for _, tc := range []struct {
		name string
		depl *managedv1alpha1.GitOpsDeployment
		app  *argov1alpha1.Application
		want managedv1alpha1.GitOpsDeploymentHoldStatus
	}{
		{"no deployment", nil, nil, managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2,
			Message: "No GitOpsDeployment web in the namespace"}},
		{"no Application yet", deployment(nil), nil, managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2,
			Message: "The GitOpsDeployment's Argo CD Application is not there yet"}},
		{"Application at the branch", deployment(nil), at("main"), managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2,
			Message: "The GitOpsDeployment's Argo CD Application is not at " + heldSHA + " yet"}},
		{"holding", deployment(nil), at(heldSHA), managedv1alpha1.GitOpsDeploymentHoldStatus{ObservedGeneration: 2, Holding: true,
			Message: "Holding at " + heldSHA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := holdStatus(holdOf(nil), tc.depl, tc.app); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// Holding and releasing each cost one write of the deployment's status and of the hold's; the
// same world seen again costs none (no churn).
func TestHoldStatusWritesOnlyOnChange(t *testing.T) {
	ctx := context.Background()
	d := deployment(nil)
	h := holdOf(nil)
	gitops := gitopsfake.NewSimpleClientset(d.DeepCopy(), h.DeepCopy())
	clock := t1.Time
	c := &Controller{gitops: gitops, now: func() time.Time { return clock }}
	fakeRecorder(c)
	app := syncedApp()
	app.Spec.Source = &argov1alpha1.ApplicationSource{RepoURL: "https://example.com/org/repo", Path: "env/dev", TargetRevision: heldSHA}
	statusWrites := func() []string {
		var out []string
		for _, a := range gitops.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				out = append(out, a.GetResource().Resource)
			}
		}
		gitops.ClearActions()
		return out
	}
	get := func() (*managedv1alpha1.GitOpsDeployment, *managedv1alpha1.GitOpsDeploymentHold) {
		gd, err := gitops.ManagedGitopsV1alpha1().GitOpsDeployments("jane").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gh, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentHolds("jane").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return gd, gh
	}
	sync := func(d *managedv1alpha1.GitOpsDeployment, h *managedv1alpha1.GitOpsDeploymentHold) {
		t.Helper()
		if err := c.updateStatus(ctx, d, h, app, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.updateHoldStatus(ctx, h, d, app, nil); err != nil {
			t.Fatal(err)
		}
	}

	sync(d, h)
	if got := statusWrites(); !slices.Equal(got, []string{"gitopsdeployments", "gitopsdeploymentholds"}) {
		t.Fatalf("status writes %v, want the deployment's and the hold's", got)
	}
	d, h = get()
	if c := findCondition(d.Status.Conditions, managedv1alpha1.GitOpsDeploymentConditionHeld); c == nil || c.Reason != managedv1alpha1.GitOpsDeploymentReasonRolledBack {
		t.Fatalf("conditions %+v, want Held", d.Status.Conditions)
	}
	if !h.Status.Holding || h.Status.ObservedGeneration != 2 {
		t.Fatalf("hold status %+v", h.Status)
	}

	clock = clock.Add(time.Minute)
	sync(d, h)
	if got := statusWrites(); len(got) != 0 {
		t.Fatalf("status writes %v for an unchanged world", got)
	}

	// Released: the hold is gone from the cache, the condition goes.
	app.Spec.Source.TargetRevision = "main"
	sync(d, nil)
	if got := statusWrites(); !slices.Equal(got, []string{"gitopsdeployments"}) {
		t.Fatalf("status writes %v, want the deployment's alone", got)
	}
	d, _ = get()
	if c := findCondition(d.Status.Conditions, managedv1alpha1.GitOpsDeploymentConditionHeld); c != nil {
		t.Fatalf("conditions %+v after the release", d.Status.Conditions)
	}
	sync(d, nil)
	if got := statusWrites(); len(got) != 0 {
		t.Fatalf("status writes %v after the release was written", got)
	}
}

// An agent started again after a crash must not reconcile a held deployment before it knows
// its hold: the Application would be put back at the branch, and Argo CD would deploy its
// newest commit until the hold was seen. The controller's workers wait for every handler added
// through Watch (framework.Controller.Run); the hold informer's is one of them, and the lister
// the reconcile reads the hold from is that informer's cache, filled by then.
func TestHoldsKnownBeforeTheFirstReconcile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gitops := gitopsfake.NewSimpleClientset(deployment(nil), holdOf(nil))
	// The holds' informer lists late, as on a restart under load: it has a factory of its own,
	// started after everything else has listed.
	holdInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	holds := holdInformers.ManagedGitops().V1alpha1().GitOpsDeploymentHolds()
	argo := argofake.NewSimpleClientset()
	kube := kubefake.NewClientset()
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactoryWithOptions(argo, 0, argoinformers.WithNamespace("argocd"))
	argoKube := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace("argocd"))
	deployerInformers := deployer.NewInformerFactory(kube)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	argoSecrets := argoKube.Core().V1().Secrets()
	deployers := deployer.New(deployerInformers.Core().V1().ServiceAccounts(), deployerInformers.Rbac().V1().RoleBindings(),
		argoSecrets, kube, kube, "argocd", argocd.InClusterServer, deployer.DefaultControllerServiceAccount)
	c, err := New(managed.GitOpsDeployments(), holds, managed.GitOpsDeploymentManagedEnvironments(),
		argoInformers.Argoproj().V1alpha1().Applications(), argoInformers.Argoproj().V1alpha1().AppProjects(), argoSecrets, deployers,
		"argocd", argocd.InClusterServer, gitops, argo, kube, operations.NewRecorder(gitops, "argocd"), record.NewFakeRecorder(10))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []controllertest.InformerFactory{gitopsInformers, argoInformers, argoKube, deployerInformers} {
		f.Start(ctx.Done())
	}
	// Everything else listed, the deployment queued by its add: still no worker may start.
	controllertest.Eventually(t, ctx, "the deployments listed", managed.GitOpsDeployments().Informer().HasSynced)
	controllertest.Eventually(t, ctx, "the deployment queued", func() bool { return c.Queue.Len() == 1 })
	if c.HandlersSynced() {
		t.Fatal("the workers may start while the holds are not listed yet")
	}
	holdInformers.Start(ctx.Done())
	controllertest.Eventually(t, ctx, "the handlers synced once the holds are listed", c.HandlersSynced)
	h, err := c.hold("jane", "web")
	if err != nil || h == nil || h.Spec.Revision != heldSHA {
		t.Fatalf("the first reconcile would see hold %+v (err %v), want the one at %s", h, err, heldSHA)
	}
}
