package auditentry

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

func TestEncodeDecode(t *testing.T) {
	at := time.Date(2026, 12, 6, 21, 40, 2, 113456000, time.UTC)
	write := storage.AuditedWrite{
		Resource: schema.GroupResource{Group: "managed-gitops.redhat.com", Resource: "gitopsdeployments"},
		Verb:     "patch", Subresource: "status", Namespace: "team-a", Name: "web", UID: "u-1",
		User: &user.DefaultInfo{Name: "alice", UID: "a-1", Groups: []string{"devs"},
			Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=secret-ish"}}},
	}
	entry, err := Encode(write)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(entry), "JTI") || strings.Contains(string(entry), "credential") {
		t.Errorf("the stored entry holds the user's extra attributes: %s", entry)
	}
	obj, err := Decode(storage.AuditRow{Namespace: "team-a", RV: 4711, CommittedAt: at, Entry: entry})
	if err != nil {
		t.Fatal(err)
	}
	e := obj.(*gitops.AuditEntry)
	if e.Name != "00000000000000004711" || e.Namespace != "team-a" {
		t.Errorf("entry %s/%s, want team-a/00000000000000004711", e.Namespace, e.Name)
	}
	want := gitops.AuditObject{APIGroup: "managed-gitops.redhat.com", Resource: "gitopsdeployments", Subresource: "status",
		Name: "web", UID: "u-1", ResourceVersion: "4711"}
	if e.Object != want {
		t.Errorf("object %+v, want %+v", e.Object, want)
	}
	if e.User.Username != "alice" || e.User.UID != "a-1" || len(e.User.Groups) != 1 || e.Verb != "patch" || !e.Time.Time.Equal(at) {
		t.Errorf("entry %+v", e)
	}
	if e.Labels[v1alpha1.LabelAuditName] != "web" || e.Labels[v1alpha1.LabelAuditResource] != "gitopsdeployments" ||
		e.Labels[v1alpha1.LabelAuditVerb] != "patch" {
		t.Errorf("labels %v", e.Labels)
	}
	again, _ := Decode(storage.AuditRow{Namespace: "team-a", RV: 4711, CommittedAt: at, Entry: entry})
	other, _ := Decode(storage.AuditRow{Namespace: "team-b", RV: 4711, CommittedAt: at, Entry: entry})
	if e.UID == "" || again.(*gitops.AuditEntry).UID != e.UID || other.(*gitops.AuditEntry).UID == e.UID {
		t.Errorf("UIDs %q, %q (same entry), %q (another namespace)", e.UID, again.(*gitops.AuditEntry).UID, other.(*gitops.AuditEntry).UID)
	}

	// A name too long for a label value is left out of the labels, found by field instead.
	write.Name, write.User = strings.Repeat("a", 64), nil
	entry, _ = Encode(write)
	obj, _ = Decode(storage.AuditRow{Namespace: "team-a", RV: 1, CommittedAt: at, Entry: entry})
	e = obj.(*gitops.AuditEntry)
	if _, ok := e.Labels[v1alpha1.LabelAuditName]; ok {
		t.Errorf("a 64-character name in the labels: %v", e.Labels)
	}
	if e.Object.Name != write.Name || selectableFields(e)["object.name"] != write.Name {
		t.Errorf("the long name is lost: %+v", e.Object)
	}
	if e.User.Username != serverUser {
		t.Errorf("a write without a user is recorded as %q", e.User.Username)
	}
	if _, err := Decode(storage.AuditRow{Namespace: "team-a", RV: 2, Entry: []byte("{")}); err == nil {
		t.Error("a damaged entry decoded")
	}
}

// Every field the registry computes is one the served version declares selectable.
func TestSelectableFieldsAreDeclared(t *testing.T) {
	declared := map[string]bool{}
	for _, f := range v1alpha1.SelectableFields["AuditEntry"] {
		declared[f] = true
	}
	for f := range selectableFields(&gitops.AuditEntry{}) {
		if !declared[f] {
			t.Errorf("%s is computed but not declared in v1alpha1.SelectableFields", f)
		}
		delete(declared, f)
	}
	for f := range declared {
		t.Errorf("%s is declared but not computed", f)
	}
}
