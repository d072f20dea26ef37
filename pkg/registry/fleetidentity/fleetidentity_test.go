package fleetidentity

import "testing"

func TestInstanceOfUser(t *testing.T) {
	agents := Agents{UserPrefix: DefaultAgentUserPrefix}
	for _, c := range []struct {
		agents       Agents
		name, want   string
		wantInstance bool
	}{
		{agents, "system:serviceaccount:gitops-service:gitops-agent-main", "main", true},
		{agents, "system:serviceaccount:gitops-service:gitops-agent-", "", false},
		{agents, "system:serviceaccount:gitops-service:gitops-agent", "", false},
		{agents, "system:serviceaccount:gitops-service:gitops-agent-Not_A_Label", "", false},
		{agents, "system:serviceaccount:jane:gitops-agent-main", "", false},
		{Agents{}, "system:serviceaccount:gitops-service:gitops-agent-main", "", false},
	} {
		got, ok := c.agents.InstanceOfUser(c.name)
		if got != c.want || ok != c.wantInstance {
			t.Errorf("%q: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.wantInstance)
		}
	}
}
