package argocd

import (
	"context"
	"errors"
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"
	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

func app() *argov1alpha1.Application {
	return &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{
		Namespace: "argocd", Name: ApplicationName("uid-web"), ResourceVersion: "7",
		Labels:      map[string]string{LabelDeploymentNamespace: "jane", LabelDeploymentUID: "uid-web"},
		Annotations: map[string]string{AnnotationDeploymentName: "web"},
	}}
}

func TestNames(t *testing.T) {
	if got := ApplicationName("0b1c"); got != "gitopsdepl-0b1c" {
		t.Errorf("ApplicationName %q", got)
	}
	if got := ProjectName("jane"); got != "gitops-tenant-jane" {
		t.Errorf("ProjectName %q", got)
	}
}

func TestApplicationOwner(t *testing.T) {
	if key, ok := ApplicationOwner(app()); !ok || key != "jane/web" {
		t.Errorf("owner %q %v, want jane/web", key, ok)
	}
	if key, ok := ApplicationOwner(cache.DeletedFinalStateUnknown{Key: "argocd/x", Obj: app()}); !ok || key != "jane/web" {
		t.Errorf("owner of a tombstone %q %v, want jane/web", key, ok)
	}
	foreign := app()
	foreign.Annotations = nil
	if key, ok := ApplicationOwner(foreign); ok {
		t.Errorf("an Application the agent did not make has owner %q", key)
	}
}

// Every controller sharing the Application informer asks for the index; the second ask is no
// conflict.
func TestAddDeploymentIndexTwice(t *testing.T) {
	inf := argoinformers.NewSharedInformerFactory(argofake.NewSimpleClientset(), 0).Argoproj().V1alpha1().Applications().Informer()
	for i := 0; i < 2; i++ {
		if err := AddDeploymentIndex(inf); err != nil {
			t.Fatal(err)
		}
	}
	if err := inf.GetIndexer().Add(app()); err != nil {
		t.Fatal(err)
	}
	if objs, err := inf.GetIndexer().ByIndex(ByDeployment, "jane/web"); err != nil || len(objs) != 1 {
		t.Fatalf("ByIndex: %d objects, %v", len(objs), err)
	}
}

// recorded runs the recorder until its Operations are written: their messages.
func recorded(t *testing.T, ctx context.Context, gitops *gitopsfake.Clientset, ops *operations.Recorder) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	// A change with a Name can be waited for: Ensure returns once its queued record is written,
	// and with the same target, it is written after the others (one writer per target, in order).
	marker := operations.Change{Target: managedv1alpha1.OperationTarget{Kind: "Application", Namespace: "argocd", Name: app().Name}, Action: "marked", Name: "marker"}
	ops.Record(marker)
	go func() { defer close(done); _ = ops.Ensure(ctx, marker) }()
	go ops.Run(ctx, 0x7fffffff)
	<-done
	list, err := gitops.ManagedGitopsV1alpha1().Operations("argocd").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, op := range list.Items {
		if op.Name != "marker" {
			out = append(out, op.Status.Message)
		}
	}
	return out
}

func TestPatchApplication(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		err      error
		wantErr  bool
		recorded int
	}{
		{name: "patched", recorded: 1},
		{name: "gone", err: apierrors.NewNotFound(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, "x")},
		{name: "conflict", err: apierrors.NewConflict(schema.GroupResource{Group: "argoproj.io", Resource: "applications"}, "x", errors.New("changed")), wantErr: true},
		{name: "failed", err: errors.New("boom"), wantErr: true, recorded: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := app()
			argo := argofake.NewSimpleClientset(a.DeepCopy())
			var patch string
			argo.PrependReactor("patch", "applications", func(action clienttesting.Action) (bool, runtime.Object, error) {
				patch = string(action.(clienttesting.PatchAction).GetPatch())
				if tc.err != nil {
					return true, nil, tc.err
				}
				return true, a, nil
			})
			gitops := gitopsfake.NewSimpleClientset()
			controllertest.ServerFields(&gitops.Fake)
			ops := operations.NewRecorder(gitops, "argocd")
			err := PatchApplication(ctx, argo, ops, a, TerminatePatch(), ApplicationChange(a, managedv1alpha1.OperationSource{Kind: "GitOpsDeploymentSyncRun"}, "terminated the sync of"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if !strings.Contains(patch, `"resourceVersion":"7"`) || !strings.Contains(patch, `"phase":"Terminating"`) {
				t.Errorf("patch %s, want the phase guarded by the resourceVersion", patch)
			}
			if got := recorded(t, ctx, gitops, ops); len(got) != tc.recorded {
				t.Errorf("recorded %v, want %d", got, tc.recorded)
			}
		})
	}
}
