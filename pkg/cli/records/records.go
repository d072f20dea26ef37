// Package records is how the plugin's commands and its dashboard choose and order a
// GitOpsDeployment's DeploymentRecords, so that `kubectl gitops history`, `rollback` and the
// dashboard's timeline agree on which records are the deployment's and which is the newest.
package records

import (
	"sort"

	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Of tells whether r is a record of deployment d itself, not of an earlier object of its name
// (a record or deployment without a UID is taken by its name). The server selects records by
// name already; this repeats it for a server (or a watch) that did not.
func Of(d *managedv1alpha1.GitOpsDeployment, r *managedv1alpha1.DeploymentRecord) bool {
	return r.Spec.GitOpsDeploymentName == d.Name &&
		(r.Spec.GitOpsDeploymentUID == "" || d.UID == "" || r.Spec.GitOpsDeploymentUID == d.UID)
}

// Newer tells whether a is listed before b, newest first: by the start of the sync, then by
// name (which holds the start time), larger first, as the server orders them.
func Newer(a, b *managedv1alpha1.DeploymentRecord) bool {
	if !a.Spec.StartedAt.Equal(&b.Spec.StartedAt) {
		return b.Spec.StartedAt.Before(&a.Spec.StartedAt)
	}
	return a.Name > b.Name
}

// Sort orders rs newest first.
func Sort(rs []*managedv1alpha1.DeploymentRecord) {
	sort.SliceStable(rs, func(i, j int) bool { return Newer(rs[i], rs[j]) })
}

// History is the records of deployment d among rs, newest first.
func History(d *managedv1alpha1.GitOpsDeployment, rs []*managedv1alpha1.DeploymentRecord) []*managedv1alpha1.DeploymentRecord {
	var out []*managedv1alpha1.DeploymentRecord
	for _, r := range rs {
		if Of(d, r) {
			out = append(out, r)
		}
	}
	Sort(out)
	return out
}
