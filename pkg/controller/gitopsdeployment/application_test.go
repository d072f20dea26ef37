package gitopsdeployment

import (
	"encoding/json"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
)

// localJane is where a GitOpsDeployment of namespace jane deploys on the local cluster.
var localJane = argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "jane"}

func deployment(mutate func(*managedv1alpha1.GitOpsDeployment)) *managedv1alpha1.GitOpsDeployment {
	d := &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "jane", Name: "web", UID: "0b1c2d3e-0000-4000-8000-000000000001"},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://example.com/org/repo", Path: "env/dev", TargetRevision: "main"},
			Type:   managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	if mutate != nil {
		mutate(d)
	}
	return d
}

func TestDesiredApplicationAutomated(t *testing.T) {
	d := deployment(func(d *managedv1alpha1.GitOpsDeployment) {
		d.Spec.SyncPolicy = &managedv1alpha1.SyncPolicy{SyncOptions: managedv1alpha1.SyncOptions{managedv1alpha1.SyncOptionCreateNamespaceTrue}}
	})
	got, err := desiredApplication(d, nil, "argocd", localJane)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	// The exact body sent by server-side apply: nothing beyond the fields the agent owns.
	want := `{"kind":"Application","apiVersion":"argoproj.io/v1alpha1",` +
		`"metadata":{"name":"gitopsdepl-0b1c2d3e-0000-4000-8000-000000000001","namespace":"argocd",` +
		`"labels":{"managed-gitops.redhat.com/gitopsdeployment-namespace":"jane","managed-gitops.redhat.com/gitopsdeployment-uid":"0b1c2d3e-0000-4000-8000-000000000001"},` +
		`"annotations":{"managed-gitops.redhat.com/gitopsdeployment-name":"web"}},` +
		`"spec":{"source":{"repoURL":"https://example.com/org/repo","path":"env/dev","targetRevision":"main"},` +
		`"destination":{"server":"https://kubernetes.default.svc","namespace":"jane"},"project":"gitops-tenant-jane",` +
		`"syncPolicy":{"automated":{"prune":true,"selfHeal":true,"allowEmpty":true},` +
		`"syncOptions":["PrunePropagationPolicy=background","CreateNamespace=true"],` +
		`"retry":{"limit":-1,"backoff":{"duration":"5s","factor":2,"maxDuration":"3m"}}}}}`
	if string(raw) != want {
		t.Errorf("apply body:\n got %s\nwant %s", raw, want)
	}
	if strings.Contains(string(raw), "status") || strings.Contains(string(raw), "operation") {
		t.Error("the apply body must not carry status or operation")
	}
}

func TestDesiredApplicationManual(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options managedv1alpha1.SyncOptions
		want    *argov1alpha1.SyncPolicy
	}{
		{name: "no options", want: nil},
		{
			name:    "user options only, no automation",
			options: managedv1alpha1.SyncOptions{managedv1alpha1.SyncOptionCreateNamespaceFalse},
			want:    &argov1alpha1.SyncPolicy{SyncOptions: argov1alpha1.SyncOptions{"CreateNamespace=false"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := deployment(func(d *managedv1alpha1.GitOpsDeployment) {
				d.Spec.Type = managedv1alpha1.GitOpsDeploymentSpecTypeManual
				if tc.options != nil {
					d.Spec.SyncPolicy = &managedv1alpha1.SyncPolicy{SyncOptions: tc.options}
				}
			})
			got, err := desiredApplication(d, nil, "argocd", localJane)
			if err != nil {
				t.Fatal(err)
			}
			if !syncPolicyEqual(got.Spec.SyncPolicy, tc.want) {
				t.Errorf("syncPolicy = %+v, want %+v", got.Spec.SyncPolicy, tc.want)
			}
		})
	}
}

func TestDesiredApplicationUserErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*managedv1alpha1.GitOpsDeployment)
		want   string
	}{
		{"empty path", func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.Path = "" }, managedv1alpha1.GitOpsDeploymentUserErrorPathIsRequired},
		{"root path", func(d *managedv1alpha1.GitOpsDeployment) { d.Spec.Source.Path = "/" }, managedv1alpha1.GitOpsDeploymentUserErrorInvalidPathSlash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := desiredApplication(deployment(tc.mutate), nil, "argocd", localJane)
			if err == nil || !isUserError(err) || err.Error() != tc.want {
				t.Fatalf("error = %v, want user error %q", err, tc.want)
			}
		})
	}
}

func TestApplicationUpToDate(t *testing.T) {
	want, err := desiredApplication(deployment(nil), nil, "argocd", localJane)
	if err != nil {
		t.Fatal(err)
	}
	live := func(mutate func(*argov1alpha1.Application)) *argov1alpha1.Application {
		raw, _ := json.Marshal(want)
		app := &argov1alpha1.Application{}
		if err := json.Unmarshal(raw, app); err != nil {
			t.Fatal(err)
		}
		// What Argo CD and others add must not look like drift.
		app.Labels["other"] = "x"
		app.Annotations["argocd.argoproj.io/refresh"] = "normal"
		app.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
		if mutate != nil {
			mutate(app)
		}
		return app
	}
	if !want.upToDate(live(nil)) {
		t.Error("an Application as applied, plus others' fields, is reported as drifted")
	}
	for name, mutate := range map[string]func(*argov1alpha1.Application){
		"path":        func(a *argov1alpha1.Application) { a.Spec.Source.Path = "other" },
		"revision":    func(a *argov1alpha1.Application) { a.Spec.Source.TargetRevision = "" },
		"project":     func(a *argov1alpha1.Application) { a.Spec.Project = "default" },
		"destination": func(a *argov1alpha1.Application) { a.Spec.Destination.Namespace = "kube-system" },
		"manual":      func(a *argov1alpha1.Application) { a.Spec.SyncPolicy.Automated = nil },
		"options":     func(a *argov1alpha1.Application) { a.Spec.SyncPolicy.SyncOptions = nil },
		"retry":       func(a *argov1alpha1.Application) { a.Spec.SyncPolicy.Retry.Limit = 5 },
		// Argo CD's finalizer deletes with the controller's own identity, which may not write.
		"finalizer": func(a *argov1alpha1.Application) { a.Finalizers = []string{argoBackgroundFinalizer} },
		"label":     func(a *argov1alpha1.Application) { delete(a.Labels, argocd.LabelDeploymentUID) },
	} {
		if want.upToDate(live(mutate)) {
			t.Errorf("a change of %s is not seen", name)
		}
	}
	if want.upToDate(nil) {
		t.Error("a missing Application is reported up to date")
	}
}
