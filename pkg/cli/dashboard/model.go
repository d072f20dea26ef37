package dashboard

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/cli/records"
)

// State is what /api/state answers: everything the page shows of the namespace, built from
// what the watches saw. The page renders its views from it alone.
type State struct {
	Namespace string `json:"namespace"`
	// Errors are, by kind, why the kind cannot be read (a 403 says what RBAC refused).
	Errors map[string]string `json:"errors"`
	// Loading is true until every kind has been listed once (or refused).
	Loading      bool          `json:"loading"`
	Applications []Application `json:"applications"`
	Deployments  []Deployment  `json:"deployments"`
	History      []Entry       `json:"history"`
	Runs         []Run         `json:"runs"`
}

// Application is an Application with the Environments of its namespace as a graph.
type Application struct {
	Name         string        `json:"name"`
	DisplayName  string        `json:"displayName,omitempty"`
	Environments []Environment `json:"environments"`
	// Snapshots are the names of the Application's Snapshots, newest first.
	Snapshots []string `json:"snapshots"`
}

// Environment is one box of the graph: where it sits (Depth, Parent), the Snapshot its
// binding of the Application deploys, how the binding's deployments are, and the promotion
// into it in progress.
type Environment struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Parent      string `json:"parent,omitempty"`
	Strategy    string `json:"strategy,omitempty"`
	Depth       int    `json:"depth"`
	Binding     string `json:"binding,omitempty"`
	Snapshot    string `json:"snapshot,omitempty"`
	// State is the binding's AllComponentsDeployed message, or why it is not.
	State       string   `json:"state,omitempty"`
	Problem     bool     `json:"problem,omitempty"`
	Sync        string   `json:"sync,omitempty"`
	Health      string   `json:"health,omitempty"`
	Deployments []string `json:"deployments,omitempty"`
	Promotion   *Step    `json:"promotion,omitempty"`
}

// Step is a PromotionRun's promotion into one Environment, while the run is not complete.
type Step struct {
	Run      string `json:"run"`
	Snapshot string `json:"snapshot"`
	Status   string `json:"status"`
	// Display is what the step waits for ("Waiting for approvals: 0 of 1 ...").
	Display string `json:"display"`
	// Approval is true while the step waits for approvals: the page offers approve and reject.
	Approval bool `json:"approval,omitempty"`
}

// Run is a PromotionRun, for the list under the graph.
type Run struct {
	Name        string `json:"name"`
	Application string `json:"application"`
	Snapshot    string `json:"snapshot"`
	Target      string `json:"target,omitempty"`
	State       string `json:"state"`
	Result      string `json:"result,omitempty"`
	Steps       []Step `json:"steps,omitempty"`
	Created     string `json:"created,omitempty"`
}

// Deployment is a GitOpsDeployment with its sync, health and resources.
type Deployment struct {
	Name          string            `json:"name"`
	Type          string            `json:"type"`
	Manual        bool              `json:"manual,omitempty"`
	Sync          string            `json:"sync"`
	Health        string            `json:"health"`
	HealthMessage string            `json:"healthMessage,omitempty"`
	Repo          string            `json:"repo"`
	Path          string            `json:"path"`
	Target        string            `json:"target,omitempty"`
	Revision      string            `json:"revision,omitempty"`
	Binding       string            `json:"binding,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	// Ready is the ResourcesReady condition, when the service has set it.
	Ready     *Condition `json:"ready,omitempty"`
	Problems  []string   `json:"problems,omitempty"`
	Resources []Resource `json:"resources"`
	// Hold is the deployment's GitOpsDeploymentHold, when it is held.
	Hold *Hold `json:"hold,omitempty"`
	// Records are the deployment's DeploymentRecords, newest first (kubectl gitops history's
	// order), at most recordsShown.
	Records []Record `json:"records"`
}

// Hold is where a rollback holds a deployment, who held it and why.
type Hold struct {
	Revision string `json:"revision"`
	Record   string `json:"record,omitempty"`
	Reason   string `json:"reason,omitempty"`
	HeldBy   string `json:"heldBy,omitempty"`
	// Holding is true once the agent has put the hold in effect; Message says where it stands.
	Holding bool   `json:"holding"`
	Message string `json:"message,omitempty"`
}

// Record is one sync of a deployment, for its timeline: what (the commit), why (the
// trigger), who, and how it ended.
type Record struct {
	Name     string `json:"name"`
	Revision string `json:"revision,omitempty"`
	Trigger  string `json:"trigger,omitempty"`
	User     string `json:"user,omitempty"`
	SyncRun  string `json:"syncRun,omitempty"`
	Binding  string `json:"binding,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	Phase    string `json:"phase"`
	Message  string `json:"message,omitempty"`
	Started  string `json:"started"`
	Finished string `json:"finished,omitempty"`
	// Resources is how many resources the sync applied (or pruned), Failed how many of them failed.
	Resources int `json:"resources"`
	Failed    int `json:"failed,omitempty"`
}

