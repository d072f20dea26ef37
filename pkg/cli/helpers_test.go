package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

const testNS = "team-a"

// fixture runs the plugin's commands against a fake clientset holding objects.
type fixture struct {
	t          *testing.T
	client     *fake.Clientset
	kubeconfig string
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	c := fake.NewSimpleClientset(objects...)
	// The fake tracker does not generate names; the server does.
	n := 0
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		m, err := meta.Accessor(obj)
		if err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			n++
			m.SetName(m.GetGenerateName() + []string{"abcde", "fghij", "klmno"}[n%3])
		}
		return false, nil, nil
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team-a}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, client: c, kubeconfig: kubeconfig}
}

// run runs the plugin with args and returns its exit code, stdout and stderr.
func (f *fixture) run(args ...string) (int, string, string) {
	f.t.Helper()
	var out, errOut bytes.Buffer
	o := NewOptions(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	o.NewClient = func(*rest.Config) (versioned.Interface, error) { return f.client, nil }
	o.PollInterval = 10 * time.Millisecond
	code := Main(context.Background(), o, append([]string{"--kubeconfig", f.kubeconfig}, args...))
	return code, out.String(), errOut.String()
}

// forbid makes the fake refuse verb on the resource plural as RBAC does.
func (f *fixture) forbid(verb, plural, group, user string) {
	f.client.PrependReactor(verb, plural, func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: plural}, "",
			&refusal{`User "` + user + `" cannot ` + verb + ` resource "` + plural + `" in API group "` + group + `" in the namespace "` + a.GetNamespace() + `"`})
	})
}

type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func deployment(name string, typ managedv1alpha1.GitOpsDeploymentSpecType, sync managedv1alpha1.SyncStatusCode, health managedv1alpha1.HealthStatusCode,
	resources ...managedv1alpha1.ResourceStatus) *managedv1alpha1.GitOpsDeployment {
	src := managedv1alpha1.ApplicationSource{RepoURL: "https://git.example.com/team-a/web.git", Path: "deploy/" + name}
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-d-" + name)},
		Spec:       managedv1alpha1.GitOpsDeploymentSpec{Source: src, Type: typ},
		Status: managedv1alpha1.GitOpsDeploymentStatus{
			Sync:            managedv1alpha1.SyncStatus{Status: sync, Revision: "8768384c3e7f4e5b9a0d1c2b3a4f5e6d7c8b9a01"},
			Health:          managedv1alpha1.HealthStatus{Status: health},
			Resources:       resources,
			ReconciledState: managedv1alpha1.ReconciledState{Source: managedv1alpha1.GitOpsDeploymentSource{RepoURL: src.RepoURL, Path: src.Path}},
		},
	}
}

func res(kind, name string, sync managedv1alpha1.SyncStatusCode, health managedv1alpha1.HealthStatusCode, message string) managedv1alpha1.ResourceStatus {
	r := managedv1alpha1.ResourceStatus{Kind: kind, Name: name, Namespace: testNS, Status: sync}
	if health != "" {
		r.Health = &managedv1alpha1.HealthStatus{Status: health, Message: message}
	}
	return r
}

func withCondition(d *managedv1alpha1.GitOpsDeployment, t managedv1alpha1.GitOpsDeploymentConditionType, status managedv1alpha1.GitOpsConditionStatus, msg string) *managedv1alpha1.GitOpsDeployment {
	d.Status.Conditions = append(d.Status.Conditions, managedv1alpha1.GitOpsDeploymentCondition{Type: t, Status: status, Message: msg})
	return d
}

func binding(app, env, snapshot string, deployed metav1.ConditionStatus, message string, deployments ...string) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: app + "-" + env + "-generated-binding", Namespace: testNS, UID: types.UID("uid-b-" + app + env)},
		Spec:       appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: app, Environment: env, Snapshot: snapshot},
	}
	if deployed != "" {
		b.Status.ComponentDeploymentConditions = []metav1.Condition{{Type: appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed,
			Status: deployed, Message: message}}
	}
	for _, d := range deployments {
		b.Status.GitOpsDeployments = append(b.Status.GitOpsDeployments, appstudiov1alpha1.BindingStatusGitOpsDeployment{ComponentName: "web", GitOpsDeployment: d})
	}
	return b
}

func environment(name, parent string) *appstudiov1alpha1.Environment {
	return &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: appstudiov1alpha1.EnvironmentSpec{DisplayName: name, DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual, ParentEnvironment: parent}}
}

func application(name string) *appstudiov1alpha1.Application {
	return &appstudiov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: appstudiov1alpha1.ApplicationSpec{DisplayName: strings.ToUpper(name)}}
}
