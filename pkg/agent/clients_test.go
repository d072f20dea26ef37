package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	argov1alpha1 "github.com/argoproj/argo-cd/v2/pkg/apis/application/v1alpha1"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// The clients of our groups speak protobuf; Argo CD's (CRDs, which kube-apiserver serves in
// JSON only), Kubernetes' and the dynamic one keep their defaults.
func TestNewClientsSpeakProtobufOnlyToOurGroups(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][2]string{} // group → Content-Type, Accept
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		group := "core"
		if parts[0] == "apis" && len(parts) > 1 {
			group = parts[1]
		}
		mu.Lock()
		seen[group] = [2]string{r.Header.Get("Content-Type"), r.Header.Get("Accept")}
		mu.Unlock()
		http.Error(w, "recorded", http.StatusTeapot)
	}))
	defer srv.Close()

	c, err := NewClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _ = c.GitOps.ManagedGitopsV1alpha1().GitOpsDeployments("ns").Create(ctx, &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}}, metav1.CreateOptions{})
	_, _ = c.Operations.AppStudioV1alpha1().Environments("ns").Get(ctx, "e", metav1.GetOptions{})
	_, _ = c.Argo.ArgoprojV1alpha1().Applications("argocd").Create(ctx, &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	_, _ = c.Kube.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	_, _ = c.Dynamic.Resource(schema.GroupVersionResource{Group: "toolchain.dev.openshift.com", Version: "v1alpha1", Resource: "spacerequests"}).Namespace("ns").Get(ctx, "s", metav1.GetOptions{})

	protobufFirst := runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	for group, want := range map[string][2]string{
		"managed-gitops.redhat.com":   {runtime.ContentTypeProtobuf, protobufFirst},
		"appstudio.redhat.com":        {"", protobufFirst},
		"argoproj.io":                 {runtime.ContentTypeJSON, "application/json, */*"},
		"core":                        {runtime.ContentTypeJSON, "application/json, */*"},
		"toolchain.dev.openshift.com": {"", "application/json"},
	} {
		mu.Lock()
		got, ok := seen[group]
		mu.Unlock()
		if !ok {
			t.Errorf("%s: no request", group)
			continue
		}
		if got != want {
			t.Errorf("%s: Content-Type %q, Accept %q; want %q, %q", group, got[0], got[1], want[0], want[1])
		}
	}
}
