package agent

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentpreview"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentrecord"
	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/repositorycredential"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

func TestEnabledControllers(t *testing.T) {
	for _, tc := range []struct {
		list    []string
		want    []string
		wantErr string
	}{
		{list: []string{"*"}, want: []string{"argocd", "autopromotion", "deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"*", "-argocd"}, want: []string{"autopromotion", "deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"argocd"}, want: []string{"argocd"}},
		{list: []string{"-argocd", "*"}, want: []string{"autopromotion", "deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		// Disabled by default: only when named.
		{list: []string{"*", "namespaceprovisioner"}, want: KnownControllers},
		{list: []string{"namespaceprovisioner"}, want: []string{"namespaceprovisioner"}},
		{list: []string{"promotionrun", "environment"}, want: []string{"environment", "promotionrun"}},
		{list: []string{"*", "-argocd", "-environment", "-snapshotenvironmentbinding", "-promotionrun", "-autopromotion", "-deploymenttargetbinder", "-deploymenttargetreclaim", "-devsandboxprovisioner", "-placement"},
			wantErr: "enables no controller"},
		{list: []string{"-argocd"}, wantErr: "enables no controller"},
		{list: nil, wantErr: "enables no controller"},
		{list: []string{"*", "deployment"}, wantErr: `unknown controller "deployment"; known: argocd, environment`},
		{list: []string{"-foo"}, wantErr: `unknown controller "-foo"`},
		{list: []string{"argocd", "-argocd"}, wantErr: `controller "argocd" is both enabled and disabled`},
	} {
		t.Run(strings.Join(tc.list, ","), func(t *testing.T) {
			got, err := EnabledControllers(tc.list)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(maps.Keys(got))
			if want := slices.Sorted(slices.Values(tc.want)); !slices.Equal(names, want) {
				t.Errorf("enabled %v, want %v", names, want)
			}
		})
	}
}

// The GitOpsDeployment (and project refresh), RepositoryCredential, SyncRun, DeploymentRecord
// and ManagedEnvironment controllers, packaged under pkg/controller, are Argo CD controllers: they
// run under the Argo CD Lease, never the AppStudio one.
func TestPackagedArgoCDControllersRunUnderTheArgoCDLease(t *testing.T) {
	clients := Clients{GitOps: gitopsfake.NewSimpleClientset(), Argo: argofake.NewSimpleClientset(), Kube: kubefake.NewClientset(),
		Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	names := func(cs []packagedController) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	argoCDNames := []string{gitopsdeployment.Name, gitopsdeployment.ProjectRefreshName, repositorycredential.Name, syncrun.Name, deploymentrecord.Name, deploymentpreview.Name, managedenvironment.Name}
	for _, tc := range []struct {
		controllers   []string
		argoCD        []string
		wantAppStudio bool
	}{
		{controllers: []string{"argocd"}, argoCD: argoCDNames},
		{controllers: []string{"*", "-argocd"}, wantAppStudio: true},
	} {
		t.Run(strings.Join(tc.controllers, ","), func(t *testing.T) {
			enabled, err := EnabledControllers(tc.controllers)
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(Config{Clients: clients, ArgoNamespace: "argocd", Controllers: enabled})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(a.argoCDPackaged); !slices.Equal(got, tc.argoCD) {
				t.Errorf("packaged Argo CD controllers %v, want %v", got, tc.argoCD)
			}
			if got := names(a.appStudio); (len(got) > 0) != tc.wantAppStudio || slices.ContainsFunc(got, func(n string) bool { return slices.Contains(argoCDNames, n) }) {
				t.Errorf("AppStudio controllers %v", got)
			}
			// Each AppStudio controller runs under a Lease of its own, named after it.
			var leases, want []string
			for _, c := range a.appStudio {
				leases = append(leases, AppStudioLease(c.name))
			}
			for name := range enabled {
				if name != ArgoCDControllers {
					want = append(want, "gitops-agent-"+name)
				}
			}
			if slices.Sort(leases); !slices.Equal(leases, slices.Sorted(slices.Values(want))) {
				t.Errorf("AppStudio Leases %v, want one per enabled controller: %v", leases, want)
			}
		})
	}
}

// An agent of a fleet serves its instance's tenants, with the hand-over and its report beside
// the Argo CD controllers; one without --instance refuses to start where a fleet runs.
func TestAgentOfAFleet(t *testing.T) {
	ctx := context.Background()
	inst := &managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"},
		Spec: managedv1alpha1.ArgoCDInstanceSpec{Namespace: "argocd", Capacity: 10}}
	clients := Clients{GitOps: gitopsfake.NewSimpleClientset(inst), Argo: argofake.NewSimpleClientset(), Kube: kubefake.NewClientset(),
		Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	enabled, err := EnabledControllers([]string{"argocd"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Clients: clients, ArgoNamespace: "argocd", Instance: "main", Controllers: enabled})
	if err != nil {
		t.Fatal(err)
	}
	if a.tenants == nil || !slices.ContainsFunc(a.argoCDPackaged, func(c packagedController) bool {
		return c.Controller != nil && c.Name == tenancy.HandoverName
	}) {
		t.Error("an agent of a fleet runs no hand-over")
	}
	for _, check := range a.preflight {
		if err := check(ctx); err != nil {
			t.Errorf("preflight of the instance's agent: %v", err)
		}
	}

	unplaced, err := New(Config{Clients: clients, ArgoNamespace: "argocd", Controllers: enabled})
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	for _, check := range unplaced.preflight {
		if err := check(ctx); err != nil {
			failed = err
		}
	}
	if failed == nil || !strings.Contains(failed.Error(), "start the agent with --instance") {
		t.Errorf("preflight without --instance in a fleet: %v", failed)
	}
}
