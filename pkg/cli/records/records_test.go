package records

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

func rec(name, deployment string, uid types.UID, at int) *managedv1alpha1.DeploymentRecord {
	return &managedv1alpha1.DeploymentRecord{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: managedv1alpha1.DeploymentRecordSpec{GitOpsDeploymentName: deployment, GitOpsDeploymentUID: uid,
			StartedAt: metav1.NewTime(time.Unix(int64(at), 0))}}
}

func TestHistory(t *testing.T) {
	d := &managedv1alpha1.GitOpsDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "u1"}}
	got := History(d, []*managedv1alpha1.DeploymentRecord{
		rec("web-100", "web", "u1", 100),
		rec("web-300", "web", "u0", 300), // of an earlier deployment of the name
		rec("api-400", "api", "u2", 400), // of another deployment
		rec("web-200-a", "web", "", 200), // without a UID: by its name
		rec("web-200-b", "web", "u1", 200),
	})
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	want := []string{"web-200-b", "web-200-a", "web-100"}
	if len(names) != len(want) {
		t.Fatalf("got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got %v, want %v (newest first, the larger name first at the same time)", names, want)
		}
	}
}
