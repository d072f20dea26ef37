package tenantsecrets

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
)

func TestPlanFor(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		served, running, forbidden bool
		want                       plan
	}{
		{name: "newly served: bound before it is watched", served: true, want: plan{bind: true, start: true}},
		{name: "served and watched", served: true, running: true},
		{name: "served, watched, refused: bound again", served: true, running: true, forbidden: true, want: plan{unbind: true, bind: true}},
		{name: "no longer served: unwatched, then unbound", running: true, want: plan{stop: true, unbind: true}},
		{name: "no longer served, refused", running: true, forbidden: true, want: plan{stop: true, unbind: true}},
		{name: "neither", want: plan{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planFor(tc.served, tc.running, tc.forbidden); got != tc.want {
				t.Errorf("planFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

const (
	envType  = "managed-gitops.redhat.com/managed-environment"
	credType = "managed-gitops.redhat.com/repository-credential"
	self     = "system:serviceaccount:gitops-service:gitops-agent-main"
)

// fixture is a Set over a fake clientset (with react's reactors) that serves the namespaces
// holding a ConfigMap (in the agent, the kinds that name Secrets), as the user named.
type fixture struct {
	kube   *kubefake.Clientset
	set    *Set
	envs   *Secrets
	events *recorder
}

func newFixture(t *testing.T, ctx context.Context, user string, react func(*kubefake.Clientset), objs ...runtime.Object) *fixture {
	t.Helper()
	kube := kubefake.NewClientset(objs...)
	controllertest.SelectSecretsByType(kube)
	// The authorizer honours a binding at once, unless react says otherwise.
	kube.PrependReactor("create", "selfsubjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true}}, nil
	})
	if react != nil {
		react(kube)
	}
	kube.PrependReactor("create", "selfsubjectreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, &authenticationv1.SelfSubjectReview{Status: authenticationv1.SelfSubjectReviewStatus{
			UserInfo: authenticationv1.UserInfo{Username: user}}}, nil
	})
	factory := informers.NewSharedInformerFactory(kube, 0)
	f := &fixture{kube: kube, set: New(kube), events: &recorder{}}
	f.envs = f.set.Of(envType)
	f.set.Of(credType)
	if err := f.set.ServeWhereAny(factory.Core().V1().ConfigMaps().Informer()); err != nil {
		t.Fatal(err)
	}
	// A handler added before any namespace is watched.
	if _, err := f.envs.AddEventHandler(f.events.handler("before")); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	go f.set.Run(ctx)
	controllertest.Eventually(t, ctx, "the Secrets synced", f.envs.HasSynced)
	return f
}

func configMap(namespace string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "uses-secrets", Namespace: namespace}}
}

func secret(namespace, name, typ string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Type: corev1.SecretType(typ)}
}

// recorder records the Secrets' adds each handler was given.
type recorder struct {
	mu   sync.Mutex
	adds []string
}

func (r *recorder) handler(name string) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		s := obj.(*corev1.Secret)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.adds = append(r.adds, name+" "+s.Namespace+"/"+s.Name)
	}}
}

func (r *recorder) got(add string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.adds, add)
}

func (f *fixture) binding(t *testing.T, ctx context.Context, namespace string) *rbacv1.RoleBinding {
	t.Helper()
	rb, err := f.kube.RbacV1().RoleBindings(namespace).Get(ctx, BindingName("gitops-agent-main"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rb
}

func (f *fixture) has(namespace, name string) bool {
	_, err := f.envs.Lister().Secrets(namespace).Get(name)
	return err == nil
}

func TestWatchesTheNamespacesServedOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, ctx, self, nil, configMap("a"),
		secret("a", "env", envType), secret("a", "cred", credType), secret("a", "other", "Opaque"),
		secret("b", "env", envType), secret("c", "env", envType))

	// A namespace served at start: bound to the process's own ServiceAccount, then watched.
	rb := f.binding(t, ctx, "a")
	if rb == nil {
		t.Fatal("no binding in a")
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "gitops-agent-main", Namespace: "gitops-service"}
	if rb.RoleRef.Name != ReaderRole || rb.RoleRef.Kind != "ClusterRole" || len(rb.Subjects) != 1 || rb.Subjects[0] != want {
		t.Errorf("binding %+v %+v, want ClusterRole %s to %+v", rb.RoleRef, rb.Subjects, ReaderRole, want)
	}
	if !f.has("a", "env") || f.has("a", "cred") || f.has("a", "other") {
		t.Error("the lister of a's managed-environment Secrets does not hold exactly a/env")
	}
	if !f.events.got("before a/env") {
		t.Error("the handler added before a was watched got no add of a/env")
	}
	if f.has("b", "env") || f.binding(t, ctx, "b") != nil || f.has("c", "env") {
		t.Error("b or c, not served, is watched or bound")
	}

	// A handler added after a namespace is watched gets its Secrets, and those of namespaces
	// watched later.
	if _, err := f.envs.AddEventHandler(f.events.handler("after")); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the later handler given a/env", func() bool { return f.events.got("after a/env") })
	if _, err := f.kube.CoreV1().ConfigMaps("b").Create(ctx, configMap("b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "b watched", func() bool { return f.has("b", "env") })
	controllertest.Eventually(t, ctx, "both handlers given b/env", func() bool { return f.events.got("before b/env") && f.events.got("after b/env") })
	if f.binding(t, ctx, "b") == nil {
		t.Error("b watched without a binding")
	}
	all, err := f.envs.Lister().List(labels.Everything())
	if err != nil || len(all) != 2 {
		t.Errorf("List across namespaces: %d Secrets (%v), want a/env and b/env", len(all), err)
	}

	// A namespace no longer served: unwatched, then unbound.
	if err := f.kube.CoreV1().ConfigMaps("a").Delete(ctx, "uses-secrets", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "a unwatched and unbound", func() bool { return !f.has("a", "env") && f.binding(t, ctx, "a") == nil })
	if !f.has("b", "env") {
		t.Error("b unwatched with a")
	}
	for _, a := range f.kube.Actions() {
		if a.GetVerb() == "list" && a.GetResource().Resource == "secrets" {
			if sel := a.(clienttesting.ListAction).GetListRestrictions().Fields.String(); sel != "type="+envType && sel != "type="+credType {
				t.Errorf("Secrets listed in %s with field selector %q, want one type", a.GetNamespace(), sel)
			}
			if a.GetNamespace() == "" {
				t.Error("Secrets listed cluster-wide")
			}
		}
	}
}

func TestANamespaceItMayNotBindIsNotWatched(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, ctx, self, func(kube *kubefake.Clientset) {
		kube.PrependReactor("create", "rolebindings", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(rbacv1.Resource("rolebindings"), "", nil)
		})
	}, configMap("a"), secret("a", "env", envType))
	// Synced all the same (newFixture waited): a refusal does not hold the process's start back.
	if f.has("a", "env") {
		t.Error("a watched though its binding was refused")
	}
}

