package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var hist0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func record(name, deployment, rev string, trigger managedv1alpha1.DeploymentTriggerType, user string, phase managedv1alpha1.DeploymentRecordPhase,
	startedMin int, took time.Duration,
) *managedv1alpha1.DeploymentRecord {
	started := metav1.NewTime(hist0.Add(time.Duration(startedMin) * time.Minute))
	r := &managedv1alpha1.DeploymentRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, GitOpsDeploymentUID: types.UID("uid-d-" + deployment),
			Revision: rev, Trigger: managedv1alpha1.DeploymentTrigger{Type: trigger, User: user}, StartedAt: started},
		Status: managedv1alpha1.DeploymentRecordStatus{Phase: phase},
	}
	if took > 0 {
		f := metav1.NewTime(started.Add(took))
		r.Status.FinishedAt = &f
	}
	return r
}

func auditEntry(rv, verb, name, subresource, user string, atMin int, atSec int) *managedv1alpha1.AuditEntry {
	return &managedv1alpha1.AuditEntry{
		ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("0", 20-len(rv)) + rv, Namespace: testNS},
		Verb:       verb,
		Object: managedv1alpha1.AuditObject{APIGroup: managedv1alpha1.GroupName, Resource: "gitopsdeployments", Name: name,
			Subresource: subresource, ResourceVersion: rv},
		User: managedv1alpha1.AuditUser{Username: user},
		Time: metav1.NewMicroTime(hist0.Add(time.Duration(atMin)*time.Minute + time.Duration(atSec)*time.Second)),
	}
}

func historyFixture(t *testing.T) *fixture {
	sha1, sha2 := "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	return newFixture(t,
		deployment("web", manual, synced, healthy), deployment("api", manual, synced, healthy),
		record("web-1", "web", sha1, managedv1alpha1.DeploymentTriggerSyncRun, "alice", managedv1alpha1.DeploymentRecordSucceeded, 0, 4*time.Second),
		record("web-2", "web", sha2, managedv1alpha1.DeploymentTriggerSyncRun, "alice", managedv1alpha1.DeploymentRecordFailed, 5, 75*time.Second),
		record("web-3", "web", "", managedv1alpha1.DeploymentTriggerNewCommit, "", managedv1alpha1.DeploymentRecordRunning, 9, 0),
		// Another deployment's: not listed (the fake ignores field selectors; the server does not).
		record("api-1", "api", sha1, managedv1alpha1.DeploymentTriggerSyncRun, "bob", managedv1alpha1.DeploymentRecordSucceeded, 7, time.Second),
		auditEntry("120", "create", "web", "", "alice", 0, -10),
		auditEntry("130", "update", "web", "status", "system:serviceaccount:gitops-service:gitops-agent-main", 0, 2),
		auditEntry("140", "patch", "web", "", "bob", 8, 0),
		auditEntry("150", "update", "api", "", "bob", 8, 0),
	)
}

