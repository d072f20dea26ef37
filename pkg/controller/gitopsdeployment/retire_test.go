package gitopsdeployment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoglob "github.com/argoproj/argo-cd/v2/util/glob"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
)

// liveSource is the source of a GitOpsDeployment's Application before it is retired.
func liveSource() *argov1alpha1.ApplicationSource {
	return &argov1alpha1.ApplicationSource{RepoURL: "https://example.com/org/repo", Path: "env/dev", TargetRevision: "main"}
}

// emptiedSource is the source emptiedApplication gives an Application at revision.
func emptiedSource(revision string) *argov1alpha1.ApplicationSource {
	return &argov1alpha1.ApplicationSource{
		RepoURL: "https://example.com/org/repo", Path: emptiedPath, TargetRevision: revision,
		Directory: &argov1alpha1.ApplicationSourceDirectory{Exclude: emptiedExclude},
	}
}

// retiredApp is an Application that is emptied and that Argo CD reports empty: ready to go.
// Each mutation takes one condition away.
func retiredApp(mutate ...func(*argov1alpha1.Application)) *argov1alpha1.Application {
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{
			Name: "gitopsdepl-uid-1", Namespace: "argocd", UID: "app-uid", ResourceVersion: "7",
			Labels:      map[string]string{argocd.LabelDeploymentNamespace: "jane", argocd.LabelDeploymentUID: "uid-1"},
			Annotations: map[string]string{argocd.AnnotationDeploymentName: "web"},
		},
		Spec: argov1alpha1.ApplicationSpec{
			Source:      emptiedSource("abc123"),
			Destination: localJane,
			Project:     argocd.ProjectName("jane"),
		},
	}
	app.Status.Sync.ComparedTo.Source = *emptiedSource("abc123")
	app.Status.Sync.Revision = "abc123"
	app.Status.Sync.Status = argov1alpha1.SyncStatusCodeSynced
	app.Status.OperationState = &argov1alpha1.OperationState{Phase: "Succeeded"}
	for _, m := range mutate {
		m(app)
	}
	return app
}

func withLiveSource(app *argov1alpha1.Application) { app.Spec.Source = liveSource() }

