package deploymenttargetclaim

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
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
// tenant could take the cluster's and the fleet's capacity. It also refuses claims in the
// namespaces the namespace provisioner made: their tenant holds edit there, which may create
// claims, and each of those could make a namespace with its own limit of claims, and so on
// without end.
type LimitedREST struct {
	*store.REST
	classes      rest.Getter
	defaultLimit int64
	namespaces   corelisters.NamespaceLister
}

// WithLimit wraps claims, the claims' storage, so that a claim is created (by a create or by
// server-side apply) only while its
// namespace holds fewer claims (of every class) than its class's
// parameters.namespace.maxClaimsPerNamespace, or defaultLimit when the class sets none or is
// not found (0: no limit). The storage counts in the transaction that inserts the claim
// (storage.WithCountLimit), so concurrent creates on any replica cannot exceed it.
//
// One count for every class keeps the rule simple and still bounds both: the claims of a class
// in a namespace never exceed that class's limit, and those of every class the largest limit.
//
// namespaces, the server's cache of the host cluster's namespaces, tells which the provisioner
// made (appstudiov1alpha1.LabelProvisionedTarget); nil (a server without the core API, in
// tests) refuses none.
func WithLimit(claims *store.REST, classes rest.Getter, defaultLimit int64, namespaces corelisters.NamespaceLister) *LimitedREST {
	return &LimitedREST{REST: claims, classes: classes, defaultLimit: defaultLimit, namespaces: namespaces}
}

// Create implements rest.Creater.
func (r *LimitedREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc,
	options *metav1.CreateOptions) (runtime.Object, error) {
	out, err := r.REST.Create(storage.WithCountLimit(ctx, r.limit), obj, r.notInProvisioned(createValidation), options)
	return out, r.refusal(ctx, obj, err)
}

// notInProvisioned adds to validate, which the generic store runs on every create (by a
// create, dry run included, or by server-side apply), the refusal of a claim in a namespace
// the namespace provisioner made. A namespace the cache does not hold is not one: the
// provisioner's namespaces exist, and reach the cache, before their tenant has a token there.
func (r *LimitedREST) notInProvisioned(validate rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		namespace, _ := genericapirequest.NamespaceFrom(ctx)
		if r.namespaces != nil && namespace != "" {
			ns, err := r.namespaces.Get(namespace)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if ns != nil && ns.Labels[appstudiov1alpha1.LabelProvisionedTarget] != "" {
				name := ""
				if claim, ok := obj.(*appstudio.DeploymentTargetClaim); ok {
					name = claim.Name
				}
				parent := ns.Labels[appstudiov1alpha1.LabelProvisionedClaimNamespace]
				return apierrors.NewForbidden(appstudio.Resource("deploymenttargetclaims"), name, fmt.Errorf(
					"namespace %s was made by the namespace provisioner for a claim in namespace %s, and takes no claims: each would "+
						"make another namespace, beyond the limit of claims of %s; make the claim in %s", namespace, parent, parent, parent))
			}
		}
		if validate == nil {
			return nil
		}
		return validate(ctx, obj)
	}
}

// Update implements rest.Updater: server-side apply creates a missing claim through it.
func (r *LimitedREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// The claim is known only once the patch is applied: the limit sees it, the refusal names it.
	var claim runtime.Object = &appstudio.DeploymentTargetClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	limit := func(ctx context.Context, obj runtime.Object) (int64, error) {
		claim = obj
		return r.limit(ctx, obj)
	}
	out, created, err := r.REST.Update(storage.WithCountLimit(ctx, limit), name, objInfo, r.notInProvisioned(createValidation),
		updateValidation, forceAllowCreate, options)
	return out, created, r.refusal(ctx, claim, err)
}

// limit is the storage.CountLimitFunc of a claim being created.
func (r *LimitedREST) limit(ctx context.Context, obj runtime.Object) (int64, error) {
	claim, ok := obj.(*appstudio.DeploymentTargetClaim)
	if !ok {
		return 0, nil
	}
	limit, _, err := r.limitOf(ctx, claim)
	return limit, err
}

// refusal turns the storage's refusal of a claim over the limit into a 403 that says which
// limit, and passes other errors on.
func (r *LimitedREST) refusal(ctx context.Context, obj runtime.Object, err error) error {
	var exceeded *storage.CountLimitError
	if !errors.As(err, &exceeded) {
		return err
	}
	claim, _ := obj.(*appstudio.DeploymentTargetClaim)
	source := "the server (--max-deployment-target-claims-per-namespace)"
	if claim != nil && claim.Spec.DeploymentTargetClassName != "" {
		if _, s, err := r.limitOf(ctx, claim); err == nil {
			source = s
		}
	}
	name, namespace := "", ""
	if claim != nil {
		name = claim.Name
	}
	if ns, ok := genericapirequest.NamespaceFrom(ctx); ok {
		namespace = ns
	}
	return apierrors.NewForbidden(appstudio.Resource("deploymenttargetclaims"), name,
		fmt.Errorf("namespace %s already holds %d DeploymentTargetClaims, the most %s allows; delete one first",
			namespace, exceeded.Limit, source))
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
