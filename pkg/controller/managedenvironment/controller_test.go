package managedenvironment

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

const testAPIURL = "https://api.cluster.example:6443"

func testKubeconfig(server, user string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: target
  cluster:
    server: %s
    certificate-authority-data: Q0E=
    tls-server-name: api.internal
contexts:
- name: b-context
  context: {cluster: target, user: u}
- name: a-context
  context: {cluster: target, user: u}
users:
- name: u
  user:
%s
`, server, user)
}

func testEnvironment(mutate func(*managedv1alpha1.ManagedEnvironmentSpec)) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
	env := &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "jane", UID: "env-uid", Generation: 3},
		Spec:       managedv1alpha1.ManagedEnvironmentSpec{APIURL: testAPIURL, ClusterCredentialsSecret: "creds"},
	}
	if mutate != nil {
		mutate(&env.Spec)
	}
	return env
}

func testSecret(typ string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{Type: corev1.SecretType(typ), Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestParseCredentials(t *testing.T) {
	const envType = managedv1alpha1.ManagedEnvironmentSecretType
	token := "    token: secret-token"
	for _, tc := range []struct {
		name    string
		env     func(*managedv1alpha1.ManagedEnvironmentSpec)
		secret  *corev1.Secret
		want    *credentials
		status  metav1.ConditionStatus
		reason  managedv1alpha1.ManagedEnvironmentConditionReason
		message string
	}{{
		name:   "token",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, token)}),
		// Contexts are visited sorted, so the choice does not depend on map order.
		want: &credentials{context: "a-context", bearerToken: "secret-token", caData: []byte("CA"), serverName: "api.internal"},
	}, {
		name:   "client certificate, API URL matched case-insensitively and without a trailing slash",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig("HTTPS://API.cluster.example:6443/", "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ")}),
		want:   &credentials{context: "a-context", certData: []byte("CERT"), keyData: []byte("KEY"), caData: []byte("CA"), serverName: "api.internal"},
	}, {
		name:   "insecure drops the CA",
		env:    func(s *managedv1alpha1.ManagedEnvironmentSpec) { s.AllowInsecureSkipTLSVerify = true },
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, token)}),
		want:   &credentials{context: "a-context", bearerToken: "secret-token", serverName: "api.internal", insecure: true},
	}, {
		name:   "query in the API URL",
		env:    func(s *managedv1alpha1.ManagedEnvironmentSpec) { s.APIURL += "?x=1" },
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, token)}),
		status: metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnsupportedAPIURL,
		message: "the API URL must not have ? or & values",
	}, {
		name:   "wrong Secret type",
		secret: testSecret("Opaque", map[string]string{"kubeconfig": testKubeconfig(testAPIURL, token)}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonInvalidSecretType,
		message: "invalid secret type: Opaque",
	}, {
		name:   "no kubeconfig key",
		secret: testSecret(envType, map[string]string{"config": testKubeconfig(testAPIURL, token)}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonMissingKubeConfigField,
		message: "missing kubeconfig field in Secret",
	}, {
		name:   "unparseable",
		secret: testSecret(envType, map[string]string{"kubeconfig": "clusters: {["}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
		message: "unable to parse kubeconfig data: yaml: line 1: did not find expected node content",
	}, {
		name:   "no cluster for the API URL",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig("https://other:6443", token)}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToLocateContext,
		message: "the kubeconfig did not have a cluster entry that matched the API URL 'https://api.cluster.example:6443'",
	}, {
		name: "no context for the cluster",
		secret: testSecret(envType, map[string]string{"kubeconfig": "clusters:\n- name: target\n  cluster: {server: " + testAPIURL + "}\n" +
			"contexts:\n- name: x\n  context: {cluster: other, user: u}\n"}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToLocateContext,
		message: "the kubeconfig did not have a context that matched the cluster specified in the API URL of the " +
			"GitOpsDeploymentManagedEnvironment. Context was expected to reference cluster 'target'",
	}, {
		name: "context without its user",
		secret: testSecret(envType, map[string]string{"kubeconfig": "clusters:\n- name: target\n  cluster: {server: " + testAPIURL + "}\n" +
			"contexts:\n- name: x\n  context: {cluster: target, user: nobody}\n"}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
		message: "unable to extract remote cluster configuration from kubeconfig, missing auth info for x",
	}, {
		name:   "no token and no client certificate",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, "    username: admin\n")}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
		message: `the user of context "a-context" must authenticate with a token or a client certificate: exec plugins, auth providers, basic auth and impersonation are not supported`,
	}, {
		name:   "empty user",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, "    {}")}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToParseKubeconfigData,
		message: `kubeconfig must have a service account token or a client certificate and key for the user in context "a-context"`,
	}, {
		name:   "token file of the agent's machine",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token")}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
		message: `the kubeconfig must carry its certificates and token inline (the *-data fields and token) for context "a-context": references to files are not supported`,
	}, {
		name:   "exec plugin",
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, "    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}")}),
		status: metav1.ConditionFalse, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToRetrieveRestConfig,
		message: `the user of context "a-context" must authenticate with a token or a client certificate: exec plugins, auth providers, basic auth and impersonation are not supported`,
	}, {
		name:   "invalid namespace",
		env:    func(s *managedv1alpha1.ManagedEnvironmentSpec) { s.Namespaces = []string{"ok", "a,b"} },
		secret: testSecret(envType, map[string]string{"kubeconfig": testKubeconfig(testAPIURL, token)}),
		status: metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonInvalidNamespaceList,
		message: "user specified an invalid namespace 'a,b': a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
			"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			creds, cond := parseCredentials(testEnvironment(tc.env), tc.secret)
			if tc.want != nil {
				if cond != nil {
					t.Fatalf("condition %+v, want credentials", *cond)
				}
				if fmt.Sprintf("%+v", *creds) != fmt.Sprintf("%+v", *tc.want) {
					t.Fatalf("credentials\n got %+v\nwant %+v", *creds, *tc.want)
				}
				return
			}
			if cond == nil {
				t.Fatalf("credentials %+v, want condition %s", *creds, tc.reason)
			}
			if want := (connection{status: tc.status, reason: tc.reason, message: tc.message}); *cond != want {
				t.Fatalf("condition\n got %+v\nwant %+v", *cond, want)
			}
		})
	}
}

func TestValidationFailed(t *testing.T) {
	unknownAuthority := &url.Error{Op: "Get", URL: testAPIURL, Err: x509.UnknownAuthorityError{}}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"unauthorized", apierrors.NewUnauthorized("Unauthorized"), validationFailedMessage},
		{"unknown host", errors.New(`Get "https://nonexistent.invalid:6443/api/v1/namespaces?limit=1": dial tcp: lookup nonexistent.invalid: no such host`), validationFailedMessage},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", errors.New("no")), validationForbiddenMessage},
		{"unknown authority", unknownAuthority, validationUnknownAuthorityMessage},
		{"unknown authority, as text", fmt.Errorf("wrapped: %v", unknownAuthority), validationUnknownAuthorityMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := connection{status: metav1.ConditionUnknown, reason: managedv1alpha1.ManagedEnvironmentReasonUnableToValidateClusterCredentials, message: tc.want}
			if got := *validationFailed(tc.err); got != want {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestEnvironmentConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	env := testEnvironment(nil)
	failed := *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonMissingKubeConfigField, "missing kubeconfig field in Secret")

	env.Status.Conditions = environmentConditions(env, failed, t0)
	want := metav1.Condition{
		Type: managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionFalse,
		Reason: "MissingKubeConfigField", Message: "missing kubeconfig field in Secret", ObservedGeneration: 3, LastTransitionTime: t0,
	}
	if len(env.Status.Conditions) != 1 || env.Status.Conditions[0] != want {
		t.Fatalf("first condition: %+v", env.Status.Conditions)
	}

	// Another failure of the same status keeps the transition time.
	other := *connectionFailed(managedv1alpha1.ManagedEnvironmentReasonInvalidSecretType, "invalid secret type: Opaque")
	got := environmentConditions(env, other, t1)
	want.Reason, want.Message = "InvalidSecretType", "invalid secret type: Opaque"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("same status: %+v, want %+v", got, want)
	}
	if env.Status.Conditions[0].Reason != "MissingKubeConfigField" {
		t.Fatal("environmentConditions changed the environment's own conditions")
	}

	// Success is a transition; the message goes.
	got = environmentConditions(env, connectionSucceeded, t1)
	want = metav1.Condition{
		Type: managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionTrue,
		Reason: "Succeeded", ObservedGeneration: 3, LastTransitionTime: t1,
	}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("success: %+v, want %+v", got, want)
	}
}

func TestClusterConfig(t *testing.T) {
	c := &credentials{bearerToken: "t", certData: []byte("c"), keyData: []byte("k"), caData: []byte("ca"), serverName: "s", insecure: true}
	got := c.clusterConfig()
	want := argov1alpha1.ClusterConfig{BearerToken: "t", TLSClientConfig: argov1alpha1.TLSClientConfig{
		Insecure: true, ServerName: "s", CertData: []byte("c"), KeyData: []byte("k"), CAData: []byte("ca"),
	}}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	rc := c.restConfig(testAPIURL)
	if rc.Host != testAPIURL || rc.BearerToken != "t" || !rc.Insecure || rc.ExecProvider != nil || rc.BearerTokenFile != "" || rc.Timeout != remoteTimeout {
		t.Fatalf("rest config: %+v", rc)
	}
}

// testController is a Controller whose environment informer holds the environments among
// objs, and whose informer of the Argo CD namespace's Secrets holds the Secrets among them;
// nothing is started. The informer factory of the GitOps objects comes back with it.
func testController(t *testing.T, objs ...runtime.Object) (*Controller, externalversions.SharedInformerFactory) {
	t.Helper()
	gitopsInformers := externalversions.NewSharedInformerFactory(nil, 0)
	argoKube := informers.NewSharedInformerFactoryWithOptions(kubefake.NewClientset(), 0, informers.WithNamespace("argocd"))
	envs := gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeploymentManagedEnvironments()
	secrets := argoKube.Core().V1().Secrets()
	clusters, err := NewClusters(envs, secrets, nil, "argocd")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		idx := envs.Informer().GetIndexer()
		if _, ok := obj.(*corev1.Secret); ok {
			idx = secrets.Informer().GetIndexer()
		}
		if err := idx.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return &Controller{Clusters: clusters, now: time.Now}, gitopsInformers
}

// sharedSecret is a shared cluster Secret in the cache listing users.
func sharedSecret(name string, users ...clusterUser) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "argocd",
		Labels:      map[string]string{argocd.LabelSecretType: argocd.SecretTypeCluster, LabelManagedCluster: strings.TrimPrefix(name, clusterSecretPrefix)},
		Annotations: map[string]string{AnnotationClusterUsers: formatClusterUsers(users)},
	}}
}

func TestEnvironmentDestination(t *testing.T) {
	connectedStatus := managedv1alpha1.ManagedEnvironmentStatus{Conditions: []metav1.Condition{{
		Type: managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionTrue, Reason: "Succeeded",
	}}}
	env := func(namespace, name, uid string) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
		e := testEnvironment(nil)
		e.Namespace, e.Name, e.UID = namespace, name, types.UID(uid)
		e.Status = connectedStatus
		return e
	}
	connected := env("jane", "prod", "env-uid")
	sibling := env("jane", "prod2", "p2-uid")
	failing := env("jane", "broken", "broken-uid")
	failing.Status.Conditions = []metav1.Condition{{
		Type: managedv1alpha1.ManagedEnvironmentStatusConnectionInitializationSucceeded, Status: metav1.ConditionUnknown, Reason: "UnableToValidateClusterCredentials",
	}}
	elsewhere := env("other", "theirs", "their-uid")
	legacy := env("jane", "old", "old-uid")
	moving := env("jane", "moving", "moving-uid")
	renamed := env("jane", "renamed", "new-uid")
	fresh := env("jane", "fresh", "fresh-uid")
	user := func(e *managedv1alpha1.GitOpsDeploymentManagedEnvironment) clusterUser { return userOf(e) }
	a, gitopsInformers := testController(t, connected, sibling, failing, elsewhere, legacy, moving, renamed, fresh,
		sharedSecret("managed-cluster-aaaa", user(connected), user(elsewhere), user(sibling)),
		sharedSecret("managed-cluster-m2", user(moving)),
		sharedSecret("managed-cluster-m1", user(moving)),
		sharedSecret("managed-cluster-stale", clusterUser{Namespace: "jane", Name: "renamed", UID: "old-uid"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "managed-env-old-uid", Namespace: "argocd",
			Labels: map[string]string{LabelEnvironmentUID: "old-uid", LabelEnvironmentNamespace: "jane"}}},
	)

	for _, tc := range []struct {
		name, namespace, env, destNamespace string
		want                                string
		userErr                             string
	}{
		{name: "connected", namespace: "jane", env: "prod", destNamespace: "web", want: "managed-cluster-aaaa"},
		{name: "another tenant with the same credentials", namespace: "other", env: "theirs", destNamespace: "web", want: "managed-cluster-aaaa"},
		{name: "per-environment Secret of an earlier agent", namespace: "jane", env: "old", destNamespace: "web", want: "managed-env-old-uid"},
		{name: "moving between two", namespace: "jane", env: "moving", destNamespace: "web", want: "managed-cluster-m1"},
		{name: "missing", namespace: "jane", env: "nope", destNamespace: "web", userErr: UserErrorManagedEnvironment},
		{name: "not connected", namespace: "jane", env: "broken", destNamespace: "web", userErr: UserErrorManagedEnvironment},
		{name: "another namespace's", namespace: "jane", env: "theirs", destNamespace: "web", userErr: UserErrorManagedEnvironment},
		{name: "listed under an earlier object of its name only", namespace: "jane", env: "renamed", destNamespace: "web", userErr: UserErrorManagedEnvironment},
		{name: "no cluster Secret yet", namespace: "jane", env: "fresh", destNamespace: "web", userErr: UserErrorManagedEnvironment},
		{name: "no namespace", namespace: "jane", env: "prod", userErr: UserErrorDestinationNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			depl := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: tc.namespace}}
			depl.Spec.Destination = managedv1alpha1.ApplicationDestination{Environment: tc.env, Namespace: tc.destNamespace}
			got, userErr, err := a.Destination(depl)
			if tc.userErr != "" {
				if err != nil || userErr != tc.userErr {
					t.Fatalf("got %v (%v, %q), want user error %q", got, err, userErr, tc.userErr)
				}
				return
			}
			if userErr != "" {
				t.Fatalf("user error %q", userErr)
			}
			if want := (argov1alpha1.ApplicationDestination{Name: tc.want, Namespace: tc.destNamespace}); err != nil || got != want {
				t.Fatalf("got %+v, %v; want %+v", got, err, want)
			}
		})
	}

	deployments := gitopsInformers.ManagedGitops().V1alpha1().GitOpsDeployments()
	for name, envName := range map[string]string{"to-prod": "prod", "to-prod2": "prod2"} {
		d := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "jane"}}
		d.Spec.Destination.Environment = envName
		if err := deployments.Informer().GetIndexer().Add(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ namespace, deployment, cluster, want string }{
		{"jane", "", "managed-cluster-aaaa", "prod"}, // two of jane's share it: the first
		{"jane", "to-prod", "managed-cluster-aaaa", "prod"},
		{"jane", "to-prod2", "managed-cluster-aaaa", "prod2"},
		{"other", "", "managed-cluster-aaaa", "theirs"},
		{"third", "", "managed-cluster-aaaa", ""}, // never another namespace's environment
		{"jane", "", "managed-cluster-stale", ""}, // nor an earlier object of the name
		{"jane", "", "managed-cluster-gone", ""},
		{"jane", "", "managed-env-env-uid", "prod"}, // an earlier agent's Secret
		{"jane", "", "managed-env-their-uid", ""},
		{"jane", "", "in-cluster", ""},
		{"jane", "", "managed-env-gone", ""},
	} {
		a.deployments = nil
		app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{argocd.LabelDeploymentNamespace: tc.namespace},
			Annotations: map[string]string{argocd.AnnotationDeploymentName: tc.deployment},
		}}
		if tc.deployment != "" {
			a.deployments = deployments.Lister()
		}
		app.Status.Sync.ComparedTo.Destination.Name = tc.cluster
		if got := a.ReconciledEnvironment(tc.namespace, app); got != tc.want {
			t.Errorf("reconciledEnvironment(%s, %s of %q) = %q, want %q", tc.namespace, tc.cluster, tc.deployment, got, tc.want)
		}
	}
}