func TestPlanRetirement(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name            string
		app             *argov1alpha1.Application
		destinationGone bool
		want            retireStep
	}{
		{name: "being deleted", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.DeletionTimestamp = &now })},
		// Argo CD would delete with its own identity, which may not: stuck for ever.
		{name: "deleted by someone else with Argo CD's finalizer", want: retireUnblock,
			app: retiredApp(func(a *argov1alpha1.Application) {
				a.DeletionTimestamp = &now
				a.Finalizers = []string{argoForegroundFinalizer}
			})},
		// Argo CD reports no resources, and Unknown, when it could not read the cluster.
		{name: "emptied, cluster unreadable", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeUnknown })},
		{name: "emptied, still out of sync", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.Sync.Status = argov1alpha1.SyncStatusCodeOutOfSync })},
		{name: "being deleted, still deploying", want: retireWait, destinationGone: true,
			app: retiredApp(withLiveSource, func(a *argov1alpha1.Application) { a.DeletionTimestamp = &now })},
		{name: "not emptied", want: retireEmpty, app: retiredApp(withLiveSource)},
		{name: "not emptied, destination gone", want: retireEmpty, destinationGone: true, app: retiredApp(withLiveSource)},
		{name: "no source", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Spec.Source = nil })},
		{name: "another exclude", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Spec.Source.Directory.Exclude = "*.yaml" })},
		{name: "another path", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Spec.Source.Path = "env/dev" })},
		{name: "no directory", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Spec.Source.Directory = nil })},
		{name: "emptied with the background finalizer", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Finalizers = []string{"other", argoBackgroundFinalizer} })},
		{name: "emptied with the foreground finalizer", want: retireEmpty,
			app: retiredApp(func(a *argov1alpha1.Application) {
				a.Finalizers = []string{"resources-finalizer.argocd.argoproj.io"}
			})},
		{name: "emptied with a finalizer, destination gone", want: retireEmpty, destinationGone: true,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Finalizers = []string{argoBackgroundFinalizer} })},
		{name: "emptied with another finalizer", want: retireDelete,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Finalizers = []string{"example.com/other"} })},
		{name: "emptied and reported empty", want: retireDelete, app: retiredApp()},
		{name: "emptied, never synced", want: retireDelete,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.OperationState = nil })},
		{name: "emptied, destination gone, Argo CD not done", want: retireDelete, destinationGone: true,
			app: retiredApp(func(a *argov1alpha1.Application) {
				a.Status.Sync.ComparedTo.Source = *liveSource()
				a.Status.Resources = []argov1alpha1.ResourceStatus{{Kind: "ConfigMap", Namespace: "jane", Name: "c"}}
				a.Status.OperationState.Phase = argocd.PhaseRunning
				a.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Prune: true}}
			})},
		{name: "compared to the old source", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.Sync.ComparedTo.Source = *liveSource() })},
		{name: "not compared yet", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.Sync.ComparedTo = argov1alpha1.ComparedTo{} })},
		{name: "resources left", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) {
				a.Status.Resources = []argov1alpha1.ResourceStatus{{Kind: "ConfigMap", Namespace: "jane", Name: "c", RequiresPruning: true}}
			})},
		{name: "sync running", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) { a.Status.OperationState.Phase = argocd.PhaseRunning })},
		{name: "sync requested", want: retireWait,
			app: retiredApp(func(a *argov1alpha1.Application) {
				a.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Prune: true}}
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planRetirement(tc.app, tc.destinationGone); got != tc.want {
				t.Errorf("planRetirement = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEmptiedApplication(t *testing.T) {
	live := func(statusRevision string) *argov1alpha1.Application {
		app := retiredApp(withLiveSource, func(a *argov1alpha1.Application) {
			a.Finalizers = []string{argoBackgroundFinalizer}
			a.Labels["example.com/extra"] = "x"
			a.Spec.Source.Helm = &argov1alpha1.ApplicationSourceHelm{ReleaseName: "r"}
			a.Spec.Destination = argov1alpha1.ApplicationDestination{Name: "managed-env-env-uid", Namespace: "web"}
			a.Spec.SyncPolicy = &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{SelfHeal: true}}
			a.Status.Sync.Revision = statusRevision
		})
		return app
	}

	app := live("abc123")
	got := emptiedApplication(app)
	if got.Kind != "Application" || got.APIVersion != "argoproj.io/v1alpha1" {
		t.Errorf("type = %s %s", got.APIVersion, got.Kind)
	}
	if got.Metadata.Name != app.Name || got.Metadata.Namespace != app.Namespace {
		t.Errorf("name = %s/%s, want %s/%s", got.Metadata.Namespace, got.Metadata.Name, app.Namespace, app.Name)
	}
	if len(got.Metadata.Labels) != len(app.Labels) {
		t.Errorf("labels = %v, want %v", got.Metadata.Labels, app.Labels)
	}
	for k, v := range app.Labels {
		if got.Metadata.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Metadata.Labels[k], v)
		}
	}
	if got.Metadata.Annotations[argocd.AnnotationDeploymentName] != "web" {
		t.Errorf("annotations = %v", got.Metadata.Annotations)
	}
	src := got.Spec.Source
	if src == nil || src.RepoURL != app.Spec.Source.RepoURL || src.Path != "." || src.Directory == nil || src.Directory.Exclude != "*" ||
		src.Helm != nil || src.Chart != "" {
		t.Fatalf("source = %+v, want the repository's root with every file excluded", src)
	}
	if src.TargetRevision != "abc123" {
		t.Errorf("targetRevision = %q, want the last synced revision abc123", src.TargetRevision)
	}
	if got.Spec.Destination != app.Spec.Destination || got.Spec.Project != app.Spec.Project {
		t.Errorf("destination/project = %+v %s, want %+v %s", got.Spec.Destination, got.Spec.Project, app.Spec.Destination, app.Spec.Project)
	}
	sp := got.Spec.SyncPolicy
	if sp == nil || sp.Automated == nil || !sp.Automated.Prune || !sp.Automated.AllowEmpty {
		t.Fatalf("syncPolicy = %+v, want automated with prune and allowEmpty", sp)
	}
	if sp.Automated.SelfHeal {
		t.Error("the emptied Application keeps selfHeal")
	}

	body, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "finalizers") {
		t.Errorf("the apply body names finalizers; without them the apply takes Argo CD's off: %s", body)
	}
	// What the apply leaves is an Application planRetirement sees as emptied and without a
	// finalizer, so it waits for Argo CD rather than applying again.
	var applied argov1alpha1.Application
	if err := json.Unmarshal(body, &applied); err != nil {
		t.Fatal(err)
	}
	if !isEmptied(applied.Spec.Source) || hasArgoFinalizer(&applied) {
		t.Errorf("the applied Application is not seen as emptied: %s", body)
	}
	if step := planRetirement(&applied, false); step != retireWait {
		t.Errorf("planRetirement of the freshly emptied Application = %v, want wait", step)
	}

	if got := emptiedApplication(live("")).Spec.Source.TargetRevision; got != "main" {
		t.Errorf("targetRevision without a synced revision = %q, want the spec's main", got)
	}
	noSource := live("")
	noSource.Spec.Source = nil
	if got := emptiedApplication(noSource).Spec.Source; !isEmptied(got) || got.RepoURL != "" {
		t.Errorf("source of an Application without one = %+v", got)
	}
}