func TestHistory(t *testing.T) {
	f := historyFixture(t)
	code, out, errOut := f.run("history", "web")
	want := `REVISION  TRIGGER    USER   PHASE      STARTED               DURATION  RECORD
-         NewCommit  -      Running    2026-03-01T10:09:00Z  -         web-3
2222222   SyncRun    alice  Failed     2026-03-01T10:05:00Z  75s       web-2
1111111   SyncRun    alice  Succeeded  2026-03-01T10:00:00Z  4s        web-1
`
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}

	code, out, errOut = f.run("history", "web", "--audit")
	want = `REVISION  TRIGGER        USER   PHASE      STARTED               DURATION  RECORD
-         NewCommit      -      Running    2026-03-01T10:09:00Z  -         web-3
-         write: patch   bob    -          2026-03-01T10:08:00Z  -         rv 140
2222222   SyncRun        alice  Failed     2026-03-01T10:05:00Z  75s       web-2
1111111   SyncRun        alice  Succeeded  2026-03-01T10:00:00Z  4s        web-1
-         write: create  alice  -          2026-03-01T09:59:50Z  -         rv 120
`
	if code != 0 || out != want {
		t.Errorf("--audit: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	// The selectors the server applies: the fake records the requests.
	var selectors []string
	for _, a := range f.client.Actions() {
		if l, ok := a.(k8stesting.ListAction); ok {
			selectors = append(selectors, a.GetResource().Resource+"?"+l.GetListRestrictions().Fields.String())
		}
	}
	for _, want := range []string{"deploymentrecords?spec.gitOpsDeploymentName=web",
		"auditentries?object.name=web,object.resource=gitopsdeployments,object.subresource="} {
		if !slices.Contains(selectors, want) {
			t.Errorf("lists %q, want one %q", selectors, want)
		}
	}
}

func TestHistoryOutput(t *testing.T) {
	f := historyFixture(t)
	code, out, errOut := f.run("history", "web", "--audit", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	var got []string
	for _, it := range list.Items {
		got = append(got, it.Kind+"/"+it.Metadata.Name)
	}
	want := "DeploymentRecord/web-3 AuditEntry/00000000000000000140 DeploymentRecord/web-2 DeploymentRecord/web-1 AuditEntry/00000000000000000120"
	if list.Kind != "List" || strings.Join(got, " ") != want {
		t.Errorf("kind %q, items %q, want %q", list.Kind, got, want)
	}

	code, out, errOut = f.run("history", "web", "-o", "yaml")
	var y map[string]interface{}
	if code != 0 || yaml.Unmarshal([]byte(out), &y) != nil || len(y["items"].([]interface{})) != 3 {
		t.Errorf("yaml: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}
	if code, _, errOut := f.run("history", "web", "-o", "wide"); code != 1 || errOut != "Error: --output \"wide\" is not supported: use json or yaml\n" {
		t.Errorf("-o wide: exit %d, stderr %q", code, errOut)
	}
}

func TestHistoryErrors(t *testing.T) {
	f := historyFixture(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "nope"}, `Error: gitopsdeployment "nope" not found in namespace "team-a"` + "\n"},
		{[]string{"history"}, "Error: history takes the name of a GitOpsDeployment (got 0 arguments); see kubectl gitops history --help\n"},
	} {
		if code, _, errOut := f.run(tc.args...); code != 1 || errOut != tc.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}

	// A deployment with no sync yet is no error: the table is empty.
	f = newFixture(t, deployment("web", manual, synced, healthy))
	if code, out, errOut := f.run("history", "web"); code != 0 || !strings.HasPrefix(out, "REVISION") || strings.Count(out, "\n") != 1 {
		t.Errorf("no records: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	f = historyFixture(t)
	f.forbid("list", "auditentries", managedv1alpha1.GroupName, "bob")
	code, _, errOut := f.run("history", "web", "--audit")
	want := `Error: you may not list auditentries.managed-gitops.redhat.com in namespace "team-a": User "bob" cannot list resource "auditentries" in API group "managed-gitops.redhat.com" in the namespace "team-a"` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("audit forbidden: exit %d, stderr %q", code, errOut)
	}

	// Refused the records, the user hears of them, not of the deployment they may not get either.
	f = historyFixture(t)
	f.forbid("list", "deploymentrecords", managedv1alpha1.GroupName, "carol")
	f.forbid("get", "gitopsdeployments", managedv1alpha1.GroupName, "carol")
	code, _, errOut = f.run("history", "web")
	want = `Error: you may not list deploymentrecords.managed-gitops.redhat.com in namespace "team-a": User "carol" cannot list resource "deploymentrecords" in API group "managed-gitops.redhat.com" in the namespace "team-a"` + "\n"
	if code != 1 || errOut != want {
		t.Errorf("records forbidden: exit %d, stderr %q", code, errOut)
	}
}

// A deployment created in the second its first sync started lists below that sync: the audit
// trail keeps microseconds, records seconds.
func TestHistoryWriteInTheSecondOfItsSync(t *testing.T) {
	create := auditEntry("120", "create", "web", "", "alice", 0, 0)
	create.Time = metav1.NewMicroTime(hist0.Add(300 * time.Millisecond))
	f := newFixture(t, deployment("web", manual, synced, healthy),
		record("web-1", "web", "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", managedv1alpha1.DeploymentTriggerSyncRun, "alice",
			managedv1alpha1.DeploymentRecordSucceeded, 0, time.Second),
		create)
	code, out, errOut := f.run("history", "web", "--audit")
	want := `REVISION  TRIGGER        USER   PHASE      STARTED               DURATION  RECORD
1111111   SyncRun        alice  Succeeded  2026-03-01T10:00:00Z  1s        web-1
-         write: create  alice  -          2026-03-01T10:00:00Z  -         rv 120
`
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}
