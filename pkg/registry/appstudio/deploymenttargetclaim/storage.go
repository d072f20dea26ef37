package deploymenttargetclaim

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/registry/store"
	"github.com/gitops-service/gitops-service/pkg/storage"
)

// NewREST returns the storage of deploymenttargetclaims and of their /status.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*store.REST, *store.StatusREST, error) {
	return store.New(store.Definition{
		Kind:             kind(typer),
		Resource:         appstudio.Resource("deploymenttargetclaims"),
		SingularResource: appstudio.Resource("deploymenttargetclaim"),
		NewFunc:          func() runtime.Object { return &appstudio.DeploymentTargetClaim{} },
		NewListFunc:      func() runtime.Object { return &appstudio.DeploymentTargetClaimList{} },
		SelectableFields: selectableFields,
		Columns:          columns,
	}, optsGetter)
}

// LimitedREST is the storage of deploymenttargetclaims with a limit on the claims of a
// namespace: each claim may make a namespace (or a SpaceRequest), and without a limit one
// tenant could take the cluster's and the fleet's capacity.
type LimitedREST struct {
	*store.REST
	classes      rest.Getter
	defaultLimit int64
}

// WithLimit wraps claims, the claims' storage, so that a claim is created only while its
// namespace holds fewer claims (of every class) than its class's
// parameters.namespace.maxClaimsPerNamespace, or defaultLimit when the class sets none or is
// not found (0: no limit). The storage counts in the transaction that inserts the claim
// (storage.WithCountLimit), so concurrent creates on any replica cannot exceed it.
//
// One count for every class keeps the rule simple and still bounds both: the claims of a class
// in a namespace never exceed that class's limit, and those of every class the largest limit.
func WithLimit(claims *store.REST, classes rest.Getter, defaultLimit int64) *LimitedREST {
	return &LimitedREST{REST: claims, classes: classes, defaultLimit: defaultLimit}
}

// Create implements rest.Creater.
func (r *LimitedREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	options *metav1.CreateOptions) (runtime.Object, error) {
	claim, ok := obj.(*appstudio.DeploymentTargetClaim)
	if !ok {
		return r.REST.Create(ctx, obj, createValidation, options)
	}
	limit, source, err := r.limitOf(ctx, claim)
	if err != nil {
		return nil, err
	}
	if limit > 0 {
		ctx = storage.WithCountLimit(ctx, limit)
	}
	out, err := r.REST.Create(ctx, obj, createValidation, options)
	var exceeded *storage.CountLimitError
	if errors.As(err, &exceeded) {
		return nil, apierrors.NewForbidden(appstudio.Resource("deploymenttargetclaims"), claim.Name,
			fmt.Errorf("namespace %s already holds %d DeploymentTargetClaims, the most %s allows; delete one first",
				claim.Namespace, exceeded.Limit, source))
	}
	return out, err
}

// limitOf is the limit that applies to claim, and what sets it.
func (r *LimitedREST) limitOf(ctx context.Context, claim *appstudio.DeploymentTargetClaim) (int64, string, error) {
	name := string(claim.Spec.DeploymentTargetClassName)
	if name != "" {
		obj, err := r.classes.Get(ctx, name, &metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, "", err
		default:
			if n := obj.(*appstudio.DeploymentTargetClass).Spec.Parameters.Namespace; n != nil && n.MaxClaimsPerNamespace != nil {
				return int64(*n.MaxClaimsPerNamespace), fmt.Sprintf("DeploymentTargetClass %s (spec.parameters.namespace.maxClaimsPerNamespace)", name), nil
			}
		}
	}
	return r.defaultLimit, "the server (--max-deployment-target-claims-per-namespace)", nil
}
