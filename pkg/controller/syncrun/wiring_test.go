package syncrun

import (
	"context"
	"testing"

	argofake "github.com/argoproj/argo-cd/v2/pkg/client/clientset/versioned/fake"
	argoinformers "github.com/argoproj/argo-cd/v2/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/gitops-service/gitops-service/pkg/controller/argocd"
	"github.com/gitops-service/gitops-service/pkg/controller/controllertest"
	"github.com/gitops-service/gitops-service/pkg/controller/operations"
	gitopsfake "github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
	"github.com/gitops-service/gitops-service/pkg/generated/informers/externalversions"
)

// New wires the controller into shared informers (the Application informer may carry the
// GitOpsDeployment controller's index already), and a SyncRun created for a manual deployment
// reaches it through the SyncRun informer's index: it asks Argo CD for the Application's
// refresh on the SyncRun's behalf.
func TestNewReconcilesFromInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := manualDeployment()
	app := appOf(d)
	gitops := gitopsfake.NewSimpleClientset(d)
	argo := argofake.NewSimpleClientset(app)
	gitopsInformers := externalversions.NewSharedInformerFactory(gitops, 0)
	argoInformers := argoinformers.NewSharedInformerFactory(argo, 0)
	managed := gitopsInformers.ManagedGitops().V1alpha1()
	apps := argoInformers.Argoproj().V1alpha1().Applications()
	// The GitOpsDeployment controller adds the index first.
	if err := argocd.AddDeploymentIndex(apps.Informer()); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	c, err := New(managed.GitOpsDeploymentSyncRuns(), managed.GitOpsDeployments(), apps, gitops, argo, operations.NewRecorder(gitops, "argocd"), rec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name {
		t.Errorf("name %q, want %q", c.Name, Name)
	}
	controllertest.StartInformers(t, ctx, gitopsInformers, argoInformers)
	go c.Run(ctx, 1)

	run := syncRun("sync", srLater)
	if _, err := gitops.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns(run.Namespace).Create(ctx, run, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, ctx, "the refresh asked for the SyncRun", func() bool {
		got, err := argo.ArgoprojV1alpha1().Applications(app.Namespace).Get(ctx, app.Name, metav1.GetOptions{})
		return err == nil && got.Annotations[AnnotationSyncRunRefresh] == string(run.UID) && got.Annotations[annotationArgoRefresh] == refreshNormal
	})
}
