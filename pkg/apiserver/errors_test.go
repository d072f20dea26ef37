package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// With PostgreSQL down, reads and writes get 503 with Retry-After and a message that names
// neither the database's address nor its user; before, they got pgx's text in a 500.
func TestDatabaseDownIsServiceUnavailable(t *testing.T) {
	server := pgtest.StartServer(t)
	cfg := startServer(t, server.DSN())
	client := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().RESTClient()
	ctx := context.Background()
	server.Stop("fast")

	body, err := json.Marshal(&gitopsv1alpha1.GitOpsDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: gitopsv1alpha1.SchemeGroupVersion.String(), Kind: "GitOpsDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "jane"},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source: gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy"},
			Type:   gitopsv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const path = "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/jane/gitopsdeployments"
	for name, req := range map[string]*rest.Request{
		"get":    client.Get().AbsPath(path, "app"),
		"list":   client.Get().AbsPath(path),
		"create": client.Post().AbsPath(path).Body(body).SetHeader("Content-Type", "application/json"),
	} {
		t.Run(name, func(t *testing.T) {
			// client-go would retry a 503 with Retry-After by itself, for ten seconds.
			err := req.MaxRetries(0).Do(ctx).Error()
			var status apierrors.APIStatus
			if !apierrors.IsServiceUnavailable(err) || !errors.As(err, &status) {
				t.Fatalf("want 503, got %v", err)
			}
			s := status.Status()
			if s.Details == nil || s.Details.RetryAfterSeconds <= 0 {
				t.Errorf("no Retry-After: %+v", s)
			}
			for _, leak := range []string{"127.0.0.1", "user=", "dial", "connect"} {
				if strings.Contains(s.Message, leak) {
					t.Errorf("message %q shows %q", s.Message, leak)
				}
			}
			if s.Code != http.StatusServiceUnavailable {
				t.Errorf("code %d", s.Code)
			}
		})
	}
}
