package managedenvironment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
)

// clusterInput is what a shared cluster Secret is made of.
type clusterInput struct {
	apiURL           string
	config           argov1alpha1.ClusterConfig
	namespaces       []string
	clusterResources bool
	identity         string
}

func baseClusterInput() clusterInput {
	return clusterInput{
		apiURL: testAPIURL,
		config: argov1alpha1.ClusterConfig{BearerToken: "token-of-the-deployer", TLSClientConfig: argov1alpha1.TLSClientConfig{
			CAData: []byte("CA"), ServerName: "api.internal",
		}},
		namespaces: []string{"web", "api"},
		identity:   "team:deployer",
	}
}

func (in clusterInput) secret(t *testing.T) clusterSecret {
	t.Helper()
	cs, err := sharedClusterSecret(in.apiURL, in.config, in.namespaces, in.clusterResources, in.identity)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestSharedClusterSecretKey(t *testing.T) {
	base := baseClusterInput().secret(t)
	if !strings.HasPrefix(base.Name, clusterSecretPrefix) || len(base.Name) != len(clusterSecretPrefix)+clusterKeyLength {
		t.Fatalf("name %q", base.Name)
	}
	key := strings.TrimPrefix(base.Name, clusterSecretPrefix)
	if base.Server != testAPIURL+"?managedCluster="+key || base.Labels[LabelManagedCluster] != key ||
		!strings.HasPrefix(base.Annotations[annotationClusterKey], key) || base.Annotations[argocd.AnnotationImpersonate] != "team:deployer" {
		t.Fatalf("secret %+v", base)
	}
	if fmt.Sprint(base.Namespaces) != "[api web]" {
		t.Errorf("namespaces %v, want them sorted", base.Namespaces)
	}
	if strings.Contains(fmt.Sprint(base.Labels, base.Name, base.Server), "token-of-the-deployer") {
		t.Error("the token shows in the Secret's name, server or labels")
	}

	for _, tc := range []struct {
		name   string
		change func(*clusterInput)
		same   bool
	}{
		{"identical", func(*clusterInput) {}, true},
		{"namespaces in another order", func(in *clusterInput) { in.namespaces = []string{"api", "web"} }, true},
		{"a namespace twice", func(in *clusterInput) { in.namespaces = []string{"api", "web", "api"} }, true},
		{"another token", func(in *clusterInput) { in.config.BearerToken = "token-of-someone-else" }, false},
		{"a client certificate instead", func(in *clusterInput) {
			in.config.BearerToken = ""
			in.config.TLSClientConfig.CertData, in.config.TLSClientConfig.KeyData = []byte("CERT"), []byte("KEY")
		}, false},
		{"another CA", func(in *clusterInput) { in.config.TLSClientConfig.CAData = []byte("OTHER-CA") }, false},
		{"insecure", func(in *clusterInput) { in.config.TLSClientConfig.Insecure = true }, false},
		{"another server name", func(in *clusterInput) { in.config.TLSClientConfig.ServerName = "other.internal" }, false},
		{"another API URL", func(in *clusterInput) { in.apiURL = "https://api.other.example:6443" }, false},
		{"another namespace", func(in *clusterInput) { in.namespaces = []string{"web", "db"} }, false},
		{"fewer namespaces", func(in *clusterInput) { in.namespaces = []string{"web"} }, false},
		{"the whole cluster", func(in *clusterInput) { in.namespaces = nil }, false},
		{"cluster resources", func(in *clusterInput) { in.clusterResources = true }, false},
		{"another identity", func(in *clusterInput) { in.identity = "team:other" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := baseClusterInput()
			in.config = *in.config.DeepCopy()
			tc.change(&in)
			got := in.secret(t)
			if same := got.Name == base.Name; same != tc.same {
				t.Errorf("name %s against %s: same = %v, want %v", got.Name, base.Name, same, tc.same)
			}
			if same := got.Annotations[annotationClusterKey] == base.Annotations[annotationClusterKey]; same != tc.same {
				t.Errorf("full key: same = %v, want %v", same, tc.same)
			}
		})
	}

	// Without namespaces, Argo CD manages the whole cluster and the Secret has no
	// clusterResources: both spellings are one Secret.
	whole := baseClusterInput()
	whole.namespaces = nil
	wholeCR := whole
	wholeCR.clusterResources = true
	if a, b := whole.secret(t), wholeCR.secret(t); a.Name != b.Name {
		t.Errorf("whole cluster with and without clusterResources: %s, %s", a.Name, b.Name)
	}
}

func TestClusterUsersAnnotation(t *testing.T) {
	a := clusterUser{"jane", "prod", "1"}
	b := clusterUser{"bob", "prod", "2"}
	a2 := clusterUser{"jane", "prod", "3"} // a later object of a's name
	if got := formatClusterUsers([]clusterUser{a, b, a}); got != `["bob/prod/2","jane/prod/1"]` {
		t.Fatalf("format = %s", got)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Labels:      map[string]string{LabelManagedCluster: "k"},
		Annotations: map[string]string{AnnotationClusterUsers: `["bob/prod/2","jane/prod/1","broken","a//b"]`},
	}}
	if got := parseClusterUsers(s); fmt.Sprint(got) != fmt.Sprint([]clusterUser{b, a}) {
		t.Fatalf("parse = %v", got)
	}
	if keys, _ := environmentRefsOfSecret(s); fmt.Sprint(keys) != "[bob/prod jane/prod]" {
		t.Errorf("index keys = %v", keys)
	}
	if keys, _ := environmentRefsOfSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: s.Annotations}}); keys != nil {
		t.Errorf("a Secret without the label is indexed: %v", keys)
	}
	if got := replaceUser([]clusterUser{a, b}, a2.key(), &a2); fmt.Sprint(got) != fmt.Sprint([]clusterUser{b, a2}) {
		t.Errorf("replace = %v", got)
	}
	if got := replaceUser([]clusterUser{a, b}, a.key(), nil); fmt.Sprint(got) != fmt.Sprint([]clusterUser{b}) {
		t.Errorf("remove = %v", got)
	}
	if got := changedUsers([]clusterUser{a, b}, []clusterUser{b, a2}); fmt.Sprint(got) != fmt.Sprint([]clusterUser{a, a2}) {
		t.Errorf("changed = %v", got)
	}
}

