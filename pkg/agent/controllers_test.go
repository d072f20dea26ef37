package agent

import (
	"maps"
	"slices"
	"strings"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/repositorycredential"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

func TestEnabledControllers(t *testing.T) {
	for _, tc := range []struct {
		list    []string
		want    []string
		wantErr string
	}{
		{list: []string{"*"}, want: []string{"argocd", "deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"*", "-argocd"}, want: []string{"deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		{list: []string{"argocd"}, want: []string{"argocd"}},
		{list: []string{"-argocd", "*"}, want: []string{"deploymenttargetbinder", "deploymenttargetreclaim", "devsandboxprovisioner", "environment", "placement", "promotionrun", "snapshotenvironmentbinding"}},
		// Disabled by default: only when named.
		{list: []string{"*", "namespaceprovisioner"}, want: KnownControllers},
		{list: []string{"namespaceprovisioner"}, want: []string{"namespaceprovisioner"}},
		{list: []string{"promotionrun", "environment"}, want: []string{"environment", "promotionrun"}},
		{list: []string{"*", "-argocd", "-environment", "-snapshotenvironmentbinding", "-promotionrun", "-deploymenttargetbinder", "-deploymenttargetreclaim", "-devsandboxprovisioner", "-placement"},
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

// The GitOpsDeployment (and project refresh), RepositoryCredential, SyncRun and
// ManagedEnvironment controllers, packaged under pkg/controller, are Argo CD controllers: they
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
	argoCDNames := []string{gitopsdeployment.Name, gitopsdeployment.ProjectRefreshName, repositorycredential.Name, syncrun.Name, managedenvironment.Name}
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
