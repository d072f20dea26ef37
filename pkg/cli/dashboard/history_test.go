package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/generated/clientset/versioned/fake"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func deploymentRecord(name, deployment, owner, rev, user string, at time.Time, phase managedv1alpha1.DeploymentRecordPhase) *managedv1alpha1.DeploymentRecord {
	finished := metav1.NewTime(at.Add(3 * time.Second))
	return &managedv1alpha1.DeploymentRecord{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, GitOpsDeploymentUID: types.UID("uid-" + owner), Revision: rev,
			Trigger:   managedv1alpha1.DeploymentTrigger{Type: managedv1alpha1.DeploymentTriggerType("SyncRun"), User: user, SyncRun: "sr-" + name},
			StartedAt: metav1.NewTime(at)},
		Status: managedv1alpha1.DeploymentRecordStatus{Phase: phase, FinishedAt: &finished,
			Resources: []managedv1alpha1.RecordedResource{{Kind: "ConfigMap", Name: "cm", Status: "Synced"}, {Kind: "Secret", Name: "s", Status: "SyncFailed"}}},
	}
}

// history is objects() with records of shop-dev-web (whose UID is uid-web), one of an earlier
// deployment of the name, one of another deployment, and a hold.
func history() []runtime.Object {
	objs := objects()
	for _, o := range objs {
		if d, ok := o.(*managedv1alpha1.GitOpsDeployment); ok && d.Name == "shop-dev-web" {
			d.UID = "uid-web"
		}
	}
	return append(objs,
		deploymentRecord("shop-dev-web-1", "shop-dev-web", "web", "aaaaaaa1111", "alice", t0, managedv1alpha1.DeploymentRecordSucceeded),
		deploymentRecord("shop-dev-web-2", "shop-dev-web", "web", "bbbbbbb2222", "bob", t0.Add(time.Minute), managedv1alpha1.DeploymentRecordFailed),
		deploymentRecord("shop-dev-web-0", "shop-dev-web", "old", "ccccccc3333", "carol", t0.Add(2*time.Minute), managedv1alpha1.DeploymentRecordSucceeded),
		deploymentRecord("other-1", "other", "other", "ddddddd4444", "dave", t0, managedv1alpha1.DeploymentRecordSucceeded),
		&managedv1alpha1.GitOpsDeploymentHold{ObjectMeta: metav1.ObjectMeta{Name: "shop-dev-web", Namespace: ns},
			Spec:   managedv1alpha1.GitOpsDeploymentHoldSpec{Revision: "aaaaaaa1111", DeploymentRecord: "shop-dev-web-1", Reason: "v2 breaks checkout", HeldBy: "alice"},
			Status: managedv1alpha1.GitOpsDeploymentHoldStatus{Holding: true, Message: "Holding at aaaaaaa1111"}},
	)
}

// TestTimeline: a deployment's records, its own only, newest first with who, what and how
// it ended; its hold; and a new record appears without anything but the watch.
func TestTimeline(t *testing.T) {
	c := fake.NewSimpleClientset(history()...)
	_, base := dashboard(t, c, Config{})
	browser := login(t, base)
	st := state(t, browser, base, nil)
	if len(st.Errors) != 0 {
		t.Fatalf("errors: %v", st.Errors)
	}
	d := st.Deployments[0]
	if len(d.Records) != 2 || d.Records[0].Name != "shop-dev-web-2" || d.Records[1].Name != "shop-dev-web-1" {
		t.Fatalf("records of shop-dev-web, newest first, not of an earlier deployment of the name nor another's: %+v", d.Records)
	}
	want := Record{Name: "shop-dev-web-2", Revision: "bbbbbbb2222", Trigger: "SyncRun", User: "bob", SyncRun: "sr-shop-dev-web-2",
		Phase: "Failed", Started: "2026-01-02T03:05:05Z", Finished: "2026-01-02T03:05:08Z", Resources: 2, Failed: 1}
	if d.Records[0] != want {
		t.Errorf("record:\n got %+v\nwant %+v", d.Records[0], want)
	}
	if d.Hold == nil || *d.Hold != (Hold{Revision: "aaaaaaa1111", Record: "shop-dev-web-1", Reason: "v2 breaks checkout", HeldBy: "alice",
		Holding: true, Message: "Holding at aaaaaaa1111"}) {
		t.Errorf("hold: %+v", d.Hold)
	}

	_, err := c.ManagedGitopsV1alpha1().DeploymentRecords(ns).Create(context.Background(),
		deploymentRecord("shop-dev-web-3", "shop-dev-web", "web", "eeeeeee5555", "alice", t0.Add(3*time.Minute), managedv1alpha1.DeploymentRecordRunning),
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ManagedGitopsV1alpha1().GitOpsDeploymentHolds(ns).Delete(context.Background(), "shop-dev-web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st = state(t, browser, base, func(st *State) bool {
		return len(st.Deployments[0].Records) == 3 && st.Deployments[0].Hold == nil
	})
	if r := st.Deployments[0].Records[0]; r.Name != "shop-dev-web-3" || r.Phase != "Running" {
		t.Errorf("the new record first: %+v", r)
	}
}

