package snapshotenvironmentbinding

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/environment"
)

const ns = "tenant"

var (
	now     = metav1.NewTime(time.Unix(10000, 0))
	earlier = metav1.NewTime(time.Unix(1000, 0))
)

// binding is the binding "seb" of Application "app" to Environment "staging", created long
// ago, with application-service's report of components a and b.
func binding(mutate ...func(*appstudiov1alpha1.SnapshotEnvironmentBinding)) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	b := &appstudiov1alpha1.SnapshotEnvironmentBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "seb", Namespace: ns, UID: "seb-uid", CreationTimestamp: earlier},
		Spec: appstudiov1alpha1.SnapshotEnvironmentBindingSpec{Application: "app", Environment: "staging", Snapshot: "snap",
			Components: []appstudiov1alpha1.BindingComponent{{Name: "a"}, {Name: "b"}}},
		Status: appstudiov1alpha1.SnapshotEnvironmentBindingStatus{
			// Reported out of order: the status is sorted.
			Components: []appstudiov1alpha1.BindingComponentStatus{component("b"), component("a")},
			GitOpsRepoConditions: []metav1.Condition{
				{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: earlier},
			},
		},
	}
	for _, m := range mutate {
		m(b)
	}
	return b
}

func component(name string) appstudiov1alpha1.BindingComponentStatus {
	return appstudiov1alpha1.BindingComponentStatus{Name: name, GitOpsRepository: appstudiov1alpha1.BindingComponentGitOpsRepository{
		URL: "https://github.com/org/gitops", Branch: "main", Path: "components/" + name + "/overlays/staging",
	}}
}

func application() *appstudiov1alpha1.Application {
	return &appstudiov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}
}

func env(mutate ...func(*appstudiov1alpha1.Environment)) *appstudiov1alpha1.Environment {
	e := &appstudiov1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: ns, UID: "env-uid"},
		Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: "Staging", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
	}
	for _, m := range mutate {
		m(e)
	}
	return e
}

func withCredentials(targetNamespace string) func(*appstudiov1alpha1.Environment) {
	return func(e *appstudiov1alpha1.Environment) {
		e.Spec.UnstableConfigurationFields = &appstudiov1alpha1.UnstableEnvironmentConfiguration{
			KubernetesClusterCredentials: appstudiov1alpha1.KubernetesClusterCredentials{
				TargetNamespace: targetNamespace, APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "creds",
			},
		}
	}
}

func withClaim(e *appstudiov1alpha1.Environment) {
	e.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim"
}

func claim(targetName string) *appstudiov1alpha1.DeploymentTargetClaim {
	return &appstudiov1alpha1.DeploymentTargetClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: ns},
		Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: "isolation-level-namespace", TargetName: targetName},
		Status:     appstudiov1alpha1.DeploymentTargetClaimStatus{Phase: appstudiov1alpha1.DeploymentTargetClaimPhaseBound},
	}
}

func target(name, claimRef, defaultNamespace string) *appstudiov1alpha1.DeploymentTarget {
	return &appstudiov1alpha1.DeploymentTarget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appstudiov1alpha1.DeploymentTargetSpec{
			DeploymentTargetClassName: "isolation-level-namespace",
			ClaimRef:                  claimRef,
			KubernetesClusterCredentials: appstudiov1alpha1.DeploymentTargetKubernetesClusterCredentials{
				DefaultNamespace: defaultNamespace, APIURL: "https://sandbox.example.com:6443", ClusterCredentialsSecret: "space-secret",
			},
		},
	}
}