// TestEmptiedExcludeMatchesEveryFile checks emptiedExclude with the very function Argo CD's
// repo-server excludes a directory Application's files with (reposerver/repository,
// getPotentiallyValidManifestFile: glob.Match(exclude, relPath), no separators), relPath
// being relative to the Application's path.
func TestEmptiedExcludeMatchesEveryFile(t *testing.T) {
	for _, p := range []string{
		"a.yaml", "dir/b.yml", "deep/er/c.json", "x.jsonnet", ".hidden.yaml", "dir with space/d.yaml", "[weird]{name}.yaml",
	} {
		if !argoglob.Match(emptiedExclude, p) {
			t.Errorf("Argo CD would not exclude %q, and deploy it while the Application retires", p)
		}
	}
	if emptiedPath != "." {
		t.Errorf("emptiedPath = %q, want the repository's root, which every revision has", emptiedPath)
	}
}

// retireFixture is a Controller with fake clients, enough for retireApplication.
func retireFixture(t *testing.T, app *argov1alpha1.Application, kubeObjs ...runtime.Object) (*Controller, *argofake.Clientset, *kubefake.Clientset) {
	t.Helper()
	argo := argofake.NewSimpleClientset(app)
	kube := kubefake.NewClientset(kubeObjs...)
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	a := &Controller{
		argo: argo, kube: kube, argoNamespace: "argocd", localServer: argocd.InClusterServer,
		argoSecrets: corelisters.NewSecretLister(secrets),
		ops:         operations.NewRecorder(nil, "argocd"),
	}
	argo.ClearActions()
	return a, argo, kube
}

