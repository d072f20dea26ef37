package deploymentrecord

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
)

// NewREST returns the storage of deploymentrecords and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         gitops.Resource("deploymentrecords"),
		SingularResource: gitops.Resource("deploymentrecord"),
		NewFunc:          func() runtime.Object { return &gitops.DeploymentRecord{} },
		NewListFunc:      func() runtime.Object { return &gitops.DeploymentRecordList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
		ShortNames:       []string{"drec"},
	}, optsGetter)
}

// RetainingREST is the storage of deploymentrecords that keeps each deployment's newest
// records: after each create, the server (not the client) deletes those beyond the
// deployment's spec.revisionHistoryLimit, or defaultLimit when it sets none.
type RetainingREST struct {
	*store.REST
	deployments  rest.Getter
	defaultLimit int32
}

// WithRetention wraps the storage of deploymentrecords; deployments gets GitOpsDeployments.
func WithRetention(records *store.REST, deployments rest.Getter, defaultLimit int32) *RetainingREST {
	return &RetainingREST{REST: records, deployments: deployments, defaultLimit: defaultLimit}
}

// Create implements rest.Creater, then removes the deployment's records beyond its limit. A
// failure to remove them is logged: the next create tries again.
func (r *RetainingREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	options *metav1.CreateOptions) (runtime.Object, error) {
	out, err := r.REST.Create(ctx, obj, createValidation, options)
	if err != nil || len(options.DryRun) > 0 {
		return out, err
	}
	rec := out.(*gitops.DeploymentRecord)
	if err := r.prune(ctx, rec.Namespace, rec.Spec.GitOpsDeploymentName); err != nil {
		klog.ErrorS(err, "removing old deployment records", "namespace", rec.Namespace, "gitopsDeployment", rec.Spec.GitOpsDeploymentName)
	}
	return out, nil
}

// limit is how many records of the deployment name in ctx's namespace are kept.
func (r *RetainingREST) limit(ctx context.Context, name string) int32 {
	obj, err := r.deployments.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return r.defaultLimit
	}
	if l := obj.(*gitops.GitOpsDeployment).Spec.RevisionHistoryLimit; l != nil {
		return *l
	}
	return r.defaultLimit
}

func (r *RetainingREST) prune(ctx context.Context, namespace, deployment string) error {
	ctx = request.WithNamespace(ctx, namespace)
	limit := r.limit(ctx, deployment)
	list, err := r.REST.List(ctx, &metainternalversion.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.gitOpsDeploymentName", deployment)})
	if err != nil {
		return err
	}
	records := list.(*gitops.DeploymentRecordList).Items
	if int32(len(records)) <= limit {
		return nil
	}
	// Newest first, by when the sync started; the name breaks ties, as it holds the time too.
	sort.Slice(records, func(i, j int) bool {
		a, b := records[i].Spec.StartedAt, records[j].Spec.StartedAt
		if !a.Equal(&b) {
			return b.Before(&a)
		}
		return records[i].Name > records[j].Name
	})
	var first error
	for _, old := range records[limit:] {
		uid := old.UID
		_, _, err := r.REST.Delete(ctx, old.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && first == nil {
			first = fmt.Errorf("deleting deployment record %s/%s: %w", namespace, old.Name, err)
		}
	}
	return first
}
