// Package fleetidentity tells, from the user of a request, which instance of the fleet's agent
// makes it, so that the strategies of ArgoCDInstances and TenantPlacements can confine each
// agent to its own instance: RBAC can name an object but not "the placements whose
// spec.instance is mine", and every instance's agent holds the same ClusterRole.
package fleetidentity

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// DefaultAgentUserPrefix is the user name of an instance's agent without the instance's name:
// the ServiceAccount gitops-agent-<instance> in namespace gitops-service
// (artifacts/agent-deploy).
const DefaultAgentUserPrefix = "system:serviceaccount:gitops-service:gitops-agent-"

// Agents recognizes the agents of the fleet's instances by their user names.
type Agents struct {
	// UserPrefix followed by an instance's name is that instance's agent. Empty: no user is
	// taken for an agent (each is then confined by RBAC alone).
	UserPrefix string
}

// InstanceOfUser returns the instance whose agent the user name is, if it is one.
func (a Agents) InstanceOfUser(name string) (string, bool) {
	if a.UserPrefix == "" {
		return "", false
	}
	instance, ok := strings.CutPrefix(name, a.UserPrefix)
	if !ok || len(validation.IsDNS1123Label(instance)) > 0 {
		return "", false
	}
	return instance, true
}

// InstanceOf returns the instance whose agent makes the request of ctx, if an agent makes it.
func (a Agents) InstanceOf(ctx context.Context) (string, bool) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || u == nil {
		return "", false
	}
	return a.InstanceOfUser(u.GetName())
}
