package autopromotion

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
)

// Annotations of the PromotionRuns this controller creates: which Snapshot and root
// Environment they are for (the name says it too, but may be shortened by a hash).
const (
	AnnotationSnapshot    = "promotionrun.managed-gitops.redhat.com/automated-snapshot"
	AnnotationEnvironment = "promotionrun.managed-gitops.redhat.com/automated-environment"
	// AnnotationSnapshotCreated is the Snapshot's creationTimestamp (RFC 3339): no Snapshot
	// older than one already promoted automatically is promoted, even once that one is gone.
	AnnotationSnapshotCreated = "promotionrun.managed-gitops.redhat.com/automated-snapshot-created"
)

// RunName is the name of the PromotionRun that promotes snapshot automatically from the root
// Environment env: fixed, so that creating it twice is harmless (AlreadyExists), and one per
// Snapshot and Environment: an Environment's name has no dot, so the last one separates them.
func RunName(snapshot, env string) string {
	name := strings.ToLower(snapshot + "." + env + "-auto")
	if len(name) > 253 {
		sum := sha256.Sum256([]byte(snapshot + "/" + env))
		name = "automated-promotion-" + hex.EncodeToString(sum[:])
	}
	return name
}

// Newest is the newest of an application's Snapshots: created last, and of those created in
// the same second the last by name (names of one burst usually sort in time).
func Newest(snapshots []*appstudiov1alpha1.Snapshot) *appstudiov1alpha1.Snapshot {
	var newest *appstudiov1alpha1.Snapshot
	for _, s := range snapshots {
		if s.DeletionTimestamp != nil {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&s.CreationTimestamp) ||
			(newest.CreationTimestamp.Equal(&s.CreationTimestamp) && newest.Name < s.Name) {
			newest = s
		}
	}
	return newest
}

// Plan is what to do for one Snapshot.
type Plan struct {
	// Create are the PromotionRuns to create, one per root Environment.
	Create []*appstudiov1alpha1.PromotionRun
	// Problems are the faults of the Environment graph, worth telling the Snapshot's readers.
	Problems []promotiongraph.Problem
}

// Decide plans the automated promotion of snapshot: a PromotionRun from each AppStudioAutomated
// Environment without a parent (the graph's roots), when snapshot is the newest of its
// Application, unless its run exists (by name: runs holds the namespace's runs by name).
//
// Only the newest: of a burst of Snapshots, the last supersedes the others before they
// start (Snapshots of the same second are told apart by name, the best there is). And never one older than a Snapshot of its Application already promoted so
// (promoted is the newest such Snapshot's creation time, nil if none): deleting the newest
// Snapshot must not send the one before it to production. A run deleted by hand is made again while its
// Snapshot is the newest: the graph says the roots run the newest.
func Decide(snapshot, newest *appstudiov1alpha1.Snapshot, graph *promotiongraph.Graph, runs map[string]bool, promoted *metav1.Time) Plan {
	p := Plan{Problems: graph.Problems()}
	if snapshot == nil || newest == nil || snapshot.Name != newest.Name || snapshot.DeletionTimestamp != nil {
		return p
	}
	if promoted != nil && snapshot.CreationTimestamp.Before(promoted) {
		return p
	}
	for _, env := range graph.Roots() {
		name := RunName(snapshot.Name, env)
		if runs[name] {
			continue
		}
		p.Create = append(p.Create, &appstudiov1alpha1.PromotionRun{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: snapshot.Namespace,
				Annotations: map[string]string{AnnotationSnapshot: snapshot.Name, AnnotationEnvironment: env,
					AnnotationSnapshotCreated: snapshot.CreationTimestamp.UTC().Format(time.RFC3339)},
			},
			Spec: appstudiov1alpha1.PromotionRunSpec{
				Snapshot: snapshot.Name, Application: snapshot.Spec.Application,
				AutomatedPromotion: appstudiov1alpha1.AutomatedPromotionConfiguration{InitialEnvironment: env},
			},
		})
	}
	return p
}
