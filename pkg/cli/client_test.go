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
)

// The plugin's client of the GitOps API asks for protobuf first, and JSON still does.
func TestClientPrefersProtobuf(t *testing.T) {
	accept := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept <- r.Header.Get("Accept")
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	defer srv.Close()
	c, err := NewOptions(genericiooptions.NewTestIOStreamsDiscard()).NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.ManagedGitopsV1alpha1().GitOpsDeployments("ns").Get(context.Background(), "d", metav1.GetOptions{})
	if got, want := <-accept, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON; got != want {
		t.Errorf("Accept %q, want %q", got, want)
	}
}
