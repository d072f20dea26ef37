package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Node is one object of a tree that `status` or `why` prints: what it is, the state it is in,
// and, when it is not well, why.
type Node struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Sync and Health are Argo CD's words, for GitOpsDeployments and their resources.
	Sync   string `json:"sync,omitempty"`
	Health string `json:"health,omitempty"`
	// State is what other kinds are at: "1 of 1 components deployed", "Complete Success".
	State string `json:"state,omitempty"`
	// Problem is true when the object is not where it should end up (not Synced and Healthy,
	// not deployed, failed), and Reason says why, in the service's or Argo CD's words.
	Problem bool   `json:"problem,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Details are printed with -o wide only: source, revision, snapshot.
	Details  []string `json:"details,omitempty"`
	Children []*Node  `json:"children,omitempty"`
}

// Tree is what `status` and `why` print with -o json or yaml.
type Tree struct {
	Namespace string  `json:"namespace,omitempty"`
	Items     []*Node `json:"items"`
}

// render writes nodes as trees, one line an object:
//
//	GitOpsDeployment/web  Synced  Degraded  1 of 2 resources not Synced and Healthy: ...
//	└── Deployment/web  Synced  Degraded  Deployment "web" exceeded its progress deadline
func render(w io.Writer, nodes []*Node, wide bool) {
	for _, n := range nodes {
		renderNode(w, n, "", "", wide)
	}
}

func renderNode(w io.Writer, n *Node, first, rest string, wide bool) {
	fmt.Fprintln(w, first+n.line(wide))
	for i, c := range n.Children {
		if i == len(n.Children)-1 {
			renderNode(w, c, rest+"└── ", rest+"    ", wide)
		} else {
			renderNode(w, c, rest+"├── ", rest+"│   ", wide)
		}
	}
}

// line is the node's own line, without the tree's drawing.
func (n *Node) line(wide bool) string {
	parts := []string{n.Kind + "/" + n.Name}
	for _, s := range []string{n.Sync, n.Health, n.State} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if n.Reason != "" {
		parts = append(parts, oneLine(n.Reason))
	}
	if wide && len(n.Details) > 0 {
		parts = append(parts, "("+strings.Join(n.Details, ", ")+")")
	}
	return strings.Join(parts, "  ")
}

// oneLine is s on one line: Argo CD's messages may hold newlines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// deploymentNode is a GitOpsDeployment with its deployed resources. Its reason is the first
// problem the service reports: an error of the agent, one of Argo CD's, a failed sync, then
// ResourcesReady.
func deploymentNode(d *managedv1alpha1.GitOpsDeployment, onlyProblems bool) *Node {
	n := &Node{Kind: "GitOpsDeployment", Name: d.Name, Namespace: d.Namespace,
		Sync: orUnknown(string(d.Status.Sync.Status)), Health: orUnknown(string(d.Status.Health.Status))}
	src := d.Spec.Source
	n.Details = append(n.Details, "type "+string(d.Spec.Type), src.RepoURL+" "+src.Path+"@"+orDefault(src.TargetRevision, "HEAD"))
	if rev := d.Status.Sync.Revision; rev != "" {
		n.Details = append(n.Details, "revision "+short(rev))
	}
	reasons := deploymentProblems(d)
	if !deploymentReady(d) || len(reasons) > 0 {
		n.Problem = true
		if len(reasons) > 0 {
			n.Reason = reasons[0]
		} else if held := heldMessage(d); held != "" {
			// A GitOpsDeploymentHold keeps Argo CD at another revision than the spec's.
			n.Reason = held
		} else if !reconciled(d) {
			n.Reason = "Argo CD has not compared the current spec yet"
		}
	}
	failed := map[string]string{}
	if op := d.Status.OperationState; op != nil && op.SyncResult != nil {
		for _, r := range op.SyncResult.Resources {
			if r.Status == managedv1alpha1.ResultCodeSyncFailed && r.Message != "" {
				failed[resourceKey(r.Kind, r.Namespace, r.Name)] = r.Message
			}
		}
	}
	for _, r := range d.Status.Resources {
		c := resourceNode(d, r, failed[resourceKey(r.Kind, r.Namespace, r.Name)])
		if onlyProblems && !c.Problem {
			continue
		}
		n.Children = append(n.Children, c)
	}
	return n
}

// deploymentProblems are the service's and Argo CD's reasons why d is not well, most telling
// first.
func deploymentProblems(d *managedv1alpha1.GitOpsDeployment) []string {
	var agent, argo, ready []string
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == managedv1alpha1.GitOpsDeploymentConditionErrorOccurred && c.Status == managedv1alpha1.GitOpsConditionStatusTrue:
			agent = append(agent, "ErrorOccurred: "+c.Message)
		case c.Type == managedv1alpha1.GitOpsDeploymentConditionResourcesReady && c.Status == managedv1alpha1.GitOpsConditionStatusFalse:
			ready = append(ready, c.Message)
		case strings.HasSuffix(string(c.Type), "Error") && c.Status == managedv1alpha1.GitOpsConditionStatusTrue:
			argo = append(argo, string(c.Type)+": "+c.Message)
		}
	}
	var sync []string
	if op := d.Status.OperationState; op != nil && (op.Phase == managedv1alpha1.OperationPhaseFailed || op.Phase == managedv1alpha1.OperationPhaseError) {
		sync = append(sync, "sync "+string(op.Phase)+": "+op.Message)
	}
	out := append(append(append(agent, argo...), sync...), ready...)
	if len(out) == 0 && d.Status.Health.Message != "" && d.Status.Health.Status != managedv1alpha1.HealthStatusCodeHealthy {
		out = append(out, d.Status.Health.Message)
	}
	return out
}

// heldMessage is the message of d's Held condition while a GitOpsDeploymentHold keeps it at a
// revision, "" when it is not held.
func heldMessage(d *managedv1alpha1.GitOpsDeployment) string {
	for _, c := range d.Status.Conditions {
		if c.Type == managedv1alpha1.GitOpsDeploymentConditionHeld && c.Status == managedv1alpha1.GitOpsConditionStatusTrue {
			return c.Message
		}
	}
	return ""
}

// deploymentReady: Synced and Healthy at the spec Argo CD last compared, which is the current one.
func deploymentReady(d *managedv1alpha1.GitOpsDeployment) bool {
	return d.Status.Sync.Status == managedv1alpha1.SyncStatusCodeSynced &&
		d.Status.Health.Status == managedv1alpha1.HealthStatusCodeHealthy && reconciled(d)
}

// reconciled tells whether Argo CD compared the deployment's current source: after a change of
// the spec, the status describes the previous one until then.
func reconciled(d *managedv1alpha1.GitOpsDeployment) bool {
	got, want := d.Status.ReconciledState.Source, d.Spec.Source
	if got.RepoURL != want.RepoURL || got.Path != want.Path {
		return false
	}
	head := func(r string) string {
		if r == "" {
			return "HEAD"
		}
		return r
	}
	return head(got.Branch) == head(want.TargetRevision)
}

func resourceNode(d *managedv1alpha1.GitOpsDeployment, r managedv1alpha1.ResourceStatus, syncFailure string) *Node {
	n := &Node{Kind: r.Kind, Name: r.Name, Sync: string(r.Status)}
	if r.Namespace != "" && r.Namespace != d.Namespace && r.Namespace != d.Spec.Destination.Namespace {
		n.Name, n.Namespace = r.Namespace+"/"+r.Name, r.Namespace
	}
	if r.Health != nil {
		n.Health = string(r.Health.Status)
	}
	healthy := r.Health == nil || r.Health.Status == "" || r.Health.Status == managedv1alpha1.HealthStatusCodeHealthy
	if r.Status != managedv1alpha1.SyncStatusCodeSynced || !healthy || syncFailure != "" {
		n.Problem = true
		switch {
		case syncFailure != "":
			n.Reason = syncFailure
		case r.Health != nil && r.Health.Message != "":
			n.Reason = r.Health.Message
		}
	}
	if r.Group != "" {
		n.Details = append(n.Details, r.Group+"/"+r.Version)
	}
	return n
}

func resourceKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// bindingNode is a SnapshotEnvironmentBinding with its GitOpsDeployments (those its status
// lists, and those it controls), each with its resources.
func bindingNode(b *appstudiov1alpha1.SnapshotEnvironmentBinding, deployments map[string]*managedv1alpha1.GitOpsDeployment, onlyProblems bool) *Node {
	n := &Node{Kind: "SnapshotEnvironmentBinding", Name: b.Name, Namespace: b.Namespace}
	deployed := findCondition(b.Status.ComponentDeploymentConditions, appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed)
	reconciledCond := findCondition(b.Status.BindingConditions, appstudiov1alpha1.BindingConditionReconciled)
	switch {
	case reconciledCond != nil && reconciledCond.Status == metav1.ConditionFalse:
		n.Problem, n.State = true, "not reconciled"
		n.Reason = reconciledCond.Reason + ": " + reconciledCond.Message
	case deployed == nil:
		n.Problem, n.State = true, "no GitOpsDeployment yet"
	case deployed.Status == metav1.ConditionTrue:
		n.State = deployed.Message
	default:
		n.Problem = true
		n.State, n.Reason, _ = strings.Cut(deployed.Message, "; ")
	}
	n.State = strings.TrimSpace("snapshot " + b.Spec.Snapshot + "  " + n.State)

	var names []string
	seen := map[string]bool{}
	for _, s := range b.Status.GitOpsDeployments {
		if s.GitOpsDeployment != "" && !seen[s.GitOpsDeployment] {
			names, seen[s.GitOpsDeployment] = append(names, s.GitOpsDeployment), true
		}
	}
	var owned []string
	for name, d := range deployments {
		if ref := metav1.GetControllerOf(d); ref != nil && ref.UID == b.UID && !seen[name] {
			owned = append(owned, name)
		}
	}
	sort.Strings(owned)
	for _, name := range append(names, owned...) {
		d, ok := deployments[name]
		if !ok {
			n.Children = append(n.Children, &Node{Kind: "GitOpsDeployment", Name: name, Problem: true,
				Reason: "not found: the binding lists it, but it does not exist (yet)"})
			continue
		}
		c := deploymentNode(d, onlyProblems)
		if onlyProblems && !c.Problem {
			continue
		}
		n.Children = append(n.Children, c)
	}
	return n
}

// applicationNode is an Application, the Environments of its namespace in promotion order
// (parents first), the binding of the Application to each, and on down.
func applicationNode(app *appstudiov1alpha1.Application, envs []appstudiov1alpha1.Environment,
	bindings []appstudiov1alpha1.SnapshotEnvironmentBinding, deployments map[string]*managedv1alpha1.GitOpsDeployment) *Node {
	n := &Node{Kind: "Application", Name: app.Name, Namespace: app.Namespace}
	if app.Spec.DisplayName != "" {
		n.Details = []string{app.Spec.DisplayName}
	}
	byEnv := map[string]*appstudiov1alpha1.SnapshotEnvironmentBinding{}
	for i := range bindings {
		if b := &bindings[i]; b.Spec.Application == app.Name {
			byEnv[b.Spec.Environment] = b
		}
	}
	deployedTo := 0
	for _, env := range orderEnvironments(envs) {
		e := &Node{Kind: "Environment", Name: env.Name, Details: []string{string(env.Spec.DeploymentStrategy)}}
		if env.Spec.ParentEnvironment != "" {
			e.Details = append(e.Details, "after "+env.Spec.ParentEnvironment)
		}
		b, ok := byEnv[env.Name]
		if !ok {
			e.State = "not deployed"
			n.Children = append(n.Children, e)
			continue
		}
		deployedTo++
		bn := bindingNode(b, deployments, false)
		e.Problem = bn.Problem
		e.Children = []*Node{bn}
		n.Children = append(n.Children, e)
		delete(byEnv, env.Name)
	}
	// Bindings to Environments that do not exist (or that the user may not see).
	var rest []string
	for env := range byEnv {
		rest = append(rest, env)
	}
	sort.Strings(rest)
	for _, env := range rest {
		bn := bindingNode(byEnv[env], deployments, false)
		n.Children = append(n.Children, &Node{Kind: "Environment", Name: env, Problem: true,
			Reason: "no such Environment", Children: []*Node{bn}})
		deployedTo++
	}
	n.State = fmt.Sprintf("deployed to %d of %d Environments", deployedTo, len(envs))
	for _, c := range n.Children {
		if c.Problem && len(c.Children) > 0 {
			n.Problem = true
		}
	}
	return n
}

// orderEnvironments are envs with parents before children, siblings and roots by name; those
// of a cycle or below a missing parent come last, by name.
func orderEnvironments(envs []appstudiov1alpha1.Environment) []appstudiov1alpha1.Environment {
	byName := map[string]bool{}
	children := map[string][]appstudiov1alpha1.Environment{}
	for _, e := range envs {
		byName[e.Name] = true
	}
	var roots []appstudiov1alpha1.Environment
	for _, e := range envs {
		if e.Spec.ParentEnvironment == "" || !byName[e.Spec.ParentEnvironment] {
			roots = append(roots, e)
		} else {
			children[e.Spec.ParentEnvironment] = append(children[e.Spec.ParentEnvironment], e)
		}
	}
	byNameSort := func(l []appstudiov1alpha1.Environment) {
		sort.Slice(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	byNameSort(roots)
	var out []appstudiov1alpha1.Environment
	done := map[string]bool{}
	// Breadth first: level by level, as promotion walks the graph.
	for level := roots; len(level) > 0; {
		var next []appstudiov1alpha1.Environment
		for _, e := range level {
			if done[e.Name] {
				continue
			}
			done[e.Name] = true
			out = append(out, e)
			c := children[e.Name]
			byNameSort(c)
			next = append(next, c...)
		}
		level = next
	}
	var cyclic []appstudiov1alpha1.Environment
	for _, e := range envs {
		if !done[e.Name] {
			cyclic = append(cyclic, e)
		}
	}
	byNameSort(cyclic)
	return append(out, cyclic...)
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func orUnknown(s string) string { return orDefault(s, "Unknown") }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// short is a commit as people write it.
func short(rev string) string {
	if len(rev) == 40 {
		return rev[:8]
	}
	return rev
}