func TestRetireApplication(t *testing.T) {
	ctx := context.Background()
	janeNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jane"}}

	t.Run("empties a live Application, terminating its sync first", func(t *testing.T) {
		app := retiredApp(withLiveSource, func(a *argov1alpha1.Application) { a.Status.OperationState.Phase = argocd.PhaseRunning })
		a, argo, _ := retireFixture(t, app, janeNS)
		var applied []byte
		argo.PrependReactor("patch", "applications", func(action clienttesting.Action) (bool, runtime.Object, error) {
			p := action.(clienttesting.PatchAction)
			if p.GetPatchType() == types.ApplyPatchType {
				applied = p.GetPatch()
			}
			return true, app, nil
		})
		if err := a.retireApplication(ctx, app); err != nil {
			t.Fatal(err)
		}
		acts := argo.Actions()
		if len(acts) != 2 {
			t.Fatalf("actions = %v, want a terminate patch then an apply", acts)
		}
		if p := acts[0].(clienttesting.PatchAction); p.GetPatchType() != types.MergePatchType || !strings.Contains(string(p.GetPatch()), `"phase":"`+argocd.PhaseTerminating+`"`) {
			t.Errorf("first action = %s %s, want the merge patch that terminates the running sync", p.GetPatchType(), p.GetPatch())
		}
		want, _ := json.Marshal(emptiedApplication(app))
		if string(applied) != string(want) {
			t.Errorf("applied %s, want %s", applied, want)
		}
	})

	t.Run("deletes an Application reported empty, by UID", func(t *testing.T) {
		app := retiredApp()
		a, argo, _ := retireFixture(t, app, janeNS)
		if err := a.retireApplication(ctx, app); err != nil {
			t.Fatal(err)
		}
		acts := argo.Actions()
		if len(acts) != 1 || !acts[0].Matches("delete", "applications") {
			t.Fatalf("actions = %v, want one delete", acts)
		}
		if pre := acts[0].(clienttesting.DeleteAction).GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != app.UID {
			t.Errorf("delete preconditions = %+v, want the Application's UID", pre)
		}
	})

	t.Run("deletes an emptied Application whose namespace is being deleted", func(t *testing.T) {
		app := retiredApp(func(a *argov1alpha1.Application) {
			a.Status.Resources = []argov1alpha1.ResourceStatus{{Kind: "ConfigMap", Namespace: "jane", Name: "c"}}
		})
		now := metav1.Now()
		terminating := janeNS.DeepCopy()
		terminating.DeletionTimestamp = &now
		a, argo, _ := retireFixture(t, app, terminating)
		if err := a.retireApplication(ctx, app); err != nil {
			t.Fatal(err)
		}
		if acts := argo.Actions(); len(acts) != 1 || !acts[0].Matches("delete", "applications") {
			t.Fatalf("actions = %v, want one delete", acts)
		}
	})

	t.Run("waits while Argo CD prunes", func(t *testing.T) {
		app := retiredApp(func(a *argov1alpha1.Application) {
			a.Status.Resources = []argov1alpha1.ResourceStatus{{Kind: "ConfigMap", Namespace: "jane", Name: "c"}}
		})
		a, argo, _ := retireFixture(t, app, janeNS)
		if err := a.retireApplication(ctx, app); err != nil {
			t.Fatal(err)
		}
		if acts := argo.Actions(); len(acts) != 0 {
			t.Fatalf("actions = %v, want none", acts)
		}
	})
}

func TestRetireDestinationGone(t *testing.T) {
	ctx := context.Background()
	now := metav1.Now()
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving", DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}
	a, _, _ := retireFixture(t, retiredApp(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jane"}}, terminating)
	secrets := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := secrets.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "managed-env-env-uid", Namespace: "argocd"}}); err != nil {
		t.Fatal(err)
	}
	a.argoSecrets = corelisters.NewSecretLister(secrets)
	for _, tc := range []struct {
		dest argov1alpha1.ApplicationDestination
		want bool
	}{
		{argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "jane"}, false},
		{argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "leaving"}, true},
		{argov1alpha1.ApplicationDestination{Server: argocd.InClusterServer, Namespace: "gone"}, true},
		{argov1alpha1.ApplicationDestination{Name: "managed-env-env-uid", Namespace: "web"}, false},
		{argov1alpha1.ApplicationDestination{Name: "managed-env-gone", Namespace: "web"}, true},
	} {
		got, err := a.destinationGone(ctx, tc.dest)
		if err != nil || got != tc.want {
			t.Errorf("destinationGone(%+v) = %v, %v; want %v", tc.dest, got, err, tc.want)
		}
	}
}
