package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	gitopsv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned"
	"github.com/gitops-service/gitops-service/pkg/storage/pgtest"
)

// contentTypes records the Content-Type of every request and response a client made, so a
// test can tell protobuf was spoken rather than silently negotiated down to JSON.
type contentTypes struct {
	mu        sync.Mutex
	responses map[string]string // "VERB path" → response Content-Type
	requests  map[string]string // "VERB path" → request Content-Type (writes)
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		key := req.Method + " " + req.URL.Path
		if req.URL.Query().Get("watch") == "true" {
			key = "WATCH " + req.URL.Path
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.responses[key] = resp.Header.Get("Content-Type")
		if ct := req.Header.Get("Content-Type"); ct != "" {
			c.requests[key] = ct
		}
		return resp, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// protobufClient is a clientset of our groups that sends and accepts only protobuf, as the
// agent's does (but without its JSON fallback, so that a JSON answer fails the test).
func protobufClient(t *testing.T, cfg *rest.Config) (*versioned.Clientset, *contentTypes) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	seen := &contentTypes{responses: map[string]string{}, requests: map[string]string{}}
	cfg.Wrap(seen.wrap)
	return versioned.NewForConfigOrDie(cfg), seen
}

// The server speaks protobuf for our kinds like kube-apiserver for built-in ones: a typed
// client gets every verb's answer in protobuf (watch events included), and what it writes in
// protobuf is stored and read back whole, in JSON too (storage keeps JSON).
func TestProtobufClientEveryVerb(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	client, seen := protobufClient(t, cfg)
	deployments := client.ManagedGitopsV1alpha1().GitOpsDeployments("jane")

	w, err := deployments.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	limit := int32(7)
	want := &gitopsv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: map[string]string{"team": "a"}},
		Spec: gitopsv1alpha1.GitOpsDeploymentSpec{
			Source:               gitopsv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/repo", Path: "deploy", TargetRevision: "main"},
			Destination:          gitopsv1alpha1.ApplicationDestination{Namespace: "jane"},
			Type:                 gitopsv1alpha1.GitOpsDeploymentSpecTypeManual,
			RevisionHistoryLimit: &limit,
		},
	}
	created, err := deployments.Create(ctx, want, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if diff := cmp.Diff(want.Spec, created.Spec); diff != "" {
		t.Errorf("created spec (-sent +got):\n%s", diff)
	}

	got, err := deployments.Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("get (-created +got):\n%s", diff)
	}

	// The same object read as JSON: protobuf writes land in the same stored form.
	jsonGot, err := versioned.NewForConfigOrDie(cfg).ManagedGitopsV1alpha1().GitOpsDeployments("jane").Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get as JSON: %v", err)
	}
	if diff := cmp.Diff(got, jsonGot); diff != "" {
		t.Errorf("JSON get differs from protobuf get (-protobuf +json):\n%s", diff)
	}

	got.Spec.Source.TargetRevision = "v2"
	updated, err := deployments.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Spec.Source.TargetRevision != "v2" {
		t.Errorf("update: targetRevision %q, want v2", updated.Spec.Source.TargetRevision)
	}

	updated.Status.Health.Status = gitopsv1alpha1.HealthStatusCodeHealthy
	updated.Status.ReconciledState.Source = gitopsv1alpha1.GitOpsDeploymentSource{Path: "deploy", RepoURL: "https://github.com/org/repo"}
	status, err := deployments.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if status.Status.Health.Status != gitopsv1alpha1.HealthStatusCodeHealthy || status.Status.ReconciledState.Source.Path != "deploy" {
		t.Errorf("update status: status %+v", status.Status)
	}

	patched, err := deployments.Patch(ctx, "d", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	if patched.Labels["team"] != "b" || patched.Status.Health.Status != gitopsv1alpha1.HealthStatusCodeHealthy {
		t.Errorf("patch: labels %v, health %q", patched.Labels, patched.Status.Health.Status)
	}

	list, err := deployments.List(ctx, metav1.ListOptions{LabelSelector: "team=b"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].ResourceVersion != patched.ResourceVersion {
		t.Errorf("list: %d items, want d@%s", len(list.Items), patched.ResourceVersion)
	}

	// created, updated, status, patched: four events, each decoded from protobuf.
	for i, rv := range []string{created.ResourceVersion, updated.ResourceVersion, status.ResourceVersion, patched.ResourceVersion} {
		select {
		case ev := <-w.ResultChan():
			d, ok := ev.Object.(*gitopsv1alpha1.GitOpsDeployment)
			if !ok || d.ResourceVersion != rv || (i == 0) != (ev.Type == watch.Added) {
				t.Errorf("event %d: %s %T, want %s", i, ev.Type, ev.Object, rv)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no watch event %d", i)
		}
	}

	if err := deployments.Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}

	const path = "/apis/managed-gitops.redhat.com/v1alpha1/namespaces/jane/gitopsdeployments"
	for key, want := range map[string]string{
		"POST " + path:              runtime.ContentTypeProtobuf,
		"GET " + path + "/d":        runtime.ContentTypeProtobuf,
		"PUT " + path + "/d":        runtime.ContentTypeProtobuf,
		"PUT " + path + "/d/status": runtime.ContentTypeProtobuf,
		"PATCH " + path + "/d":      runtime.ContentTypeProtobuf,
		"GET " + path:               runtime.ContentTypeProtobuf,
		"DELETE " + path + "/d":     runtime.ContentTypeProtobuf,
		"WATCH " + path:             runtime.ContentTypeProtobuf + ";stream=watch",
	} {
		if got := seen.responses[key]; got != want {
			t.Errorf("%s answered in %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{"POST " + path, "PUT " + path + "/d", "PUT " + path + "/d/status"} {
		if got := seen.requests[key]; got != runtime.ContentTypeProtobuf {
			t.Errorf("%s sent %q, want protobuf", key, got)
		}
	}
}

// runtime.RawExtension travels in protobuf as bytes holding the JSON: what a protobuf client
// writes there reads back the same from a JSON client, and the other way round.
func TestProtobufRawExtension(t *testing.T) {
	cfg := startServer(t, pgtest.NewDatabase(t))
	ctx := context.Background()
	client, _ := protobufClient(t, cfg)
	snapshots := client.AppStudioV1alpha1().Snapshots("team")
	jsonSnapshots := versioned.NewForConfigOrDie(cfg).AppStudioV1alpha1().Snapshots("team")

	raw := `{"builds":[{"id":1,"ok":true}],"note":"x"}`
	if _, err := snapshots.Create(ctx, &appstudiov1alpha1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Spec: appstudiov1alpha1.SnapshotSpec{
			Application: "app",
			Components:  []appstudiov1alpha1.SnapshotComponent{{Name: "c", ContainerImage: "quay.io/org/c@sha256:" + strings.Repeat("a", 64)}},
			Artifacts:   appstudiov1alpha1.SnapshotArtifacts{UnstableFields: &runtime.RawExtension{Raw: []byte(raw)}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	for name, c := range map[string]interface {
		Get(context.Context, string, metav1.GetOptions) (*appstudiov1alpha1.Snapshot, error)
	}{"protobuf": snapshots, "json": jsonSnapshots} {
		got, err := c.Get(ctx, "s1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s get: %v", name, err)
		}
		if u := got.Spec.Artifacts.UnstableFields; u == nil || string(u.Raw) != raw {
			t.Errorf("%s get: unstableFields %v, want %s", name, u, raw)
		}
	}
}
