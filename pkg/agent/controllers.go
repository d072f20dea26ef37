package agent

import (
	"fmt"
	"slices"
	"strings"
)

// The controllers an agent can run, as --controllers names them.
const (
	// ArgoCDControllers are the controllers that drive the agent's Argo CD instance:
	// GitOpsDeployments, SyncRuns, ManagedEnvironments and RepositoryCredentials into
	// Applications, operations, cluster and repository Secrets and AppProjects, each sync
	// into a DeploymentRecord, and each DeploymentPreview into the manifests Git holds now
	// (rendered by the same repo-server as the records'). They share one
	// view of that instance (its caches, the tenants' AppProjects, the Operation records), so
	// they are enabled together.
	ArgoCDControllers = "argocd"
	// EnvironmentController turns appstudio Environments into ManagedEnvironments.
	EnvironmentController = "environment"
	// SnapshotEnvironmentBindingController generates the GitOpsDeployments of bindings.
	SnapshotEnvironmentBindingController = "snapshotenvironmentbinding"
	// PromotionRunController carries PromotionRuns out through bindings.
	PromotionRunController = "promotionrun"
	// AutoPromotionController starts the automated promotion of each new Snapshot into the
	// AppStudioAutomated Environments without a parent (PromotionRuns the promotionrun
	// controller walks down the Environment graph).
	AutoPromotionController = "autopromotion"
	// DeploymentTargetBinderController binds DeploymentTargetClaims to DeploymentTargets.
	DeploymentTargetBinderController = "deploymenttargetbinder"
	// DeploymentTargetReclaimController releases or deletes the targets of claims that are gone.
	DeploymentTargetReclaimController = "deploymenttargetreclaim"
	// NamespaceProvisionerController provisions a namespace of this cluster for each claim of a
	// managed-gitops.redhat.com/namespace class. Not among "*": it needs rights over every
	// namespace (artifacts/namespace-provisioner), which an install grants on purpose.
	NamespaceProvisionerController = "namespaceprovisioner"
	// DevSandboxProvisionerController provisions a DeploymentTarget through a SpaceRequest for
	// each claim of an appstudio.redhat.com/devsandbox class. Among "*": it idles while the
	// cluster does not serve the SpaceRequest API (no Dev Sandbox operator).
	DevSandboxProvisionerController = "devsandboxprovisioner"
	// PlacementController places tenant namespaces on the ArgoCDInstances of a fleet. Among
	// "*": without ArgoCDInstances it places nothing.
	PlacementController = "placement"
)

// KnownControllers are the names --controllers accepts.
var KnownControllers = []string{ArgoCDControllers, EnvironmentController, SnapshotEnvironmentBindingController, PromotionRunController, AutoPromotionController,
	DeploymentTargetBinderController, DeploymentTargetReclaimController, NamespaceProvisionerController, DevSandboxProvisionerController, PlacementController}

// disabledByDefault are the controllers "*" leaves out: they run only when named.
var disabledByDefault = []string{NamespaceProvisionerController}

// EnabledControllers reads a --controllers list as kube-controller-manager does: "name" enables
// a controller, "-name" disables it, "*" enables every controller not disabled, except those
// disabled by default.
func EnabledControllers(list []string) (map[string]bool, error) {
	star := false
	on, off := map[string]bool{}, map[string]bool{}
	for _, item := range list {
		name, disable := strings.CutPrefix(item, "-")
		switch {
		case item == "*":
			star = true
			continue
		case !slices.Contains(KnownControllers, name):
			return nil, fmt.Errorf("unknown controller %q; known: %s (and *, or -name to disable one)", item, strings.Join(KnownControllers, ", "))
		case disable:
			off[name] = true
		default:
			on[name] = true
		}
		if on[name] && off[name] {
			return nil, fmt.Errorf("controller %q is both enabled and disabled", name)
		}
	}
	enabled := map[string]bool{}
	for _, name := range KnownControllers {
		if on[name] || (star && !off[name] && !slices.Contains(disabledByDefault, name)) {
			enabled[name] = true
		}
	}
	if len(enabled) == 0 {
		return nil, fmt.Errorf("%q enables no controller", strings.Join(list, ","))
	}
	return enabled, nil
}