// TestRecordsRefused: a user who may not list records (nor holds) sees why, and the rest of
// the page as before.
func TestRecordsRefused(t *testing.T) {
	c := fake.NewSimpleClientset(history()...)
	for _, res := range []string{"deploymentrecords", "gitopsdeploymentholds"} {
		res := res
		c.PrependReactor("list", res, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: managedv1alpha1.GroupName, Resource: res}, "",
				errors.New(`User "bob" cannot list resource "`+res+`"`))
		})
	}
	_, base := dashboard(t, c, Config{Describe: func(kind string, err error) string { return kind + ": " + err.Error() }})
	st := state(t, login(t, base), base, nil)
	if msg := st.Errors["DeploymentRecord"]; !strings.Contains(msg, `deploymentrecords.managed-gitops.redhat.com is forbidden: User "bob" cannot list resource "deploymentrecords"`) {
		t.Errorf("errors: %v", st.Errors)
	}
	if msg := st.Errors["GitOpsDeploymentHold"]; !strings.Contains(msg, `cannot list resource "gitopsdeploymentholds"`) {
		t.Errorf("errors: %v", st.Errors)
	}
	if len(st.Deployments) != 1 || st.Deployments[0].Records == nil || len(st.Deployments[0].Records) != 0 || st.Deployments[0].Hold != nil {
		t.Errorf("the deployment, without records nor hold: %+v", st.Deployments)
	}
	if len(st.Applications) != 1 || len(st.History) != 2 {
		t.Errorf("the rest of the page: %+v %+v", st.Applications, st.History)
	}
}