func TestJoinAndLeaveCluster(t *testing.T) {
	cs := baseClusterInput().secret(t)
	jane := clusterUser{"jane", "prod", "1"}
	bob := clusterUser{"bob", "prod", "2"}
	users := func(s *corev1.Secret) string { return fmt.Sprint(parseClusterUsers(s)) }

	created, action, err := joinCluster(nil, cs, "argocd", jane)
	if err != nil || action != secretCreate {
		t.Fatalf("join of none: %v, %v", action, err)
	}
	if created.Name != cs.Name || created.Namespace != "argocd" || created.Labels[argocd.LabelSecretType] != "cluster" ||
		string(created.Data[argocd.ClusterKeyServer]) != cs.Server || string(created.Data[argocd.ClusterKeyNamespaces]) != "api,web" ||
		string(created.Data[argocd.ClusterKeyClusterScoped]) != "false" || users(created) != fmt.Sprint([]clusterUser{jane}) {
		t.Fatalf("created %+v", created)
	}
	if !clusterUpToDate(created, cs, jane) || clusterUpToDate(created, cs, bob) {
		t.Error("clusterUpToDate does not see whom the Secret lists")
	}

	// Joining again changes nothing.
	if _, action, err := joinCluster(created, cs, "argocd", jane); err != nil || action != secretUnchanged {
		t.Errorf("second join: %v, %v", action, err)
	}
	// Another tenant with the same content joins the same Secret.
	both, action, err := joinCluster(created, cs, "argocd", bob)
	if err != nil || action != secretUpdate || users(both) != fmt.Sprint([]clusterUser{bob, jane}) {
		t.Fatalf("join of bob: %v, %v, %s", action, err, users(both))
	}
	// A later object of jane's name replaces the earlier.
	jane2 := clusterUser{"jane", "prod", "9"}
	replaced, _, _ := joinCluster(both, cs, "argocd", jane2)
	if users(replaced) != fmt.Sprint([]clusterUser{bob, jane2}) {
		t.Errorf("a new object of the name: %s", users(replaced))
	}
	if clusterUpToDate(both, cs, jane2) {
		t.Error("a Secret listing an earlier object of the name is up to date")
	}
	// Content someone changed is put back; labels and annotations of others stay.
	tampered := both.DeepCopy()
	tampered.Data[argocd.ClusterKeyServer] = []byte("https://elsewhere")
	tampered.Annotations["someone/else"] = "x"
	fixed, action, _ := joinCluster(tampered, cs, "argocd", jane)
	if action != secretUpdate || string(fixed.Data[argocd.ClusterKeyServer]) != cs.Server || fixed.Annotations["someone/else"] != "x" {
		t.Errorf("tampered: %v %+v", action, fixed)
	}
	// A Secret of the name with the content of another key is left alone.
	collision := both.DeepCopy()
	collision.Annotations[annotationClusterKey] = strings.Repeat("0", 64)
	if _, _, err := joinCluster(collision, cs, "argocd", jane); !errors.Is(err, errClusterKeyCollision) {
		t.Errorf("collision: %v", err)
	}

	// Leaving: bob goes, jane stays; then jane goes and the Secret with her.
	left, action := leaveCluster(both, bob.key())
	if action != secretUpdate || users(left) != fmt.Sprint([]clusterUser{jane}) {
		t.Fatalf("bob leaves: %v %s", action, users(left))
	}
	if users(both) != fmt.Sprint([]clusterUser{bob, jane}) {
		t.Error("leaveCluster changed its argument")
	}
	if _, action := leaveCluster(left, bob.key()); action != secretUnchanged {
		t.Errorf("leaving twice: %v", action)
	}
	if _, action := leaveCluster(left, jane.key()); action != secretDelete {
		t.Errorf("the last leaves: %v", action)
	}
	if _, action := leaveCluster(nil, jane.key()); action != secretUnchanged {
		t.Errorf("leaving none: %v", action)
	}
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ClusterSecretName("1"), Labels: map[string]string{LabelEnvironmentUID: "1"}}}
	if _, action := leaveCluster(legacy, jane.key()); action != secretUnchanged {
		t.Errorf("a per-environment Secret is not a shared one: %v", action)
	}
}

