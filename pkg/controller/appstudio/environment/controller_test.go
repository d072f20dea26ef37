package environment

import (
	"context"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// fixture is the controller over fake clientsets, with its informers running; tests call sync
// directly, once the caches show what they wrote.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	gitops *fake.Clientset
	kube   *kubefake.Clientset
	events *record.FakeRecorder
	c      *Controller
}

func newFixture(t *testing.T, gitopsObjs, kubeObjs []runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := &fixture{t: t, ctx: ctx, gitops: fake.NewSimpleClientset(gitopsObjs...), kube: kubefake.NewClientset(kubeObjs...),
		events: record.NewFakeRecorder(100)}
	gitopsInformers := externalversions.NewSharedInformerFactory(f.gitops, 0)
	// The agent's informer selects the managed-environment type; the fake ignores field
	// selectors, so this one holds every Secret (TestSourceSecretsWatchWhileUsed covers the
	// watches of the others).
	kubeInformers := informers.NewSharedInformerFactory(f.kube, 0)
	appstudio := gitopsInformers.AppStudio().V1alpha1()
	var err error
	f.c, err = New(appstudio.Environments(), appstudio.DeploymentTargetClaims(), appstudio.DeploymentTargets(),
		gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentManagedEnvironments(), framework.SecretInformer(kubeInformers.Core().V1().Secrets()),
		f.gitops, f.kube, f.events)
	if err != nil {
		t.Fatal(err)
	}
	f.c.now = func() time.Time { return now.Time }
	f.c.sources.start(ctx)
	controllertest.StartInformers(t, ctx, gitopsInformers, kubeInformers)
	return f
}

// eventually waits for cond, which reads the caches.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	controllertest.Eventually(f.t, f.ctx, what, cond)
}

func (f *fixture) sync() {
	f.t.Helper()
	if err := f.c.sync(f.ctx, ns+"/staging"); err != nil {
		f.t.Fatalf("sync: %v", err)
	}
}

func (f *fixture) managedEnvironment() *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
	f.t.Helper()
	me, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Get(f.ctx, "managed-environment-staging", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return me
}

// cachedManagedEnvironment waits for the cache to show the ManagedEnvironment as the server has it.
func (f *fixture) awaitManagedEnvironmentCache() {
	f.t.Helper()
	want := f.managedEnvironment()
	f.eventually("the ManagedEnvironment in the cache", func() bool {
		got, err := f.c.managedEnvironments.GitOpsDeploymentManagedEnvironments(ns).Get("managed-environment-staging")
		if want == nil {
			return apierrors.IsNotFound(err)
		}
		// The fake clientset sets no resourceVersion: compare what a write changes.
		return err == nil && apiequality.Semantic.DeepEqual(got.Spec, want.Spec) && apiequality.Semantic.DeepEqual(got.Status, want.Status)
	})
}

func (f *fixture) environment() *appstudiov1alpha1.Environment {
	f.t.Helper()
	env, err := f.gitops.AppStudioV1alpha1().Environments(ns).Get(f.ctx, "staging", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return env
}

// awaitEnvironmentCache waits for the cache to show the Environment as the server has it.
func (f *fixture) awaitEnvironmentCache() {
	f.t.Helper()
	want := f.environment()
	f.eventually("the Environment in the cache", func() bool {
		got, err := f.c.environments.Environments(ns).Get("staging")
		// The fake clientset sets no resourceVersion: compare what a write changes.
		return err == nil && apiequality.Semantic.DeepEqual(got.Spec, want.Spec) && apiequality.Semantic.DeepEqual(got.Status, want.Status)
	})
}

// expectEvents checks the Events recorded since the last call.
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	controllertest.ExpectEvents(f.t, f.events, want...)
}

