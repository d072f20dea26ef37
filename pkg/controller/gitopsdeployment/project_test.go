package gitopsdeployment

import (
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argoglob "github.com/argoproj/argo-cd/v2/util/glob"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// argoMatches is how Argo CD 2.14's application-controller picks the destinationServiceAccounts
// entry of a sync (controller/sync.go, deriveServiceAccountToImpersonate): the entry's server
// and namespace are glob patterns matched against the Application's destination.
func argoMatches(t *testing.T, acct argov1alpha1.ApplicationDestinationServiceAccount, server, namespace string) bool {
	t.Helper()
	s, err := argoglob.MatchWithError(acct.Server, server)
	if err != nil {
		t.Fatalf("Argo CD refuses the server pattern %q: %v", acct.Server, err)
	}
	n, err := argoglob.MatchWithError(acct.Namespace, namespace)
	if err != nil {
		t.Fatalf("Argo CD refuses the namespace pattern %q: %v", acct.Namespace, err)
	}
	return s && n
}

func TestGlobEscape(t *testing.T) {
	const envURL = "https://10.0.0.1:6443?managedEnvironment=0b1c2d3e-0000-4000-8000-000000000001"
	for _, tc := range []struct {
		s string
		// others must not match the escaped s.
		others []string
	}{
		{envURL, []string{
			"https://10.0.0.1:6443XmanagedEnvironment=0b1c2d3e-0000-4000-8000-000000000001",
			"https://10.0.0.1:6443?managedEnvironment=0b1c2d3e-0000-4000-8000-000000000002",
			envURL + "0", "x" + envURL, "https://10.0.0.1:6443",
		}},
		{"https://h/a*b", []string{"https://h/aZZZb", "https://h/ab"}},
		{"https://h/a?b", []string{"https://h/aXb"}},
		{"https://h/[ab]", []string{"https://h/a", "https://h/b"}},
		{"https://h/[!a]", []string{"https://h/b"}},
		{"https://h/{a,b}", []string{"https://h/a", "https://h/b"}},
		{`https://h/a\b`, []string{"https://h/ab", `https://h/a\\b`}},
		{`https://h/a\*`, []string{`https://h/a\x`, "https://h/a*"}},
		{"https://h/]}", []string{"https://h/"}},
		{"https://h/[", nil}, // not a pattern Argo CD could compile unescaped
		{"https://h/**", []string{"https://h/a/b"}},
		{"https://h/ünï?", []string{"https://h/ünïx"}},
		{"jane", []string{"jane2", "xjane", "other", ""}},
	} {
		pattern := globEscape(tc.s)
		ok, err := argoglob.MatchWithError(pattern, tc.s)
		if err != nil || !ok {
			t.Errorf("globEscape(%q) = %q does not match itself in Argo CD: %v, %v", tc.s, pattern, ok, err)
		}
		for _, o := range tc.others {
			if ok, err := argoglob.MatchWithError(pattern, o); err != nil || ok {
				t.Errorf("globEscape(%q) = %q matches %q in Argo CD (err %v)", tc.s, pattern, o, err)
			}
		}
	}
	// The escape is what makes the difference: unescaped, the environment's URL matches any
	// character in place of its "?".
	if !argoglob.Match(envURL, "https://10.0.0.1:6443XmanagedEnvironment=0b1c2d3e-0000-4000-8000-000000000001") {
		t.Error("the control case no longer shows what the escape is for")
	}
}

func testSecretLister(t *testing.T, secrets ...*corev1.Secret) corelisters.SecretLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewSecretLister(idx)
}