func TestReconciledUser(t *testing.T) {
	users := []clusterUser{{"jane", "prod", "1"}, {"jane", "a-prod", "2"}, {"bob", "prod", "3"}}
	for _, tc := range []struct{ namespace, named, want string }{
		{"jane", "prod", "prod"},
		{"jane", "a-prod", "a-prod"},
		{"jane", "", "a-prod"},
		{"jane", "gone", "a-prod"},
		{"bob", "a-prod", "prod"},
		{"carol", "prod", ""},
	} {
		if got := reconciledUser(users, tc.namespace, tc.named); got != tc.want {
			t.Errorf("reconciledUser(%s, %s) = %q, want %q", tc.namespace, tc.named, got, tc.want)
		}
	}
	if got := preferredCluster([]string{"managed-cluster-b", "managed-cluster-a"}); got != "managed-cluster-a" {
		t.Errorf("preferredCluster = %s", got)
	}
}

// membershipFixture is an environments controller over a fake Argo CD namespace; syncCache
// makes its informer show what the fake API server holds.
type membershipFixture struct {
	kube   *kubefake.Clientset
	envs   *Controller
	secret cache.Indexer
}

func newMembershipFixture(t *testing.T, kube *kubefake.Clientset) *membershipFixture {
	t.Helper()
	c, _ := testController(t)
	c.kube = kube
	c.ops = operations.NewRecorder(nil, "argocd")
	f := &membershipFixture{kube: kube, envs: c, secret: c.clusterIndex}
	return f
}

func (f *membershipFixture) syncCache(t *testing.T) {
	t.Helper()
	list, err := f.kube.CoreV1().Secrets("argocd").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]interface{}, 0, len(list.Items))
	for i := range list.Items {
		objs = append(objs, &list.Items[i])
	}
	if err := f.secret.Replace(objs, ""); err != nil {
		t.Fatal(err)
	}
}

