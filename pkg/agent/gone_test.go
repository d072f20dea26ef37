package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/autopromotion"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetbinder"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/deploymenttargetreclaim"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/environment"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/namespaceprovisioner"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotionrun"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/snapshotenvironmentbinding"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentpreview"
	"github.com/gitops-service/gitops-service/pkg/controller/deploymentrecord"
	"github.com/gitops-service/gitops-service/pkg/controller/gitopsdeployment"
	"github.com/gitops-service/gitops-service/pkg/controller/managedenvironment"
	"github.com/gitops-service/gitops-service/pkg/controller/placement"
	"github.com/gitops-service/gitops-service/pkg/controller/repositorycredential"
	"github.com/gitops-service/gitops-service/pkg/controller/syncrun"
	"github.com/gitops-service/gitops-service/pkg/controller/tenancy"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

// TestAKeyWhoseObjectIsGoneIsNothingToDo holds every controller of the agent to one rule: the
// key of an object that no longer exists (a retry, a timer's recheck or a dependency's event
// that arrives after the delete) is nothing to do: no error, no panic, no write. The
// controllers are those the agent wires, all of them enabled, over fake clients and empty
// caches; the table names each one, so that a controller added to the agent fails here until
// it is listed.
func TestAKeyWhoseObjectIsGoneIsNothingToDo(t *testing.T) {
	all, err := EnabledControllers(KnownControllers)
	if err != nil {
		t.Fatal(err)
	}
	ca, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		// agent is how the agent runs: alone (every namespace) or as an instance of a fleet.
		agent string
		// controllers are the controllers of the agent, by their names.
		controllers []string
	}{
		{agent: "alone", controllers: []string{gitopsdeployment.Name, gitopsdeployment.ProjectRefreshName, repositorycredential.Name,
			syncrun.Name, deploymentrecord.Name, deploymentpreview.Name, managedenvironment.Name, environment.Name, snapshotenvironmentbinding.Name, promotionrun.Name,
			autopromotion.Name, deploymenttargetbinder.Name, deploymenttargetreclaim.Name, namespaceprovisioner.Name, devsandboxprovisioner.Name, placement.Name}},
		{agent: "instance of a fleet", controllers: []string{tenancy.HandoverName, gitopsdeployment.Name, gitopsdeployment.ProjectRefreshName,
			repositorycredential.Name, syncrun.Name, deploymentrecord.Name, deploymentpreview.Name, managedenvironment.Name, environment.Name, snapshotenvironmentbinding.Name,
			promotionrun.Name, autopromotion.Name, deploymenttargetbinder.Name, deploymenttargetreclaim.Name, namespaceprovisioner.Name,
			devsandboxprovisioner.Name, placement.Name}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inst := &managedv1alpha1.ArgoCDInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"},
				Spec: managedv1alpha1.ArgoCDInstanceSpec{Namespace: "argocd", Capacity: 10}}
			gitops, argo, kube := gitopsfake.NewSimpleClientset(inst), argofake.NewSimpleClientset(), kubefake.NewClientset()
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			cfg := Config{Clients: Clients{GitOps: gitops, Argo: argo, Kube: kube, Dynamic: dyn}, ArgoNamespace: "argocd", Controllers: all,
				NamespaceProvisioner: NamespaceProvisioner{Server: "https://127.0.0.1:6443", CA: ca}}
			if tc.agent == "instance of a fleet" {
				cfg.Instance = "main"
			}
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range a.factories {
				f.Start(ctx.Done())
			}
			if !cache.WaitForCacheSync(ctx.Done(), a.synced...) {
				t.Fatal("caches did not sync")
			}

			var names []string
			for _, c := range slices.Concat(a.argoCDPackaged, a.appStudio) {
				if c.Controller != nil {
					names = append(names, c.Name)
				}
			}
			if !sameSet(names, tc.controllers) {
				t.Fatalf("the agent runs %v; the table lists %v", names, tc.controllers)
			}
			fakes := map[string]*clienttesting.Fake{"gitops": &gitops.Fake, "argo": &argo.Fake, "kube": &kube.Fake, "dynamic": &dyn.Fake}
			for _, c := range slices.Concat(a.argoCDPackaged, a.appStudio) {
				if c.Controller == nil {
					continue
				}
				// A namespaced key, and a cluster-scoped one for the controllers of cluster-scoped
				// kinds (ArgoCDInstances, TenantPlacements).
				for _, key := range []string{"ns/gone", "gone"} {
					t.Run(c.Name+" "+key, func(t *testing.T) {
						for _, f := range fakes {
							f.ClearActions()
						}
						err := func() (err error) {
							defer func() {
								if r := recover(); r != nil {
									err = fmt.Errorf("panic: %v", r)
								}
							}()
							return c.Reconcile(ctx, key)
						}()
						if err != nil {
							t.Errorf("reconcile: %v", err)
						}
						for client, f := range fakes {
							for _, action := range f.Actions() {
								if v := action.GetVerb(); v != "get" && v != "list" && v != "watch" {
									t.Errorf("wrote through the %s client: %s %s", client, v, action.GetResource().Resource)
								}
							}
						}
					})
				}
			}
		})
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}
