package devsandboxprovisioner

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/devsandboxprovisioner/spacerequest"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/provisioning"
)

// requiredAccess are the rights on SpaceRequests without which the provisioner cannot work,
// in every namespace: its informer would retry a list it may not make, and its writes fail.
var requiredAccess = func() []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, verb := range []string{"list", "watch", "create", "update", "delete"} {
		out = append(out, authorizationv1.ResourceAttributes{Verb: verb, Group: spacerequest.Resource.Group,
			Version: spacerequest.Resource.Version, Resource: spacerequest.Resource.Resource})
	}
	return out
}()

// CheckAccess asks the API server whether the agent has the rights the provisioner needs on
// SpaceRequests, in every namespace, and says which are missing. Unlike the namespace
// provisioner's, it does not stop the agent: the Dev Sandbox provisioner is enabled by default
// and idles while the cluster does not serve SpaceRequests, so Run asks once they are served
// and idles while a right is missing (New's kube).
func CheckAccess(ctx context.Context, kube kubernetes.Interface) error {
	missing, err := provisioning.MissingAccess(ctx, kube, requiredAccess)
	if err != nil {
		return fmt.Errorf("checking the Dev Sandbox provisioner's rights: %w", err)
	}
	if len(missing) > 0 {
		return provisioning.Lacks("Dev Sandbox provisioner (--controllers "+Name+")", "rights on SpaceRequests", missing)
	}
	return nil
}