func (f *membershipFixture) users(t *testing.T, name string) string {
	t.Helper()
	s, err := f.kube.CoreV1().Secrets("argocd").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(parseClusterUsers(s))
}

func (f *membershipFixture) secretNames(t *testing.T) []string {
	t.Helper()
	list, err := f.kube.CoreV1().Secrets("argocd").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

func testEnv(namespace, name, uid string) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
	return &managedv1alpha1.GitOpsDeploymentManagedEnvironment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(uid)}}
}

func TestClusterMembership(t *testing.T) {
	ctx := context.Background()
	f := newMembershipFixture(t, kubefake.NewClientset())
	shared := baseClusterInput().secret(t)
	other := baseClusterInput()
	other.namespaces = []string{"web"}
	narrow := other.secret(t)
	janeProd, bobProd := testEnv("jane", "prod", "j1"), testEnv("bob", "prod", "b1")

	// Two tenants' environments with the same content: one Secret listing both.
	for _, env := range []*managedv1alpha1.GitOpsDeploymentManagedEnvironment{janeProd, bobProd} {
		if err := f.envs.syncClusterMembership(ctx, env, shared); err != nil {
			t.Fatal(err)
		}
		f.syncCache(t)
	}
	if names := f.secretNames(t); fmt.Sprint(names) != fmt.Sprint([]string{shared.Name}) {
		t.Fatalf("Secrets %v, want one", names)
	}
	if got := f.users(t, shared.Name); got != "[bob/prod/b1 jane/prod/j1]" {
		t.Fatalf("users %s", got)
	}
	if name, ok := f.envs.environmentCluster(bobProd); !ok || name != shared.Name {
		t.Errorf("bob's cluster %q %v", name, ok)
	}

	// Unchanged: no request at all.
	f.kube.ClearActions()
	if err := f.envs.syncClusterMembership(ctx, janeProd, shared); err != nil {
		t.Fatal(err)
	}
	if acts := f.kube.Actions(); len(acts) != 0 {
		t.Errorf("an unchanged environment made requests: %v", acts)
	}

	// Jane narrows her namespaces: she moves to another Secret; bob keeps his.
	if err := f.envs.syncClusterMembership(ctx, janeProd, narrow); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t)
	if got, moved := f.users(t, shared.Name), f.users(t, narrow.Name); got != "[bob/prod/b1]" || moved != "[jane/prod/j1]" {
		t.Fatalf("after the move: %s, %s", got, moved)
	}

	// Jane's environment is replaced by a new object of the same name, with bob's content.
	janeProd2 := testEnv("jane", "prod", "j2")
	if err := f.envs.syncClusterMembership(ctx, janeProd2, shared); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t)
	if got, gone := f.users(t, shared.Name), f.users(t, narrow.Name); got != "[bob/prod/b1 jane/prod/j2]" || gone != "<none>" {
		t.Fatalf("after the replacement: %s, %s", got, gone)
	}

	// Bob's environment is deleted: the Secret stays for jane; then hers, and it goes.
	if err := f.envs.releaseClusters(ctx, clusterUser{Namespace: "bob", Name: "prod"}); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t)
	if got := f.users(t, shared.Name); got != "[jane/prod/j2]" {
		t.Fatalf("after bob: %s", got)
	}
	if err := f.envs.releaseClusters(ctx, userOf(janeProd2)); err != nil {
		t.Fatal(err)
	}
	f.syncCache(t)
	if names := f.secretNames(t); len(names) != 0 {
		t.Fatalf("Secrets left: %v", names)
	}
}

