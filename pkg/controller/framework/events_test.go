package framework

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// An Event on an object of the GitOps API, as informers hand it over (no TypeMeta), names its
// kind and apiVersion, which kubectl describe selects Events by.
func TestEventsOnGitOpsObjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := kubefake.NewClientset()
	events := NewEvents(kube)
	events.Start(ctx)
	env := &appstudiov1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: "tenant", UID: "env-uid"}}
	events.Recorder.Event(env, corev1.EventTypeWarning, "SecretNotFound", "the secret s referenced by the Environment resource was not found")

	var got []corev1.Event
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Events("tenant").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = list.Items
		return len(got) > 0, nil
	}); err != nil {
		t.Fatalf("no Event written: %v", err)
	}
	e := got[0]
	want := corev1.ObjectReference{Kind: "Environment", APIVersion: "appstudio.redhat.com/v1alpha1", Namespace: "tenant", Name: "staging", UID: "env-uid"}
	if e.InvolvedObject != want {
		t.Errorf("involved object %+v, want %+v", e.InvolvedObject, want)
	}
	if e.Source.Component != "gitops-service-agent" || e.Type != corev1.EventTypeWarning || e.Reason != "SecretNotFound" {
		t.Errorf("event %+v", e)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"Repository https://user:s3cret@git.example.com/r.git failed": "Repository https://git.example.com/r.git failed",
		"ssh://git@host:22/r.git and https://tok@h/x":                 "ssh://host:22/r.git and https://h/x",
		"no URL here, just a@b":                                       "no URL here, just a@b",
		"https://h/path@v1":                                           "https://h/path@v1",
		"https://user:p@ss@host/x":                                    "https://host/x",
		"https://host/r.git?access_token=abc&ref=main":                "https://host/r.git?access_token=REDACTED&ref=main",
		"login failed: password=hunter2 token=t0k":                    "login failed: password=REDACTED token=REDACTED",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
