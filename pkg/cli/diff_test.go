package cli

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func TestPickRecords(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	rec := func(name string, minute int) managedv1alpha1.DeploymentRecord {
		return managedv1alpha1.DeploymentRecord{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: managedv1alpha1.DeploymentRecordSpec{StartedAt: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))}}
	}
	// Out of order, and two of the same minute (the name breaks the tie).
	records := []managedv1alpha1.DeploymentRecord{rec("web-b", 2), rec("web-a", 1), rec("web-d", 3), rec("web-c", 3)}
	tests := []struct {
		name, from, to         string
		records                []managedv1alpha1.DeploymentRecord
		wantFrom, wantTo, fail string
	}{
		{name: "the two newest", records: records, wantFrom: "web-c", wantTo: "web-d"},
		{name: "to alone: the one before it", records: records, to: "web-b", wantFrom: "web-a", wantTo: "web-b"},
		{name: "from alone: to the newest", records: records, from: "web-a", wantFrom: "web-a", wantTo: "web-d"},
		{name: "the oldest has none before it", records: records, to: "web-a", fail: `older than "web-a"`},
		{name: "one record", records: records[:1], fail: "give --from"},
		{name: "none", fail: "has no DeploymentRecords"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to, err := pickRecords("web", tt.records, tt.from, tt.to)
			if tt.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tt.fail) {
					t.Fatalf("error %v, want one with %q", err, tt.fail)
				}
				return
			}
			if err != nil || from != tt.wantFrom || to != tt.wantTo {
				t.Errorf("%s → %s (%v), want %s → %s", from, to, err, tt.wantFrom, tt.wantTo)
			}
		})
	}
}

func TestDiffText(t *testing.T) {
	raw := func(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }
	d := &managedv1alpha1.DeploymentRecordDiff{From: "web-1", To: "web-2", FromDigest: "sha256:a", ToDigest: "sha256:b", Truncated: true,
		Resources: []managedv1alpha1.ResourceDiff{
			{Kind: "ConfigMap", Namespace: "jane", Name: "web", Change: managedv1alpha1.ResourceModified, Fields: []managedv1alpha1.FieldDiff{
				{Path: ".data.color", From: raw(`"blue"`), To: raw(`"red"`)}, {Path: ".data.size", To: raw(`"1"`)}}},
			{Group: "apps", Kind: "Deployment", Namespace: "jane", Name: "web", Change: managedv1alpha1.ResourceAdded},
			{Kind: "Secret", Namespace: "jane", Name: "db", Change: managedv1alpha1.ResourceRemoved},
		}}
	want := `gitopsdeployment web: web-1 (sha256:a) → web-2 (sha256:b)
~ ConfigMap jane/web
    .data.color: "blue" → "red"
    .data.size: (none) → "1"
+ apps/Deployment jane/web
- Secret jane/db
(cut at the server's size limit: some changes are not shown)
`
	if got := diffText("web", d); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := diffText("web", &managedv1alpha1.DeploymentRecordDiff{From: "a", To: "b"}); !strings.Contains(got, "no change") {
		t.Errorf("got %s", got)
	}
}