func ownerOf(b *appstudiov1alpha1.SnapshotEnvironmentBinding) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "appstudio.redhat.com/v1alpha1", Kind: "SnapshotEnvironmentBinding", Name: b.Name, UID: b.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// deployment is the GitOpsDeployment that binding() generates for component c, deploying
// into its own namespace, as the API would hold it.
func deployment(c string, mutate ...func(*managedv1alpha1.GitOpsDeployment)) *managedv1alpha1.GitOpsDeployment {
	d := &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: "seb-app-staging-" + c, Namespace: ns, UID: types.UID("uid-" + c), ResourceVersion: "5",
			Labels: map[string]string{
				"appstudio.openshift.io/application": "app", "appstudio.openshift.io/component": c,
				"appstudio.openshift.io/environment": "staging",
			},
			OwnerReferences: []metav1.OwnerReference{ownerOf(binding())},
		},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{RepoURL: "https://github.com/org/gitops", Path: "components/" + c + "/overlays/staging",
				TargetRevision: "main"},
			Type: managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

// fresh is d as the plan makes it for a create: no UID, resourceVersion or status.
func fresh(d *managedv1alpha1.GitOpsDeployment) *managedv1alpha1.GitOpsDeployment {
	d.UID, d.ResourceVersion = "", ""
	return d
}

func withStatus(sync managedv1alpha1.SyncStatusCode, health managedv1alpha1.HealthStatusCode, revision string) func(*managedv1alpha1.GitOpsDeployment) {
	return func(d *managedv1alpha1.GitOpsDeployment) {
		d.Status.Sync = managedv1alpha1.SyncStatus{Status: sync, Revision: revision}
		d.Status.Health = managedv1alpha1.HealthStatus{Status: health}
	}
}

func withDestination(environment, namespace string) func(*managedv1alpha1.GitOpsDeployment) {
	return func(d *managedv1alpha1.GitOpsDeployment) {
		d.Spec.Destination = managedv1alpha1.ApplicationDestination{Environment: environment, Namespace: namespace}
	}
}

func deployments(ds ...*managedv1alpha1.GitOpsDeployment) map[string]*managedv1alpha1.GitOpsDeployment {
	out := map[string]*managedv1alpha1.GitOpsDeployment{}
	for _, d := range ds {
		out[d.Name] = d
	}
	return out
}

func reconciledConds(ltt metav1.Time) []metav1.Condition {
	return []metav1.Condition{
		{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "ErrorOccurred", LastTransitionTime: ltt},
		{Type: "Reconciled", Status: metav1.ConditionTrue, Reason: "Reconciled", LastTransitionTime: ltt},
	}
}

func problemConds(reason, msg string, ltt metav1.Time) []metav1.Condition {
	return []metav1.Condition{
		{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "ErrorOccurred", Message: msg, LastTransitionTime: ltt},
		{Type: "Reconciled", Status: metav1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: ltt},
	}
}

func deployedCond(status metav1.ConditionStatus, msg string, ltt metav1.Time) []metav1.Condition {
	reason := "CommitsUnsynced"
	if status == metav1.ConditionTrue {
		reason = "CommitsSynced"
	}
	return []metav1.Condition{{Type: "AllComponentsDeployed", Status: status, Reason: reason, Message: msg, LastTransitionTime: ltt}}
}

func entry(c, sync, health, commit string) appstudiov1alpha1.BindingStatusGitOpsDeployment {
	return appstudiov1alpha1.BindingStatusGitOpsDeployment{ComponentName: c, GitOpsDeployment: "seb-app-staging-" + c,
		SyncStatus: sync, Health: health, CommitID: commit}
}

// statusWith is binding()'s status with the service's fields set.
func statusWith(entries []appstudiov1alpha1.BindingStatusGitOpsDeployment, deployed, bindingConds []metav1.Condition) *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
	st := binding().Status
	st.GitOpsDeployments, st.ComponentDeploymentConditions, st.BindingConditions = entries, deployed, bindingConds
	return &st
}

// problemPlan is the plan that reports a new problem and writes nothing else.
func problemPlan(b *appstudiov1alpha1.SnapshotEnvironmentBinding, reason, msg string) plan {
	st := b.Status.DeepCopy()
	st.BindingConditions = problemConds(reason, msg, now)
	return plan{status: st, problem: &problem{reason, msg}}
}

