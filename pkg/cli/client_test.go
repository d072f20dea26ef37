package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The plugin's client of the GitOps API asks for protobuf first, JSON still acceptable, and
// writes JSON, which a gitops-apiserver of any version takes (an older one refuses protobuf
// bodies with 415, and the plugin is installed apart from the service).
func TestClientPrefersProtobufAnswersAndWritesJSON(t *testing.T) {
	type seen struct{ accept, contentType string }
	requests := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- seen{r.Header.Get("Accept"), r.Header.Get("Content-Type")}
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	defer srv.Close()
	c, err := NewOptions(genericiooptions.NewTestIOStreamsDiscard()).NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = c.ManagedGitopsV1alpha1().GitOpsDeployments("ns").Get(ctx, "d", metav1.GetOptions{})
	if got, want := (<-requests).accept, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON; got != want {
		t.Errorf("get: Accept %q, want %q", got, want)
	}
	_, _ = c.ManagedGitopsV1alpha1().GitOpsDeploymentSyncRuns("ns").Create(ctx,
		&managedv1alpha1.GitOpsDeploymentSyncRun{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{})
	if got := (<-requests).contentType; got != runtime.ContentTypeJSON {
		t.Errorf("create: Content-Type %q, want %q", got, runtime.ContentTypeJSON)
	}
}