// A binding just made reaches kube-apiserver's authorizer a moment later: the namespace's
// Secrets are listed only once the authorizer says this process may, so that no list is
// refused (and the binding made again) meanwhile.
func TestANewBindingIsWatchedOnceTheAuthorizerHonoursIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	reviews := 0
	f := newFixture(t, ctx, self, func(kube *kubefake.Clientset) {
		kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			if ra := review.Spec.ResourceAttributes; ra == nil || *ra != (authorizationv1.ResourceAttributes{Namespace: "a", Verb: "list", Resource: "secrets"}) {
				t.Errorf("asked %+v", review.Spec)
			}
			mu.Lock()
			defer mu.Unlock()
			reviews++
			return true, &authorizationv1.SelfSubjectAccessReview{Status: authorizationv1.SubjectAccessReviewStatus{Allowed: reviews >= 3}}, nil
		})
	}, configMap("a"), secret("a", "env", envType))
	controllertest.Eventually(t, ctx, "a watched", func() bool { return f.has("a", "env") })
	var order []string
	for _, a := range f.kube.Actions() {
		switch r := a.GetResource().Resource; {
		case r == "rolebindings" || r == "selfsubjectaccessreviews" || r == "secrets" && a.GetNamespace() == "a":
			order = append(order, a.GetVerb()+" "+r)
		}
	}
	want := []string{"create rolebindings", "create selfsubjectaccessreviews", "create selfsubjectaccessreviews", "create selfsubjectaccessreviews"}
	if len(order) < len(want)+1 || !slices.Equal(order[:len(want)], want) || order[len(want)] != "list secrets" {
		t.Errorf("requests %q, want %q then the lists and watches of a's Secrets", order, want)
	}
}

// The authorizer is asked for about 6.5 s at most: 50 ms, doubling up to a second.
func TestReadableSchedule(t *testing.T) {
	b := readableBackoff
	var got []time.Duration
	for range readableAsks {
		got = append(got, b.Step())
	}
	ms := time.Millisecond
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second, time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

func TestABindingRefusedUnderTheSetIsMadeAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	refuse := true
	f := newFixture(t, ctx, self, func(kube *kubefake.Clientset) {
		kube.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if refuse {
				return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", nil)
			}
			return false, nil, nil
		})
	}, configMap("a"), secret("a", "env", envType))
	// Synced (newFixture waited) though a's list is refused.
	mu.Lock()
	refuse = false
	mu.Unlock()
	f.kube.ClearActions()
	// The namespace's next event binds it again.
	other := configMap("a")
	other.Name = "another"
	if _, err := f.kube.CoreV1().ConfigMaps("a").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Bound again, and the authorizer asked before the informers may list again.
	controllertest.Eventually(t, ctx, "a bound again", func() bool {
		var verbs []string
		for _, a := range f.kube.Actions() {
			if r := a.GetResource().Resource; r == "rolebindings" || r == "selfsubjectaccessreviews" {
				verbs = append(verbs, a.GetVerb()+" "+r)
			}
		}
		return slices.Equal(verbs, []string{"delete rolebindings", "create rolebindings", "create selfsubjectaccessreviews"})
	})
	controllertest.Eventually(t, ctx, "a watched", func() bool { return f.has("a", "env") })
}

func TestAUserNotAServiceAccountBindsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFixture(t, ctx, "admin", nil, configMap("a"), secret("a", "env", envType))
	if !f.has("a", "env") {
		t.Error("a not watched")
	}
	for _, a := range f.kube.Actions() {
		if a.GetResource().Resource == "rolebindings" {
			t.Errorf("%s rolebindings as a user that is not a ServiceAccount", a.GetVerb())
		}
	}
}