// TestClusterMembershipConcurrent races the reconciles of many environments that share one
// Secret, with a stale cache, as the workers of one agent do: the lock per Secret keeps every
// entry.
func TestClusterMembershipConcurrent(t *testing.T) {
	ctx := context.Background()
	f := newMembershipFixture(t, kubefake.NewClientset())
	cs := baseClusterInput().secret(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- f.envs.syncClusterMembership(ctx, testEnv(fmt.Sprintf("tenant-%d", i), "prod", strconv.Itoa(i)), cs)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := f.kube.CoreV1().Secrets("argocd").Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(parseClusterUsers(s)); got != n {
		t.Fatalf("%d environments listed, want %d: %s", got, n, s.Annotations[AnnotationClusterUsers])
	}

	// All leave at once: the Secret goes with the last, not before.
	f.syncCache(t)
	var left sync.WaitGroup
	for i := 0; i < n; i++ {
		left.Add(1)
		go func(i int) {
			defer left.Done()
			if err := f.envs.releaseClusters(ctx, clusterUser{Namespace: fmt.Sprintf("tenant-%d", i), Name: "prod"}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	left.Wait()
	if names := f.secretNames(t); len(names) != 0 {
		t.Fatalf("Secrets left: %v", names)
	}
}

// versionedSecrets makes the fake API server check resourceVersions of Secrets as the real one
// does: an update or a delete with a stale one is a conflict.
func versionedSecrets(c *kubefake.Clientset) {
	var mu sync.Mutex
	rv := 0
	gvr := corev1.SchemeGroupVersion.WithResource("secrets")
	tracker := c.Tracker()
	current := func(ns, name string) (*corev1.Secret, error) {
		obj, err := tracker.Get(gvr, ns, name)
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.Secret), nil
	}
	c.PrependReactor("*", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		ns := action.GetNamespace()
		switch action.GetVerb() { // create and update actions have the same methods
		case "create":
			s := action.(clienttesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
			rv++
			s.ResourceVersion, s.UID = strconv.Itoa(rv), types.UID("uid-"+strconv.Itoa(rv))
			if err := tracker.Create(gvr, s, ns); err != nil {
				return true, nil, err
			}
			return true, s, nil
		case "update":
			s := action.(clienttesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
			cur, err := current(ns, s.Name)
			if err != nil {
				return true, nil, err
			}
			if cur.ResourceVersion != s.ResourceVersion {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), s.Name, errors.New("the object has been modified"))
			}
			rv++
			s.ResourceVersion = strconv.Itoa(rv)
			return true, s, tracker.Update(gvr, s, ns)
		case "delete":
			act := action.(clienttesting.DeleteAction)
			cur, err := current(ns, act.GetName())
			if err != nil {
				return true, nil, err
			}
			if p := act.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), act.GetName(), errors.New("precondition failed"))
			}
			return true, nil, tracker.Delete(gvr, ns, act.GetName())
		}
		return false, nil, nil
	})
}

// TestClusterMembershipOptimistic races two agents (two locks: a leader hand-over) over one
// Secret: the resourceVersion precondition turns a lost update into a retry.
func TestClusterMembershipOptimistic(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset()
	versionedSecrets(kube)
	one, two := newMembershipFixture(t, kube), newMembershipFixture(t, kube)
	cs := baseClusterInput().secret(t)

	t.Run("a conflict is retried", func(t *testing.T) {
		conflicts := 1
		kube.PrependReactor("update", "secrets", func(action clienttesting.Action) (bool, runtime.Object, error) {
			if conflicts > 0 {
				conflicts--
				return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), cs.Name, errors.New("the object has been modified"))
			}
			return false, nil, nil
		})
		if err := one.envs.syncClusterMembership(ctx, testEnv("a", "prod", "a1"), cs); err != nil {
			t.Fatal(err)
		}
		if err := two.envs.syncClusterMembership(ctx, testEnv("b", "prod", "b1"), cs); err != nil {
			t.Fatal(err)
		}
		if got := one.users(t, cs.Name); got != "[a/prod/a1 b/prod/b1]" || conflicts != 0 {
			t.Fatalf("users %s (conflicts left %d)", got, conflicts)
		}
		if err := one.envs.releaseClusters(ctx, clusterUser{Namespace: "a", Name: "prod"}); err != nil {
			t.Fatal(err) // not in one's cache: nothing to do
		}
		one.syncCache(t)
		two.syncCache(t)
		for _, f := range []*membershipFixture{one, two} {
			if err := f.envs.releaseClusters(ctx, clusterUser{Namespace: "a", Name: "prod"}); err != nil {
				t.Fatal(err)
			}
			if err := f.envs.releaseClusters(ctx, clusterUser{Namespace: "b", Name: "prod"}); err != nil {
				t.Fatal(err)
			}
		}
		if names := one.secretNames(t); len(names) != 0 {
			t.Fatalf("Secrets left: %v", names)
		}
	})

	t.Run("two agents at once", func(t *testing.T) {
		const n = 10
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			f := one
			if i%2 == 1 {
				f = two
			}
			wg.Add(1)
			go func(i int, f *membershipFixture) {
				defer wg.Done()
				env := testEnv(fmt.Sprintf("tenant-%d", i), "prod", strconv.Itoa(i))
				var err error
				for attempt := 0; attempt < 20; attempt++ { // the work queue's retries
					if err = f.envs.syncClusterMembership(ctx, env, cs); err == nil {
						return
					}
				}
				t.Error(err)
			}(i, f)
		}
		wg.Wait()
		s, err := kube.CoreV1().Secrets("argocd").Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(parseClusterUsers(s)); got != n {
			t.Fatalf("%d environments listed, want %d: %s", got, n, s.Annotations[AnnotationClusterUsers])
		}
	})
}