func clusterSecretFor(name, server, impersonate string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd"},
		Data:       map[string][]byte{argocd.ClusterKeyName: []byte(name)},
	}
	if server != "" {
		s.Data[argocd.ClusterKeyServer] = []byte(server)
	}
	if impersonate != "" {
		s.Annotations = map[string]string{argocd.AnnotationImpersonate: impersonate}
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestProjectDestinationAccount(t *testing.T) {
	const envURL = "https://api.example:6443?managedEnvironment=env-uid"
	a := &Controller{argoNamespace: "argocd", localServer: argocd.InClusterServer, argoSecrets: testSecretLister(t,
		clusterSecretFor("managed-env-env-uid", envURL, "team:deployer", map[string]string{argocd.ClusterKeyNamespaces: "web,api", argocd.ClusterKeyClusterScoped: "false"}),
		clusterSecretFor("managed-env-wide", "https://wide.example?managedEnvironment=wide", "kube-system:mgr", nil),
		clusterSecretFor("managed-env-crs", "https://crs.example?managedEnvironment=crs", "kube-system:mgr", map[string]string{argocd.ClusterKeyNamespaces: "web", argocd.ClusterKeyClusterScoped: "true"}),
		clusterSecretFor("managed-env-user", "https://user.example?managedEnvironment=user", "", nil),
		clusterSecretFor("managed-env-noserver", "", "kube-system:mgr", nil),
	)}
	type want struct {
		acct         argov1alpha1.ApplicationDestinationServiceAccount
		wholeCluster bool
		ok           bool
	}
	for _, tc := range []struct {
		name string
		dest argov1alpha1.ApplicationDestination
		want want
		// server is where Argo CD syncs dest to (the server it infers from a cluster name).
		server string
	}{
		{name: "local", dest: localJane, server: argocd.InClusterServer, want: want{ok: true,
			acct: argov1alpha1.ApplicationDestinationServiceAccount{Server: argocd.InClusterServer, Namespace: "jane", DefaultServiceAccount: "jane:gitops-deployer"}}},
		{name: "environment limited to namespaces", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-env-uid", Namespace: "web"}, server: envURL,
			want: want{ok: true, acct: argov1alpha1.ApplicationDestinationServiceAccount{
				Server: `https://api.example:6443\?managedEnvironment=env-uid`, Namespace: "*", DefaultServiceAccount: "team:deployer"}}},
		{name: "environment of the whole cluster", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-wide", Namespace: "web"},
			server: "https://wide.example?managedEnvironment=wide",
			want: want{ok: true, wholeCluster: true, acct: argov1alpha1.ApplicationDestinationServiceAccount{
				Server: `https://wide.example\?managedEnvironment=wide`, Namespace: "*", DefaultServiceAccount: "kube-system:mgr"}}},
		{name: "environment with cluster resources", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-crs", Namespace: "web"},
			server: "https://crs.example?managedEnvironment=crs",
			want: want{ok: true, wholeCluster: true, acct: argov1alpha1.ApplicationDestinationServiceAccount{
				Server: `https://crs.example\?managedEnvironment=crs`, Namespace: "*", DefaultServiceAccount: "kube-system:mgr"}}},
		{name: "environment without an identity", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-user", Namespace: "web"}},
		{name: "cluster Secret without a server", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-noserver", Namespace: "web"}},
		{name: "unknown cluster", dest: argov1alpha1.ApplicationDestination{Name: "managed-env-gone", Namespace: "web"}},
		{name: "another server", dest: argov1alpha1.ApplicationDestination{Server: "https://elsewhere", Namespace: "web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acct, wholeCluster, ok := a.destinationAccount(tc.dest)
			if got := (want{acct, wholeCluster, ok}); got != tc.want {
				t.Fatalf("destinationAccount = %+v, want %+v", got, tc.want)
			}
			if !ok {
				return
			}
			if !argoMatches(t, acct, tc.server, tc.dest.Namespace) {
				t.Errorf("Argo CD would not pick %+v to sync to %s %s", acct, tc.server, tc.dest.Namespace)
			}
		})
	}

	// The local account belongs to its namespace alone.
	acct, _, _ := a.destinationAccount(localJane)
	for _, other := range []struct{ server, namespace string }{
		{argocd.InClusterServer, "jane2"}, {argocd.InClusterServer, "other"}, {"https://api.example:6443?managedEnvironment=env-uid", "jane"},
	} {
		if argoMatches(t, acct, other.server, other.namespace) {
			t.Errorf("the deployer of jane would sync to %s %s", other.server, other.namespace)
		}
	}

	// A local server named by a URL with pattern characters is escaped too.
	a.localServer = "https://10.0.0.1:6443?local=1"
	acct, _, ok := a.destinationAccount(argov1alpha1.ApplicationDestination{Server: a.localServer, Namespace: "jane"})
	if !ok || acct.Server != `https://10.0.0.1:6443\?local=1` || !argoMatches(t, acct, a.localServer, "jane") ||
		argoMatches(t, acct, "https://10.0.0.1:6443Xlocal=1", "jane") {
		t.Errorf("destinationAccount with local server %s = %+v, %v", a.localServer, acct, ok)
	}
}