// generationProblemPlan is the plan that reports a new ErrorGeneratingGitOpsDeployment
// problem, writes nothing else, and looks again in 10 seconds (reference §3.6).
func generationProblemPlan(b *appstudiov1alpha1.SnapshotEnvironmentBinding, msg string) plan {
	p := problemPlan(b, "ErrorGeneratingGitOpsDeployment", msg)
	p.requeueAfter = 10 * time.Second
	return p
}

// upToDate is binding() with the status the plan gives a and b deployed as deployment() has them.
func upToDate(mutate ...func(*appstudiov1alpha1.SnapshotEnvironmentBinding)) *appstudiov1alpha1.SnapshotEnvironmentBinding {
	return binding(append([]func(*appstudiov1alpha1.SnapshotEnvironmentBinding){func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
		b.Status = *statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", ""), entry("b", "", "", "")},
			deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", earlier), reconciledConds(earlier))
	}}, mutate...)...)
}

func TestDeploymentName(t *testing.T) {
	long := strings.Repeat("b", 100)
	short := DeploymentName("seb", "app", "staging", "comp")
	if short != "seb-app-staging-comp" {
		t.Errorf("name %q", short)
	}
	// 100+1+150+1+7+1+4 > 250: the application and environment go.
	if got := DeploymentName(long, strings.Repeat("a", 150), "staging", "comp"); got != long+"-comp" {
		t.Errorf("long name %q, want <binding>-<component>", got)
	}
	// A binding of 253 characters: the shortened name is still too long, so it is hashed.
	binding := strings.Repeat("s", 253)
	full := binding + "-app-staging-comp"
	got := DeploymentName(binding, "app", "staging", "comp")
	want := (binding + "-comp")[:180] + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(full)))
	if got != want {
		t.Errorf("hashed name %q, want %q", got, want)
	}
	if len(got) != 180+1+64 || len(validation.IsDNS1123Subdomain(got)) > 0 {
		t.Errorf("hashed name %q of %d characters is not a valid name", got, len(got))
	}
	// 250 characters is not too long.
	if got := DeploymentName(strings.Repeat("x", 233), "app", "staging", "comp"); len(got) != 250 || !strings.Contains(got, "-app-staging-") {
		t.Errorf("a name of 250 characters shortened: %q", got)
	}
}