func TestOnClusterSecretEvent(t *testing.T) {
	f := newMembershipFixture(t, kubefake.NewClientset())
	e := f.envs
	e.Controller = framework.NewController("test-environments", nil)
	drain := func(c *framework.Controller) []string {
		var keys []string
		for c.Queue.Len() > 0 {
			k, _ := c.Queue.Get()
			c.Queue.Done(k)
			keys = append(keys, k)
		}
		return keys
	}
	jane, bob := clusterUser{"jane", "prod", "1"}, clusterUser{"bob", "prod", "2"}
	cs := baseClusterInput().secret(t)
	s1, _, _ := joinCluster(nil, cs, "argocd", jane)
	s2, _, _ := joinCluster(s1, cs, "argocd", bob)

	// The environments queued are those ClusterSecretEnvironments names (the GitOpsDeployment
	// controller queues their deployments from it).
	e.onClusterSecretEvent(nil, s1, false)
	if envs, named := drain(e.Controller), ClusterSecretEnvironments(nil, s1, false); fmt.Sprint(envs) != "[jane/prod]" || fmt.Sprint(named) != "[jane/prod]" {
		t.Errorf("add: %v %v", envs, named)
	}
	// Bob joins: only bob's environment hears of it.
	e.onClusterSecretEvent(s1, s2, false)
	if envs, named := drain(e.Controller), ClusterSecretEnvironments(s1, s2, false); fmt.Sprint(envs) != "[bob/prod]" || fmt.Sprint(named) != "[bob/prod]" {
		t.Errorf("join: %v %v", envs, named)
	}
	// Someone changes the content: everyone is put back.
	tampered := s2.DeepCopy()
	tampered.Data[argocd.ClusterKeyServer] = []byte("https://elsewhere")
	e.onClusterSecretEvent(s2, tampered, false)
	if envs, named := drain(e.Controller), ClusterSecretEnvironments(s2, tampered, false); len(envs) != 2 || len(named) != 2 {
		t.Errorf("tampered: %v %v", envs, named)
	}
	// Deleted: everyone.
	tombstone := cache.DeletedFinalStateUnknown{Key: "argocd/" + s2.Name, Obj: s2}
	e.onClusterSecretEvent(nil, tombstone, true)
	if envs, named := drain(e.Controller), ClusterSecretEnvironments(nil, tombstone, true); len(envs) != 2 || len(named) != 2 {
		t.Errorf("deleted: %v %v", envs, named)
	}
	// Other Secrets of the namespace are nobody's business here.
	repo := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: "argocd"}}
	e.onClusterSecretEvent(nil, repo, false)
	if envs, named := drain(e.Controller), ClusterSecretEnvironments(nil, repo, false); len(envs) != 0 || len(named) != 0 {
		t.Errorf("unrelated: %v %v", envs, named)
	}
	// A Secret of the per-environment scheme concerns its environment's own reconcile alone.
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ClusterSecretName("9"), Namespace: "argocd",
		Labels: map[string]string{LabelEnvironmentUID: "9", LabelEnvironmentNamespace: "jane", LabelManagedCluster: "true"}}}
	if named := ClusterSecretEnvironments(nil, legacy, false); len(named) != 0 {
		t.Errorf("per-environment Secret: %v", named)
	}
}