// recordsShown is how many records a deployment's timeline shows: the server keeps a
// deployment's newest records only (its revisionHistoryLimit, 10 by default) anyway.
const recordsShown = 50

// Condition is a condition's status, reason and message.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Resource is one resource Argo CD deployed.
type Resource struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Status    string `json:"status"`
	Health    string `json:"health,omitempty"`
	Message   string `json:"message,omitempty"`
}

// Entry is one AuditEntry of the history.
type Entry struct {
	Name        string `json:"name"`
	Time        string `json:"time"`
	User        string `json:"user"`
	Verb        string `json:"verb"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Object      string `json:"object"`
}

// historyLength is how many entries the history shows.
const historyLength = 200

func buildState(ns string, snap snapshot, describe func(kind string, err error) string) *State {
	st := &State{Namespace: ns, Errors: map[string]string{}, Loading: !snap.listed,
		Applications: []Application{}, Deployments: []Deployment{}, History: []Entry{}, Runs: []Run{}}
	for kind, err := range snap.errs {
		st.Errors[kind] = describe(kind, err)
	}
	var envs []appstudiov1alpha1.Environment
	for _, o := range snap.objects[kindEnvironment] {
		envs = append(envs, *o.(*appstudiov1alpha1.Environment))
	}
	byDeployment := map[string][]*managedv1alpha1.DeploymentRecord{}
	for _, o := range snap.objects[kindRecord] {
		r := o.(*managedv1alpha1.DeploymentRecord)
		byDeployment[r.Spec.GitOpsDeploymentName] = append(byDeployment[r.Spec.GitOpsDeploymentName], r)
	}
	holds := map[string]*managedv1alpha1.GitOpsDeploymentHold{}
	for _, o := range snap.objects[kindHold] {
		h := o.(*managedv1alpha1.GitOpsDeploymentHold)
		holds[h.Name] = h
	}
	deployments := map[string]*managedv1alpha1.GitOpsDeployment{}
	for _, o := range snap.objects[kindDeployment] {
		d := o.(*managedv1alpha1.GitOpsDeployment)
		deployments[d.Name] = d
		out := deployment(d)
		// A hold is named after its deployment.
		if h := holds[d.Name]; h != nil {
			out.Hold = &Hold{Revision: h.Spec.Revision, Record: h.Spec.DeploymentRecord, Reason: h.Spec.Reason,
				HeldBy: h.Spec.HeldBy, Holding: h.Status.Holding, Message: h.Status.Message}
		}
		for _, r := range records.History(d, byDeployment[d.Name]) {
			if len(out.Records) == recordsShown {
				break
			}
			out.Records = append(out.Records, record(r))
		}
		st.Deployments = append(st.Deployments, out)
	}
	var bindings []*appstudiov1alpha1.SnapshotEnvironmentBinding
	for _, o := range snap.objects[kindBinding] {
		bindings = append(bindings, o.(*appstudiov1alpha1.SnapshotEnvironmentBinding))
	}
	var runs []*appstudiov1alpha1.PromotionRun
	for _, o := range snap.objects[kindRun] {
		r := o.(*appstudiov1alpha1.PromotionRun)
		runs = append(runs, r)
	}
	sort.SliceStable(runs, func(i, j int) bool {
		return runs[j].CreationTimestamp.Before(&runs[i].CreationTimestamp)
	})
	for _, r := range runs {
		st.Runs = append(st.Runs, run(r))
	}
	snapshots := map[string][]*appstudiov1alpha1.Snapshot{}
	for _, o := range snap.objects[kindSnapshot] {
		s := o.(*appstudiov1alpha1.Snapshot)
		snapshots[s.Spec.Application] = append(snapshots[s.Spec.Application], s)
	}
	for _, o := range snap.objects[kindApplication] {
		app := o.(*appstudiov1alpha1.Application)
		a := Application{Name: app.Name, DisplayName: app.Spec.DisplayName, Environments: []Environment{}, Snapshots: []string{}}
		ss := snapshots[app.Name]
		sort.SliceStable(ss, func(i, j int) bool { return ss[j].CreationTimestamp.Before(&ss[i].CreationTimestamp) })
		for _, s := range ss {
			a.Snapshots = append(a.Snapshots, s.Name)
		}
		depths := depth(envs)
		for _, env := range envs {
			a.Environments = append(a.Environments, environment(app.Name, env, depths[env.Name], bindings, deployments, runs))
		}
		sort.SliceStable(a.Environments, func(i, j int) bool {
			x, y := a.Environments[i], a.Environments[j]
			return x.Depth < y.Depth || x.Depth == y.Depth && x.Name < y.Name
		})
		st.Applications = append(st.Applications, a)
	}
	entries := snap.objects[kindAudit]
	for i := len(entries) - 1; i >= 0 && len(st.History) < historyLength; i-- {
		st.History = append(st.History, entry(entries[i]))
	}
	// Newest first: by time, then by name (the write's resourceVersion).
	sort.SliceStable(st.History, func(i, j int) bool {
		if st.History[i].Time != st.History[j].Time {
			return st.History[i].Time > st.History[j].Time
		}
		return st.History[i].Name > st.History[j].Name
	})
	return st
}

// depth is each Environment's distance from the root of its graph: 0 without a parent (or
// with one that does not exist), its parent's plus one otherwise; an Environment of a cycle
// stops at the number of Environments.
func depth(envs []appstudiov1alpha1.Environment) map[string]int {
	parent := map[string]string{}
	for _, e := range envs {
		parent[e.Name] = e.Spec.ParentEnvironment
	}
	out := map[string]int{}
	for _, e := range envs {
		d, at := 0, e.Name
		for d < len(envs) {
			p := parent[at]
			if _, ok := parent[p]; p == "" || !ok {
				break
			}
			at = p
			d++
		}
		out[e.Name] = d
	}
	return out
}

func environment(app string, env appstudiov1alpha1.Environment, depth int, bindings []*appstudiov1alpha1.SnapshotEnvironmentBinding,
	deployments map[string]*managedv1alpha1.GitOpsDeployment, runs []*appstudiov1alpha1.PromotionRun) Environment {
	e := Environment{Name: env.Name, DisplayName: env.Spec.DisplayName, Parent: env.Spec.ParentEnvironment,
		Strategy: string(env.Spec.DeploymentStrategy), Depth: depth}
	for _, b := range bindings {
		if b.Spec.Application != app || b.Spec.Environment != env.Name {
			continue
		}
		e.Binding, e.Snapshot = b.Name, b.Spec.Snapshot
		deployed := findCondition(b.Status.ComponentDeploymentConditions, appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed)
		reconciled := findCondition(b.Status.BindingConditions, appstudiov1alpha1.BindingConditionReconciled)
		switch {
		case reconciled != nil && reconciled.Status == metav1.ConditionFalse:
			e.Problem, e.State = true, "not reconciled: "+reconciled.Reason+": "+reconciled.Message
		case deployed == nil:
			e.State = "no GitOpsDeployment yet"
		default:
			e.State, e.Problem = deployed.Message, deployed.Status != metav1.ConditionTrue
		}
		seen := map[string]bool{}
		for _, s := range b.Status.GitOpsDeployments {
			if s.GitOpsDeployment != "" && !seen[s.GitOpsDeployment] {
				seen[s.GitOpsDeployment] = true
				e.Deployments = append(e.Deployments, s.GitOpsDeployment)
			}
		}
		for _, name := range sortedNames(deployments) {
			if ref := metav1.GetControllerOf(deployments[name]); ref != nil && ref.UID == b.UID && !seen[name] {
				seen[name] = true
				e.Deployments = append(e.Deployments, name)
			}
		}
		e.Sync, e.Health = summary(e.Deployments, deployments)
		break
	}
	for _, r := range runs {
		if r.Spec.Application != app || r.Status.State == appstudiov1alpha1.PromotionRunStateComplete {
			continue
		}
		for _, s := range r.Status.EnvironmentStatus {
			if s.EnvironmentName == env.Name && s.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress {
				e.Promotion = &Step{Run: r.Name, Snapshot: r.Spec.Snapshot, Status: string(s.Status), Display: s.DisplayStatus,
					Approval: strings.HasPrefix(s.DisplayStatus, "Waiting for approvals")}
			}
		}
		if e.Promotion == nil && len(r.Status.EnvironmentStatus) == 0 && r.Spec.ManualPromotion.TargetEnvironment == env.Name {
			e.Promotion = &Step{Run: r.Name, Snapshot: r.Spec.Snapshot, Status: "Pending", Display: "not started yet"}
		}
		if e.Promotion != nil {
			break
		}
	}
	return e
}

// summary is the sync and health of an Environment's deployments: the first that is not
// Synced (Healthy), else Synced (Healthy); empty without deployments.
func summary(names []string, deployments map[string]*managedv1alpha1.GitOpsDeployment) (string, string) {
	if len(names) == 0 {
		return "", ""
	}
	sync, health := string(managedv1alpha1.SyncStatusCodeSynced), string(managedv1alpha1.HealthStatusCodeHealthy)
	for _, n := range names {
		d, ok := deployments[n]
		if !ok {
			return "Missing", "Missing"
		}
		if s := orUnknown(string(d.Status.Sync.Status)); s != string(managedv1alpha1.SyncStatusCodeSynced) && sync == string(managedv1alpha1.SyncStatusCodeSynced) {
			sync = s
		}
		if h := orUnknown(string(d.Status.Health.Status)); h != string(managedv1alpha1.HealthStatusCodeHealthy) && health == string(managedv1alpha1.HealthStatusCodeHealthy) {
			health = h
		}
	}
	return sync, health
}

func deployment(d *managedv1alpha1.GitOpsDeployment) Deployment {
	out := Deployment{Name: d.Name, Type: string(d.Spec.Type), Manual: d.Spec.Type == managedv1alpha1.GitOpsDeploymentSpecTypeManual,
		Sync: orUnknown(string(d.Status.Sync.Status)), Health: orUnknown(string(d.Status.Health.Status)),
		HealthMessage: d.Status.Health.Message, Repo: d.Spec.Source.RepoURL, Path: d.Spec.Source.Path,
		Target: d.Spec.Source.TargetRevision, Revision: d.Status.Sync.Revision, Labels: d.Labels, Resources: []Resource{}, Records: []Record{}}
	if ref := metav1.GetControllerOf(d); ref != nil && ref.Kind == kindBinding {
		out.Binding = ref.Name
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == managedv1alpha1.GitOpsDeploymentConditionResourcesReady:
			out.Ready = &Condition{Status: string(c.Status), Reason: string(c.Reason), Message: c.Message}
		case c.Status == managedv1alpha1.GitOpsConditionStatusTrue &&
			(c.Type == managedv1alpha1.GitOpsDeploymentConditionErrorOccurred || strings.HasSuffix(string(c.Type), "Error")):
			out.Problems = append(out.Problems, string(c.Type)+": "+c.Message)
		}
	}
	if op := d.Status.OperationState; op != nil && (op.Phase == managedv1alpha1.OperationPhaseFailed || op.Phase == managedv1alpha1.OperationPhaseError) {
		out.Problems = append(out.Problems, "sync "+string(op.Phase)+": "+op.Message)
	}
	for _, r := range d.Status.Resources {
		res := Resource{Kind: r.Kind, Name: r.Name, Namespace: r.Namespace, Status: string(r.Status)}
		if r.Health != nil {
			res.Health, res.Message = string(r.Health.Status), r.Health.Message
		}
		out.Resources = append(out.Resources, res)
	}
	return out
}

func record(r *managedv1alpha1.DeploymentRecord) Record {
	out := Record{Name: r.Name, Revision: r.Spec.Revision, Trigger: string(r.Spec.Trigger.Type), User: r.Spec.Trigger.User,
		SyncRun: r.Spec.Trigger.SyncRun, Binding: r.Spec.Trigger.Binding, Snapshot: r.Spec.Trigger.Snapshot,
		Phase: orUnknown(string(r.Status.Phase)), Message: r.Status.Message, Started: r.Spec.StartedAt.UTC().Format(time.RFC3339),
		Resources: len(r.Status.Resources)}
	if f := r.Status.FinishedAt; f != nil {
		out.Finished = f.UTC().Format(time.RFC3339)
	}
	for _, res := range r.Status.Resources {
		if res.Status == "SyncFailed" {
			out.Failed++
		}
	}
	return out
}

func run(r *appstudiov1alpha1.PromotionRun) Run {
	out := Run{Name: r.Name, Application: r.Spec.Application, Snapshot: r.Spec.Snapshot,
		Target: r.Spec.ManualPromotion.TargetEnvironment, State: orUnknown(string(r.Status.State)),
		Result: string(r.Status.CompletionResult), Created: r.CreationTimestamp.UTC().Format(time.RFC3339)}
	if out.Target == "" && r.Spec.AutomatedPromotion.InitialEnvironment != "" {
		out.Target = r.Spec.AutomatedPromotion.InitialEnvironment + " and on"
	}
	for _, s := range r.Status.EnvironmentStatus {
		out.Steps = append(out.Steps, Step{Run: r.Name, Snapshot: r.Spec.Snapshot, Status: string(s.Status), Display: s.EnvironmentName + ": " + s.DisplayStatus,
			Approval: s.Status == appstudiov1alpha1.PromotionRunEnvironmentStatusInProgress && strings.HasPrefix(s.DisplayStatus, "Waiting for approvals")})
	}
	return out
}

func entry(o runtime.Object) Entry {
	a := o.(*managedv1alpha1.AuditEntry)
	e := Entry{Name: a.Name, Time: a.Time.UTC().Format("2006-01-02T15:04:05.000Z"), User: a.User.Username, Verb: a.Verb,
		Resource: a.Object.Resource, Subresource: a.Object.Subresource, Object: a.Object.Name}
	return e
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