func TestPlanBinding(t *testing.T) {
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "x", UID: "x-uid", Controller: ptr.To(true)}
	oldBinding := binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.UID = "old-uid" })
	bothDeployed := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{
		entry("a", "Synced", "Healthy", "c1"), entry("b", "Synced", "Healthy", "c2")},
		deployedCond(metav1.ConditionTrue, "2 of 2 components deployed", now), reconciledConds(earlier))
	tooLongApp := strings.Repeat("a", 64)

	for _, tc := range []struct {
		name  string
		state state
		want  plan
	}{
		// The binding itself.
		{
			name:  "binding gone: the GitOpsDeployments it controls go, others stay",
			state: state{name: "seb", deployments: deployments(deployment("a"), deployment("b", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences = []metav1.OwnerReference{other} }))},
			want:  plan{delete: []*managedv1alpha1.GitOpsDeployment{deployment("a")}},
		},
		{
			name: "binding gone: those of an earlier binding of the name go too",
			state: state{name: "seb", deployments: deployments(deployment("a", func(d *managedv1alpha1.GitOpsDeployment) {
				d.OwnerReferences = []metav1.OwnerReference{ownerOf(oldBinding)}
			}))},
			want: plan{delete: []*managedv1alpha1.GitOpsDeployment{deployment("a", func(d *managedv1alpha1.GitOpsDeployment) {
				d.OwnerReferences = []metav1.OwnerReference{ownerOf(oldBinding)}
			})}},
		},
		{
			name: "binding being deleted: nothing is written",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.DeletionTimestamp = &now }),
				application: application(), environment: env(), deployments: deployments(deployment("a"))},
		},
		// The orphan rule.
		{
			name: "Application missing, binding younger than 3 minutes: look again when it is 3 minutes old",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
			}), environment: env()},
			want: plan{requeueAfter: 2 * time.Minute},
		},
		{
			name: "Application missing, binding 3 minutes old: the binding is deleted",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Minute))
			})},
			want: plan{deleteBinding: true},
		},
		// The Environment.
		{
			name:  "Environment missing: nothing is written",
			state: state{binding: binding(), application: application(), deployments: deployments(deployment("a"))},
		},
		// application-service's report.
		{
			name: "last GitOps repository condition False: GitOpsRepoNotReady, nothing else",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.GitOpsRepoConditions = append(b.Status.GitOpsRepoConditions,
					metav1.Condition{Type: "GitOpsResourcesPushed", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: earlier})
			}), application: application(), environment: env(), deployments: deployments(deployment("a"))},
			want: problemPlan(binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.GitOpsRepoConditions = append(b.Status.GitOpsRepoConditions,
					metav1.Condition{Type: "GitOpsResourcesPushed", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: earlier})
			}), "GitOpsRepoNotReady", "Cannot Reconcile Binding 'seb', since GitOps Repo Conditions status is false."),
		},
		{
			name: "a problem already reported is not reported again",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.GitOpsRepoConditions[0].Status = metav1.ConditionFalse
				b.Status.BindingConditions = problemConds("GitOpsRepoNotReady", msgGitOpsRepoNotReady("seb"), earlier)
			}), application: application(), environment: env()},
		},
		{
			name: "neither repository conditions nor components: WaitingForComponentStatus, and the binding's GitOpsDeployments go",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status = appstudiov1alpha1.SnapshotEnvironmentBindingStatus{}
			}),
				application: application(), environment: env(),
				deployments: deployments(deployment("a"), deployment("b", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences = nil }))},
			want: func() plan {
				p := problemPlan(binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
					b.Status = appstudiov1alpha1.SnapshotEnvironmentBindingStatus{}
				}),
					"WaitingForComponentStatus", "SnapshotEventBinding Component status is required to generate GitOps deployment, "+
						"waiting for the Application Service controller to finish reconciling binding 'seb'")
				p.delete = []*managedv1alpha1.GitOpsDeployment{deployment("a")}
				return p
			}(),
		},
		{
			name: "repository ready but no components: every GitOpsDeployment goes, 0 of 0 deployed",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Status.Components = nil }),
				application: application(), environment: env(), deployments: deployments(deployment("a"))},
			want: plan{delete: []*managedv1alpha1.GitOpsDeployment{deployment("a")}, status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
				st := statusWith(nil, deployedCond(metav1.ConditionTrue, "0 of 0 components deployed", now), reconciledConds(now))
				st.Components = nil
				return st
			}()},
		},
		{
			name: "duplicate components: DuplicateComponents, nothing else",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.Components = append(b.Status.Components, component("a"))
			}), application: application(), environment: env()},
			want: problemPlan(binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.Components = append(b.Status.Components, component("a"))
			}), "DuplicateComponents", "duplicate component keys found in status field in a"),
		},
		{
			name: "no repository conditions but components reported: not WaitingForComponentStatus, the GitOpsDeployments are generated",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Status.GitOpsRepoConditions = nil }),
				application: application(), environment: env()},
			want: plan{
				create: []*managedv1alpha1.GitOpsDeployment{fresh(deployment("a")), fresh(deployment("b"))},
				status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
					st := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", ""), entry("b", "", "", "")},
						deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", now), reconciledConds(now))
					st.GitOpsRepoConditions = nil
					return st
				}(),
			},
		},
		{
			name: "only the last repository condition counts: False then True is reconciled, and GitOpsRepoNotReady resolved",
			state: state{binding: upToDate(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.GitOpsRepoConditions = []metav1.Condition{
					{Type: "GitOpsResourcesPushed", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: earlier},
					{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: earlier},
				}
				b.Status.BindingConditions = problemConds("GitOpsRepoNotReady", "Cannot Reconcile Binding 'seb', since GitOps Repo Conditions status is false.", earlier)
			}), application: application(), environment: env(), deployments: deployments(deployment("a"), deployment("b"))},
			want: plan{status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
				st := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", ""), entry("b", "", "", "")},
					deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", earlier), reconciledConds(now))
				st.GitOpsRepoConditions = []metav1.Condition{
					{Type: "GitOpsResourcesPushed", Status: metav1.ConditionFalse, Reason: "Failed", LastTransitionTime: earlier},
					{Type: "GitOpsResourcesGenerated", Status: metav1.ConditionTrue, Reason: "OK", LastTransitionTime: earlier},
				}
				return st
			}()},
		},
		// Generation.
		{
			name:  "new binding: one automated GitOpsDeployment per component into the binding's namespace, and the status",
			state: state{binding: binding(), application: application(), environment: env()},
			want: plan{
				create: []*managedv1alpha1.GitOpsDeployment{fresh(deployment("a")), fresh(deployment("b"))},
				status: statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", ""), entry("b", "", "", "")},
					deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", now), reconciledConds(now)),
			},
		},
		{
			name:  "up to date: nothing to write",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"), deployment("b"))},
		},
		{
			name:  "a GitOpsDeployment deleted by hand is created again",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"))},
			want:  plan{create: []*managedv1alpha1.GitOpsDeployment{fresh(deployment("b"))}},
		},
		{
			name: "labels: only keys containing appstudio.openshift.io are copied from the binding",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Labels = map[string]string{"appstudio.openshift.io/snapshot": "snap", "team.appstudio.openshift.io/owner": "jane",
					"appstudio.redhat.com/other": "no", "app": "no"}
				b.Status.Components = b.Status.Components[1:]
			}), application: application(), environment: env()},
			want: plan{
				create: []*managedv1alpha1.GitOpsDeployment{fresh(deployment("a", func(d *managedv1alpha1.GitOpsDeployment) {
					d.Labels["appstudio.openshift.io/snapshot"] = "snap"
					d.Labels["team.appstudio.openshift.io/owner"] = "jane"
				}))},
				status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
					st := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", "")},
						deployedCond(metav1.ConditionFalse, "0 of 1 components deployed", now), reconciledConds(now))
					st.Components = st.Components[1:]
					return st
				}(),
			},
		},
		{
			name: "a label value longer than 63 characters: ErrorGeneratingGitOpsDeployment, nothing written",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Spec.Application = tooLongApp }),
				application: application(), environment: env()},
			want: generationProblemPlan(binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Spec.Application = tooLongApp }),
				"unable to set label appstudio.openshift.io/application on GitOpsDeployment seb-"+tooLongApp+
					"-staging-a: value '"+tooLongApp+"': must be no more than 63 characters"),
		},
		{
			name: "a component whose name makes no valid name: ErrorGeneratingGitOpsDeployment",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.Components = []appstudiov1alpha1.BindingComponentStatus{component("Bad")}
			}), application: application(), environment: env()},
			want: generationProblemPlan(binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.Components = []appstudiov1alpha1.BindingComponentStatus{component("Bad")}
			}), `invalid GitOpsDeployment name "seb-app-staging-Bad" for component Bad: `+
				strings.Join(validation.IsDNS1123Subdomain("seb-app-staging-Bad"), "; ")),
		},
		// Destinations.
		{
			name: "Environment with credentials: its ManagedEnvironment and target namespace",
			state: state{binding: upToDate(), application: application(), environment: env(withCredentials("prod-ns")),
				deployments: deployments(deployment("a", withDestination("managed-environment-staging", "prod-ns")), deployment("b"))},
			want: plan{update: []*managedv1alpha1.GitOpsDeployment{deployment("b", withDestination("managed-environment-staging", "prod-ns"))}},
		},
		{
			name:  "Environment with credentials but no target namespace: the original's user error",
			state: state{binding: binding(), application: application(), environment: env(withCredentials(""))},
			want:  generationProblemPlan(binding(), "Environment is missing a TargetNamespace field"),
		},
		{
			name:  "Environment with a claim that is missing: the original's user error",
			state: state{binding: binding(), application: application(), environment: env(withClaim)},
			want:  generationProblemPlan(binding(), "DeploymentTargetClaim referenced by Environment does not exist."),
		},
		{
			name:  "Environment with a claim bound to no target: the original's user error",
			state: state{binding: binding(), application: application(), environment: env(withClaim), claim: claim("")},
			want:  generationProblemPlan(binding(), "unable to locate DeploymentTarget the references DeploymentTargetClaim"),
		},
		{
			name: "Environment with a claim: the ManagedEnvironment and the target's default namespace, which may be empty",
			state: state{binding: upToDate(), application: application(), environment: env(withClaim), claim: claim("dt"), target: target("dt", "claim", ""),
				deployments: deployments(deployment("a", withDestination("managed-environment-staging", "")), deployment("b", withDestination("managed-environment-staging", "")))},
		},
		{
			name: "a generation problem already reported: nothing written, but looked at again in 10 seconds",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.BindingConditions = problemConds("ErrorGeneratingGitOpsDeployment", "Environment is missing a TargetNamespace field", earlier)
			}), application: application(), environment: env(withCredentials(""))},
			want: plan{requeueAfter: 10 * time.Second},
		},
		{
			name: "Environment with both a claim and credentials (stored before the API refused it): the claim's target wins",
			state: state{binding: upToDate(), application: application(), environment: env(withClaim, withCredentials("prod-ns")), claim: claim("dt"),
				target:      target("dt", "claim", "space"),
				deployments: deployments(deployment("a", withDestination("managed-environment-staging", "space")), deployment("b", withDestination("managed-environment-staging", "space")))},
		},
		{
			name: "a problem resolved: the conditions say reconciled",
			state: state{binding: upToDate(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status.BindingConditions = problemConds("ErrorGeneratingGitOpsDeployment", msgClaimNotFound, earlier)
			}), application: application(), environment: env(withClaim), claim: claim("dt"), target: target("dt", "", "space"),
				deployments: deployments(deployment("a", withDestination("managed-environment-staging", "space")), deployment("b", withDestination("managed-environment-staging", "space")))},
			want: plan{status: statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", ""), entry("b", "", "", "")},
				deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", earlier), reconciledConds(now))},
		},
		// Existing GitOpsDeployments.
		{
			name: "manual edits of spec and appstudio labels are reverted; other labels and owners stay",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"),
				deployment("b", func(d *managedv1alpha1.GitOpsDeployment) {
					d.Spec.Source.Path = "elsewhere"
					d.Spec.Type = managedv1alpha1.GitOpsDeploymentSpecTypeManual
					d.Spec.SyncPolicy = &managedv1alpha1.SyncPolicy{SyncOptions: managedv1alpha1.SyncOptions{managedv1alpha1.SyncOptionCreateNamespaceTrue}}
					d.Labels["appstudio.openshift.io/component"] = "z"
					d.Labels["x.appstudio.openshift.io/extra"] = "added"
					d.Labels["user"] = "kept"
					d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"})
				}))},
			want: plan{update: []*managedv1alpha1.GitOpsDeployment{deployment("b", func(d *managedv1alpha1.GitOpsDeployment) {
				d.Labels["user"] = "kept"
				d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"})
			})}},
		},
		{
			name: "a GitOpsDeployment of the name that nothing controls is taken over",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"),
				deployment("b", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences = nil }))},
			want: plan{update: []*managedv1alpha1.GitOpsDeployment{deployment("b")}},
		},
		{
			name: "a GitOpsDeployment of an earlier binding of the name is taken over",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"),
				deployment("b", func(d *managedv1alpha1.GitOpsDeployment) {
					d.OwnerReferences = []metav1.OwnerReference{ownerOf(oldBinding)}
				}))},
			want: plan{update: []*managedv1alpha1.GitOpsDeployment{deployment("b")}},
		},
		{
			name: "a GitOpsDeployment of the name that another object controls: reported, not touched",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(deployment("a"),
				deployment("b", func(d *managedv1alpha1.GitOpsDeployment) { d.OwnerReferences = []metav1.OwnerReference{other} }))},
			want: generationProblemPlan(upToDate(), "GitOpsDeployment seb-app-staging-b exists and is controlled by Deployment x"),
		},
		{
			name: "a component no longer reported: its GitOpsDeployment goes",
			state: state{binding: upToDate(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Status.Components = b.Status.Components[1:] }),
				application: application(), environment: env(), deployments: deployments(deployment("a"), deployment("b"))},
			want: plan{delete: []*managedv1alpha1.GitOpsDeployment{deployment("b")}, status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
				st := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", "")},
					deployedCond(metav1.ConditionFalse, "0 of 1 components deployed", earlier), reconciledConds(earlier))
				st.Components = st.Components[1:]
				return st
			}()},
		},
		{
			name: "a GitOpsDeployment being deleted is neither updated nor deleted again",
			state: state{binding: upToDate(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) { b.Status.Components = b.Status.Components[1:] }),
				application: application(), environment: env(), deployments: deployments(
					deployment("a", func(d *managedv1alpha1.GitOpsDeployment) {
						d.DeletionTimestamp = &now
						d.Spec.Source.Path = "elsewhere"
					}),
					deployment("b", func(d *managedv1alpha1.GitOpsDeployment) { d.DeletionTimestamp = &now }))},
			want: plan{status: func() *appstudiov1alpha1.SnapshotEnvironmentBindingStatus {
				st := statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{entry("a", "", "", "")},
					deployedCond(metav1.ConditionFalse, "0 of 1 components deployed", earlier), reconciledConds(earlier))
				st.Components = st.Components[1:]
				return st
			}()},
		},
		// Status.
		{
			name: "status: sync, health and commit copied, sorted by component; Synced and Healthy both count as deployed",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(
				deployment("a", withStatus("Synced", "Healthy", "c1")), deployment("b", withStatus("Synced", "Healthy", "c2")))},
			want: plan{status: bothDeployed},
		},
		{
			name: "status: OutOfSync is not deployed, even when Healthy",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(
				deployment("a", withStatus("Synced", "Healthy", "c1")), deployment("b", withStatus("OutOfSync", "Healthy", "c2")))},
			want: plan{status: statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{
				entry("a", "Synced", "Healthy", "c1"), entry("b", "OutOfSync", "Healthy", "c2")},
				deployedCond(metav1.ConditionFalse, "1 of 2 components deployed", earlier), reconciledConds(earlier))},
		},
		{
			name: "status: Synced but Progressing is not deployed",
			state: state{binding: upToDate(), application: application(), environment: env(), deployments: deployments(
				deployment("a", withStatus("Synced", "Progressing", "c1")), deployment("b", withStatus("Synced", "Degraded", "c2")))},
			want: plan{status: statusWith([]appstudiov1alpha1.BindingStatusGitOpsDeployment{
				entry("a", "Synced", "Progressing", "c1"), entry("b", "Synced", "Degraded", "c2")},
				deployedCond(metav1.ConditionFalse, "0 of 2 components deployed", earlier), reconciledConds(earlier))},
		},
		{
			name: "status: the one component deployment condition replaces any others",
			state: state{binding: binding(func(b *appstudiov1alpha1.SnapshotEnvironmentBinding) {
				b.Status = *bothDeployed.DeepCopy()
				b.Status.ComponentDeploymentConditions = append(b.Status.ComponentDeploymentConditions,
					metav1.Condition{Type: "Stray", Status: metav1.ConditionTrue, Reason: "Stray", LastTransitionTime: earlier})
			}), application: application(), environment: env(), deployments: deployments(
				deployment("a", withStatus("Synced", "Healthy", "c1")), deployment("b", withStatus("Synced", "Healthy", "c2")))},
			want: plan{status: bothDeployed},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.state.name == "" {
				tc.state.name = tc.state.binding.Name
			}
			if tc.state.deployments == nil {
				tc.state.deployments = deployments()
			}
			got := planBinding(tc.state, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan\n got %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

func TestBoundTarget(t *testing.T) {
	for _, tc := range []struct {
		name       string
		targetName string
		targets    []*appstudiov1alpha1.DeploymentTarget
		want       string
	}{
		{name: "named and claiming it", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "")}, want: "dt"},
		{name: "named, claiming nothing", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "", "")}, want: "dt"},
		{name: "named, missing", targetName: "dt"},
		{name: "named, claiming another claim", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "other", "")}},
		{name: "unnamed, one claiming it", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "")}, want: "dt"},
		{name: "unnamed, none claiming it", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "other", "")}},
		{name: "unnamed, two claiming it", targets: []*appstudiov1alpha1.DeploymentTarget{target("a", "claim", ""), target("b", "claim", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if dt, _ := environment.BoundTarget(claim(tc.targetName), tc.targets); dt != nil {
				got = dt.Name
			}
			if got != tc.want {
				t.Errorf("boundTarget = %q, want %q", got, tc.want)
			}
		})
	}
}