// TestRollbackAndRelease: the actions reach the plugin's code with what the page sent, and
// the API's refusal comes back as such; both need a same-origin JSON POST like every action.
func TestRollbackAndRelease(t *testing.T) {
	var got []string
	_, base := dashboard(t, fake.NewSimpleClientset(history()...), Config{
		Rollback: func(_ context.Context, deployment, record, reason string) (string, error) {
			got = append(got, "rollback "+deployment+" "+record+" "+reason)
			return "held", nil
		},
		Release: func(_ context.Context, deployment string) (string, error) {
			return "", errors.New(`you may not delete gitopsdeploymentholds.managed-gitops.redhat.com "` + deployment + `"`)
		},
	})
	c := login(t, base)
	post := func(path, origin, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", origin)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := post("/api/rollback", "http://evil.example", `{"deployment":"shop-dev-web","record":"shop-dev-web-1"}`); code != http.StatusForbidden {
		t.Errorf("rollback from another origin: %d, want 403", code)
	}
	if code, body := post("/api/rollback", base, `{"deployment":"shop-dev-web"}`); code != http.StatusBadRequest || !strings.Contains(body, "DeploymentRecord") {
		t.Errorf("rollback without a record: %d %s, want 400", code, body)
	}
	if len(got) != 0 {
		t.Fatalf("a refused POST rolled back: %v", got)
	}
	if code, body := post("/api/rollback", base, `{"deployment":"shop-dev-web","record":"shop-dev-web-1","reason":"v2 breaks"}`); code != http.StatusOK ||
		len(got) != 1 || got[0] != "rollback shop-dev-web shop-dev-web-1 v2 breaks" {
		t.Errorf("rollback: %d %s %v", code, body, got)
	}
	if code, body := post("/api/release", base, `{"deployment":"shop-dev-web"}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "you may not delete gitopsdeploymentholds") {
		t.Errorf("release refused by the API: %d %s", code, body)
	}
}

// TestDiff: the API's diff reaches the page with each value as JSON text (a Secret's as the
// API's redaction marker, nothing more), a side without the field as null, and a refusal as
// the API's words; the page must name the deployment and both records.
func TestDiff(t *testing.T) {
	var asked []string
	_, base := dashboard(t, fake.NewSimpleClientset(history()...), Config{
		Diff: func(_ context.Context, deployment, from, to string) (*managedv1alpha1.DeploymentRecordDiff, error) {
			asked = append(asked, deployment+" "+from+" "+to)
			if to == "forbidden" {
				return nil, errors.New(`you may not create deploymentrecords.managed-gitops.redhat.com --subresource=diff in namespace "team-a"`)
			}
			return &managedv1alpha1.DeploymentRecordDiff{From: from, To: to, FromDigest: "sha256:aa", ToDigest: "sha256:bb",
				Resources: []managedv1alpha1.ResourceDiff{
					{Kind: "ConfigMap", Name: "cm", Change: managedv1alpha1.ResourceModified, Fields: []managedv1alpha1.FieldDiff{
						{Path: ".data.value", From: &runtime.RawExtension{Raw: []byte(`"v1"`)}, To: &runtime.RawExtension{Raw: []byte(`"v2"`)}},
						{Path: ".data.added", To: &runtime.RawExtension{Raw: []byte(`"x"`)}}}},
					{Kind: "Secret", Name: "s", Change: managedv1alpha1.ResourceModified, Fields: []managedv1alpha1.FieldDiff{
						{Path: ".data.password", From: &runtime.RawExtension{Raw: []byte(`"redacted:111"`)}, To: &runtime.RawExtension{Raw: []byte(`"redacted:222"`)}}}},
					{Group: "apps", Kind: "Deployment", Name: "web", Change: managedv1alpha1.ResourceAdded},
				}}, nil
		},
	})
	c := login(t, base)
	code, body := get(t, c, base+"/api/diff?deployment=shop-dev-web&from=shop-dev-web-1&to=shop-dev-web-2", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/diff: %d %s", code, body)
	}
	var d Diff
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	want := Diff{Deployment: "shop-dev-web", From: "shop-dev-web-1", To: "shop-dev-web-2", FromDigest: "sha256:aa", ToDigest: "sha256:bb",
		Resources: []ResourceDiff{
			{Kind: "ConfigMap", Name: "cm", Change: "Modified", Fields: []FieldDiff{{Path: ".data.value", From: str(`"v1"`), To: str(`"v2"`)}, {Path: ".data.added", To: str(`"x"`)}}},
			{Kind: "Secret", Name: "s", Change: "Modified", Fields: []FieldDiff{{Path: ".data.password", From: str(`"redacted:111"`), To: str(`"redacted:222"`)}}},
			{Group: "apps", Kind: "Deployment", Name: "web", Change: "Added", Fields: []FieldDiff{}},
		}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("diff:\n got %s", body)
	}
	if !strings.Contains(body, `"from":null`) {
		t.Errorf("a side without the field is null: %s", body)
	}
	if code, body := get(t, c, base+"/api/diff?deployment=shop-dev-web&from=a&to=forbidden", nil); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "you may not create deploymentrecords.managed-gitops.redhat.com --subresource=diff") {
		t.Errorf("a refused diff: %d %s", code, body)
	}
	if code, _ := get(t, c, base+"/api/diff?deployment=shop-dev-web&to=b", nil); code != http.StatusBadRequest {
		t.Errorf("a diff without from: %d, want 400", code)
	}
	if code, _ := get(t, client(t), base+"/api/diff?deployment=shop-dev-web&from=a&to=b", nil); code != http.StatusForbidden {
		t.Errorf("a diff without the token: %d, want 403", code)
	}
	if len(asked) != 2 {
		t.Errorf("the API asked %d times: %v", len(asked), asked)
	}
}

// The store keeps records without their rendered manifests (the diff view asks the API), and
// leaves the watch's object as it was.
func TestStoreKeepsRecordsWithoutManifests(t *testing.T) {
	r := deploymentRecord("web-1", "web", "web", "aaa", "alice", t0, managedv1alpha1.DeploymentRecordSucceeded)
	r.Status.ManifestsDigest = "sha256:abc"
	r.Status.Manifests = []managedv1alpha1.RecordedManifest{{Kind: "ConfigMap", Name: "web"}}
	s := newStore()
	s.set(kindRecord, r, false)
	s.replace(kindRecord, []runtime.Object{r})
	kept := s.objects[kindRecord]["web-1"].(*managedv1alpha1.DeploymentRecord)
	if kept.Status.Manifests != nil || kept.Status.ManifestsDigest != "sha256:abc" {
		t.Errorf("kept manifests %v, digest %q; want none and the digest", kept.Status.Manifests, kept.Status.ManifestsDigest)
	}
	if len(r.Status.Manifests) != 1 {
		t.Errorf("the watch's object lost its manifests")
	}
}