func TestCredentialsLifecycle(t *testing.T) {
	env := environmentWith(withCredentials)
	f := newFixture(t, []runtime.Object{env}, nil)

	step := t.Log
	step("the Secret is missing: SecretNotFound, and no ManagedEnvironment")
	f.sync()
	if me := f.managedEnvironment(); me != nil {
		t.Fatalf("ManagedEnvironment %v made without its Secret", me.Spec)
	}
	got := f.environment().Status.Conditions
	if c := meta.FindStatusCondition(got, "Reconciled"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "SecretNotFound" || c.Message != secretNotFoundMsg {
		t.Fatalf("Reconciled condition %+v", c)
	}
	if c := meta.FindStatusCondition(got, "ErrorOccurred"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "ErrorOccurred" || c.Message != secretNotFoundMsg {
		t.Fatalf("ErrorOccurred condition %+v", c)
	}
	f.expectEvents("Warning SecretNotFound " + secretNotFoundMsg)

	step("the same again: nothing written, no second event")
	f.awaitEnvironmentCache()
	f.sync()
	f.expectEvents()

	step("the Secret appears: the ManagedEnvironment is made, the problem is resolved")
	if _, err := f.kube.CoreV1().Secrets(ns).Create(f.ctx, secret("creds", managedv1alpha1.ManagedEnvironmentSecretType, "k"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the Secret in the cache", func() bool { _, err := f.c.secrets.Secrets(ns).Get("creds"); return err == nil })
	f.sync()
	me := f.managedEnvironment()
	if me == nil {
		t.Fatal("no ManagedEnvironment")
	}
	if me.Spec.APIURL != credentialsSpec.APIURL || me.Spec.ClusterCredentialsSecret != "creds" || !me.Spec.AllowInsecureSkipTLSVerify ||
		strings.Join(me.Spec.Namespaces, ",") != "a,b" || !me.Spec.ClusterResources {
		t.Errorf("spec %+v", me.Spec)
	}
	if len(me.OwnerReferences) != 1 || me.OwnerReferences[0] != ownerOf(env) {
		t.Errorf("owners %+v, want %+v", me.OwnerReferences, ownerOf(env))
	}
	conds := f.environment().Status.Conditions
	if c := meta.FindStatusCondition(conds, "Reconciled"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "SecretNotFoundResolved" || c.Message != "" {
		t.Errorf("Reconciled condition %+v", c)
	}
	if c := meta.FindStatusCondition(conds, "ErrorOccurred"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ErrorOccurredResolved" {
		t.Errorf("ErrorOccurred condition %+v", c)
	}
	f.expectEvents("Normal ManagedEnvironmentCreated Created GitOpsDeploymentManagedEnvironment managed-environment-staging")

	step("a changed field updates the ManagedEnvironment")
	upd := f.environment()
	upd.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.AllowInsecureSkipTLSVerify = false
	upd.Generation++
	if _, err := f.gitops.AppStudioV1alpha1().Environments(ns).Update(f.ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.awaitEnvironmentCache()
	f.awaitManagedEnvironmentCache()
	f.sync()
	if me := f.managedEnvironment(); me.Spec.AllowInsecureSkipTLSVerify {
		t.Error("allowInsecureSkipTLSVerify not updated")
	}
	f.expectEvents("Normal ManagedEnvironmentUpdated Updated GitOpsDeploymentManagedEnvironment managed-environment-staging")

	step("the Environment is deleted: its ManagedEnvironment goes")
	f.awaitManagedEnvironmentCache()
	if err := f.gitops.AppStudioV1alpha1().Environments(ns).Delete(f.ctx, "staging", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the Environment gone from the cache", func() bool {
		_, err := f.c.environments.Environments(ns).Get("staging")
		return apierrors.IsNotFound(err)
	})
	f.sync()
	if me := f.managedEnvironment(); me != nil {
		t.Error("the ManagedEnvironment outlived its Environment")
	}
	f.expectEvents()
}

func TestOpaqueTargetSecretIsCopied(t *testing.T) {
	env := environmentWith(withClaim)
	source := secret("space-secret", corev1.SecretTypeOpaque, "one")
	f := newFixture(t, []runtime.Object{env, claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, ""), target("dt", "claim", "space")},
		[]runtime.Object{source})

	f.sync()
	copied, err := f.kube.CoreV1().Secrets(ns).Get(f.ctx, "managed-environment-secret-staging", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no copy: %v", err)
	}
	if copied.Type != managedv1alpha1.ManagedEnvironmentSecretType || string(copied.Data["kubeconfig"]) != "one" ||
		copied.Labels["appstudio.openshift.io/environment-secret"] != "staging" {
		t.Errorf("copy %+v", copied)
	}
	if r := copied.OwnerReferences; len(r) != 1 || r[0].APIVersion != "appstudio.redhat.com/v1alpha1" || r[0].UID != env.UID || r[0].Controller == nil || !*r[0].Controller {
		t.Errorf("copy's owners %+v", r)
	}
	me := f.managedEnvironment()
	if me == nil || me.Spec.ClusterCredentialsSecret != "managed-environment-secret-staging" || strings.Join(me.Spec.Namespaces, ",") != "space" {
		t.Fatalf("ManagedEnvironment %+v", me)
	}
	f.expectEvents(
		"Normal SecretCopied Copied Secret space-secret into Secret managed-environment-secret-staging of type managed-gitops.redhat.com/managed-environment",
		"Normal ManagedEnvironmentCreated Created GitOpsDeploymentManagedEnvironment managed-environment-staging")

	// A change of the source reaches the Environment's queue, and the copy follows.
	f.awaitManagedEnvironmentCache()
	for f.c.Queue.Len() > 0 {
		k, _ := f.c.Queue.Get()
		f.c.Queue.Done(k)
		f.c.Queue.Forget(k)
	}
	source.Data["kubeconfig"] = []byte("two")
	if _, err := f.kube.CoreV1().Secrets(ns).Update(f.ctx, source, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.eventually("the Environment queued", func() bool { return f.c.Queue.Len() > 0 })
	f.eventually("the copy and the new source in the cache", func() bool {
		s, err := f.c.secrets.Secrets(ns).Get("space-secret")
		_, cerr := f.c.secrets.Secrets(ns).Get("managed-environment-secret-staging")
		return err == nil && string(s.Data["kubeconfig"]) == "two" && cerr == nil
	})
	f.sync()
	copied, err = f.kube.CoreV1().Secrets(ns).Get(f.ctx, "managed-environment-secret-staging", metav1.GetOptions{})
	if err != nil || string(copied.Data["kubeconfig"]) != "two" {
		t.Errorf("copy %v, %v; want the new data", copied, err)
	}
	f.expectEvents("Normal SecretCopyUpdated Updated Secret managed-environment-secret-staging from Secret space-secret")
}

func TestManagedEnvironmentEventsQueueTheirEnvironment(t *testing.T) {
	f := newFixture(t, nil, nil)
	other := managedEnvironment(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}, credentialsSpec)
	other.Name = "not-an-environments"
	mine := managedEnvironment(ownerOf(environmentWith(nil)), credentialsSpec)
	for _, me := range []*managedv1alpha1.GitOpsDeploymentManagedEnvironment{
		other, mine,
	} {
		me.ResourceVersion = ""
		if _, err := f.gitops.ManagedGitopsV1alpha1().GitOpsDeploymentManagedEnvironments(ns).Create(f.ctx, me, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// One handler is given its informer's events in order: once the second add queued its
	// key, the first add has been handled.
	f.eventually("a key queued", func() bool { return f.c.Queue.Len() > 0 })
	if n := f.c.Queue.Len(); n != 1 {
		t.Fatalf("%d keys queued, want the Environment's only", n)
	}
	if k, _ := f.c.Queue.Get(); k != ns+"/staging" {
		t.Errorf("queued %q", k)
	}
}

func TestSourceSecretsWatchWhileUsed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubefake.NewClientset(secret("s", corev1.SecretTypeOpaque, "x"))
	changed := make(chan string, 10)
	w := newSourceSecrets(kube, func(key string) { changed <- key })
	w.start(ctx)

	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		s, synced := w.use("tenant/a", ns, "s")
		return synced && s != nil, nil
	}); err != nil {
		t.Fatal("the watch never listed the Secret")
	}
	w.use("tenant/b", ns, "s")
	if len(w.watches) != 1 {
		t.Fatalf("%d watches for one Secret", len(w.watches))
	}
	w.release("tenant/a")
	time.Sleep(100 * time.Millisecond) // the add, told to whoever used the Secret then
	for len(changed) > 0 {
		<-changed
	}
	if _, err := kube.CoreV1().Secrets(ns).Update(ctx, secret("s", corev1.SecretTypeOpaque, "y"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case key := <-changed:
		if key != "tenant/b" {
			t.Errorf("change told to %q, want tenant/b, the user left", key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the change was not told")
	}
	time.Sleep(50 * time.Millisecond)
	if len(changed) > 0 {
		t.Errorf("change told to %q as well", <-changed)
	}
	w.release("tenant/b")
	if len(w.watches) != 0 || len(w.used) != 0 {
		t.Errorf("watches %v and users %v left once no Environment uses the Secret", w.watches, w.used)
	}
}

func TestEventsQueueTheEnvironmentsThatUseThem(t *testing.T) {
	claimed := environmentWith(withClaim)
	direct := environmentWith(func(e *appstudiov1alpha1.Environment) { e.Name = "direct"; withCredentials(e) })
	unrelated := environmentWith(func(e *appstudiov1alpha1.Environment) { e.Name = "unrelated" })
	f := newFixture(t, []runtime.Object{claimed, direct, unrelated,
		claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"), target("dt", "", "space")}, nil)
	// The handlers are called directly below: once the adds of the start are drained, what
	// the queue holds is what each call queued.
	drain := func() []string { return controllertest.Drain(t, f.ctx, f.c.Controller) }
	drain()
	for _, tc := range []struct {
		name  string
		event func(*Controller)
		want  string
	}{
		{"the claim", func(c *Controller) { c.onClaim(claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt")) }, ns + "/staging"},
		{"the target the claim names", func(c *Controller) { c.onTarget(target("dt", "", "space")) }, ns + "/staging"},
		{"a target that claims the claim", func(c *Controller) { c.onTarget(target("other", "claim", "")) }, ns + "/staging"},
		{"the target's Secret", func(c *Controller) { c.onSecret(secret("space-secret", corev1.SecretTypeOpaque, "")) }, ns + "/staging"},
		{"the Secret the Environment names", func(c *Controller) { c.onSecret(secret("creds", corev1.SecretTypeOpaque, "")) }, ns + "/direct"},
		{"a copy", func(c *Controller) { c.onSecret(copyOf(claimed, "k")) }, ns + "/staging"},
		{"a Secret nobody uses", func(c *Controller) { c.onSecret(secret("other", corev1.SecretTypeOpaque, "")) }, ""},
		{"a deleted target, as a tombstone", func(c *Controller) {
			c.onTarget(cache.DeletedFinalStateUnknown{Key: ns + "/dt", Obj: target("dt", "", "space")})
		}, ns + "/staging"},
	} {
		tc.event(f.c)
		if got := strings.Join(drain(), ","); got != tc.want {
			t.Errorf("%s queued %q, want %q", tc.name, got, tc.want)
		}
	}
}