// describe is p as JSON, for failure messages.
func describe(p plan) string {
	out := map[string]interface{}{"deleteBinding": p.deleteBinding, "requeueAfter": p.requeueAfter.String(),
		"create": p.create, "update": p.update, "delete": p.delete, "status": p.status}
	if p.problem != nil {
		out["problem"] = []string{p.problem.reason, p.problem.message}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}

func TestAllComponentsDeployedSaysWhy(t *testing.T) {
	entries := []appstudiov1alpha1.BindingStatusGitOpsDeployment{
		entry("a", "Synced", "Healthy", "c1"), entry("b", "Synced", "Degraded", "c1"), entry("c", "OutOfSync", "Missing", "c1"),
	}
	why := map[string]string{
		"a": "stale: a deployed component's reason is not quoted",
		"b": `1 of 1 resource not Synced and Healthy: Deployment/web: Degraded: Deployment "web" exceeded its progress deadline`,
	}
	got := allComponentsDeployed(nil, entries, why, now)
	want := deployedCond(metav1.ConditionFalse, `1 of 3 components deployed; b: 1 of 1 resource not Synced and Healthy: `+
		`Deployment/web: Degraded: Deployment "web" exceeded its progress deadline`, now)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	many := map[string]string{}
	entries = nil
	for i := 0; i < 7; i++ {
		c := fmt.Sprintf("c%d", i)
		entries = append(entries, entry(c, "Synced", "Degraded", "x"))
		many[c] = "r"
	}
	msg := allComponentsDeployed(nil, entries, many, now)[0].Message
	if want := "0 of 7 components deployed; c0: r; c1: r; c2: r; c3: r; c4: r; and 2 more"; msg != want {
		t.Errorf("message = %q, want %q", msg, want)
	}

	// Five components each quoting a deployment's longest message stay far below a condition's
	// 32768 characters.
	for c := range many {
		many[c] = strings.Repeat("Deployment/web: Degraded: ", 300)
	}
	if msg := allComponentsDeployed(nil, entries, many, now)[0].Message; len(msg) > maxDeployedMessage+len("…") {
		t.Errorf("message of %d bytes", len(msg))
	}
}
