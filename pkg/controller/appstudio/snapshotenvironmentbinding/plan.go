package snapshotenvironmentbinding

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/environment"
	"github.com/gitops-service/gitops-service/pkg/controller/framework"
)

// ownerKind is the kind in the ownerReference of a generated GitOpsDeployment.
const ownerKind = "SnapshotEnvironmentBinding"

// appstudioLabelKey: a binding label whose key contains it is copied to the binding's
// GitOpsDeployments, and the GitOpsDeployments' labels whose keys contain it are the binding's
// to set; the others are left to their users.
const appstudioLabelKey = "appstudio.openshift.io"

// orphanGrace is how long a binding may name an Application that does not exist before it is
// deleted: application-service may create the binding before the Application.
const orphanGrace = 3 * time.Minute

// generationRetry is when a binding whose GitOpsDeployments cannot be generated
// (ErrorGeneratingGitOpsDeployment) is looked at again, as the original did (reference §3.6).
// The watches bring it back for most causes, but not for a GitOpsDeployment of a generated
// name that another object controls: its deletion, or its controller's removal, queues only
// that other object's binding, if any.
const generationRetry = 10 * time.Second

// The name rules of the generated GitOpsDeployments (reference §3.6).
const (
	maxNameLength = 250
	// hashedPrefixLength is how much of "<binding>-<component>" a name too long keeps before
	// the hash of the full name.
	hashedPrefixLength = 180
)

// The messages of the binding's conditions, as the original service wrote them.
const (
	msgClaimNotFound          = "DeploymentTargetClaim referenced by Environment does not exist."
	msgTargetNotFound         = "unable to locate DeploymentTarget the references DeploymentTargetClaim"
	msgMissingTargetNamespace = "Environment is missing a TargetNamespace field"
)

func msgGitOpsRepoNotReady(binding string) string {
	return "Cannot Reconcile Binding '" + binding + "', since GitOps Repo Conditions status is false."
}

func msgWaitingForComponentStatus(binding string) string {
	return "SnapshotEventBinding Component status is required to generate GitOps deployment, " +
		"waiting for the Application Service controller to finish reconciling binding '" + binding + "'"
}

func msgDuplicateComponents(component string) string {
	return "duplicate component keys found in status field in " + component
}

// msgControlledByOther: two bindings' names can generate the same GitOpsDeployment name
// ("a-b" of Application "c" and "a" of Application "b-c"); the first keeps it.
func msgControlledByOther(name string, owner *metav1.OwnerReference) string {
	return fmt.Sprintf("GitOpsDeployment %s exists and is controlled by %s %s", name, owner.Kind, owner.Name)
}

// DeploymentName is the name of the GitOpsDeployment that the binding generates for a
// component: "<binding>-<application>-<environment>-<component>"; longer than 250 characters,
// "<binding>-<component>"; still longer, its first 180 characters, "-" and the hex SHA-256 of
// the long name.
func DeploymentName(binding, application, env, component string) string {
	long := binding + "-" + application + "-" + env + "-" + component
	if len(long) <= maxNameLength {
		return long
	}
	short := binding + "-" + component
	if len(short) <= maxNameLength {
		return short
	}
	return fmt.Sprintf("%s-%x", short[:hashedPrefixLength], sha256.Sum256([]byte(long)))
}

// state is what the controller sees of one binding key.
type state struct {
	// namespace and name are the binding's, also once it is gone.
	namespace, name string
	// binding is nil once the binding is gone.
	binding *appstudiov1alpha1.SnapshotEnvironmentBinding
	// application and environment are those the binding names; nil when missing.
	application *appstudiov1alpha1.Application
	environment *appstudiov1alpha1.Environment
	// claim is the environment's DeploymentTargetClaim, nil when it names none or it is
	// missing; target is the DeploymentTarget bound to claim, nil when there is none.
	claim  *appstudiov1alpha1.DeploymentTargetClaim
	target *appstudiov1alpha1.DeploymentTarget
	// deployments by name: those a binding of this name controls, and those of the names it
	// generates.
	deployments map[string]*managedv1alpha1.GitOpsDeployment
}

// problem is why the binding cannot be reconciled: the Reconciled condition's reason and
// message, and the Warning event's.
type problem struct{ reason, message string }

// plan is what to write for one binding, in this order: the binding's deletion (alone), the
// GitOpsDeployments, the binding's status.
type plan struct {
	// deleteBinding: the binding's Application is gone (the orphan rule).
	deleteBinding bool
	// requeueAfter is when to look again, for the orphan rule's grace or a retry of the
	// generation; zero for never.
	requeueAfter time.Duration
	// create, update and delete are GitOpsDeployments: new, changed existing ones, existing
	// ones.
	create, update, delete []*managedv1alpha1.GitOpsDeployment
	// status is the binding's new status; nil leaves it as it is.
	status *appstudiov1alpha1.SnapshotEnvironmentBindingStatus
	// problem is set when status reports one newly.
	problem *problem
}

// planBinding decides, from what the controller sees, what to write for one binding. It is
// pure, so every rule can be tested without a cluster.
//
// The rules are the original service's (reference §3.6): a binding whose Application is
// missing for 3 minutes is deleted; a binding of a missing Environment waits for it. Until
// application-service reports the GitOps repository of each component in the binding's
// status, the binding is not reconciled, and its GitOpsDeployments go when it reports
// neither components nor repository conditions. Each component gets an automated
// GitOpsDeployment of its repository path, deployed to the Environment's cluster, controlled by
// the binding, and labelled with the application, component, environment and the binding's
// appstudio labels; manual changes of spec and appstudio labels are reverted, and the
// GitOpsDeployments of components no longer reported go. The status lists each component's
// GitOpsDeployment with its sync and health, and AllComponentsDeployed counts those both
// Synced and Healthy (the original counted every Synced one whatever its health, and its
// PromotionRun took OutOfSync ones for done). Problems are reported in the ErrorOccurred and
// Reconciled binding conditions; one generating the GitOpsDeployments is retried every 10
// seconds.
//
// Beyond the original: a binding that is gone takes its GitOpsDeployments with it (no garbage
// collector need run), a GitOpsDeployment that another object controls is reported instead of
// being fought over, names and label values that the API would refuse are reported before
// any write, and a reconciled binding's Reconciled condition is True whatever reported the
// problem it had.
func planBinding(s state, now metav1.Time) plan {
	var p plan
	b := s.binding
	if b == nil {
		p.delete = controlled(s.deployments, s.name)
		return p
	}
	if b.DeletionTimestamp != nil {
		// What the binding controls goes once it is gone; a garbage collector, if one runs,
		// may do it first.
		return p
	}
	if s.application == nil {
		if age := now.Sub(b.CreationTimestamp.Time); age >= orphanGrace {
			p.deleteBinding = true
		} else {
			p.requeueAfter = orphanGrace - age
		}
		return p
	}
	if s.environment == nil {
		// The Environment's add event brings the binding back.
		return p
	}
	fail := func(pr problem) plan {
		if pr.reason == appstudiov1alpha1.BindingReasonErrorGeneratingGitOpsDeployment {
			// Also when already reported: only the retry may notice that it is gone.
			p.requeueAfter = generationRetry
		}
		conds := bindingConditions(b.Status.BindingConditions, &pr, now)
		if !apiequality.Semantic.DeepEqual(conds, b.Status.BindingConditions) {
			st := b.Status.DeepCopy()
			st.BindingConditions = conds
			p.status, p.problem = st, &pr
		}
		return p
	}

	repoConds := b.Status.GitOpsRepoConditions
	if n := len(repoConds); n > 0 && repoConds[n-1].Status == metav1.ConditionFalse {
		return fail(problem{appstudiov1alpha1.BindingReasonGitOpsRepoNotReady, msgGitOpsRepoNotReady(b.Name)})
	}
	if len(repoConds) == 0 && len(b.Status.Components) == 0 {
		p.delete = controlled(s.deployments, b.Name)
		return fail(problem{appstudiov1alpha1.BindingReasonWaitingForComponentStatus, msgWaitingForComponentStatus(b.Name)})
	}
	seen := map[string]bool{}
	for _, c := range b.Status.Components {
		if seen[c.Name] {
			return fail(problem{appstudiov1alpha1.BindingReasonDuplicateComponents, msgDuplicateComponents(c.Name)})
		}
		seen[c.Name] = true
	}
	dest, pr := destination(s)
	if pr != nil {
		return fail(*pr)
	}

	components := append([]appstudiov1alpha1.BindingComponentStatus(nil), b.Status.Components...)
	sort.Slice(components, func(i, j int) bool { return components[i].Name < components[j].Name })
	expected := map[string]bool{}
	var entries []appstudiov1alpha1.BindingStatusGitOpsDeployment
	why := map[string]string{} // component → its GitOpsDeployment's ResourcesReady message, when False
	for _, c := range components {
		want, pr := desiredDeployment(b, c, dest)
		if pr != nil {
			return fail(*pr)
		}
		expected[want.Name] = true
		entry := appstudiov1alpha1.BindingStatusGitOpsDeployment{ComponentName: c.Name, GitOpsDeployment: want.Name}
		existing := s.deployments[want.Name]
		if existing == nil {
			p.create = append(p.create, want)
			entries = append(entries, entry)
			continue
		}
		if owner := metav1.GetControllerOf(existing); owner != nil && !isBindingRef(*owner, b.Name) {
			return fail(problem{appstudiov1alpha1.BindingReasonErrorGeneratingGitOpsDeployment, msgControlledByOther(existing.Name, owner)})
		}
		// One being deleted is left to go; its delete event brings the binding back to make it
		// again.
		if upd := updated(existing, want); upd != nil && existing.DeletionTimestamp == nil {
			p.update = append(p.update, upd)
		}
		entry.SyncStatus = string(existing.Status.Sync.Status)
		entry.Health = string(existing.Status.Health.Status)
		entry.CommitID = existing.Status.Sync.Revision
		if r := existing.Status.ResourcesNotReady(); r != "" {
			why[c.Name] = r
		}
		entries = append(entries, entry)
	}
	for _, d := range controlled(s.deployments, b.Name) {
		if !expected[d.Name] {
			p.delete = append(p.delete, d)
		}
	}

	st := b.Status.DeepCopy()
	st.GitOpsDeployments = entries
	st.ComponentDeploymentConditions = allComponentsDeployed(b.Status.ComponentDeploymentConditions, entries, why, now)
	st.BindingConditions = bindingConditions(b.Status.BindingConditions, nil, now)
	if !apiequality.Semantic.DeepEqual(*st, b.Status) {
		p.status = st
	}
	return p
}

// destination is where the binding's GitOpsDeployments deploy: the ManagedEnvironment of an
// Environment with a cluster (through its DeploymentTargetClaim's DeploymentTarget, or its own
// credentials), in the namespace given there; empty, the binding's own namespace.
func destination(s state) (managedv1alpha1.ApplicationDestination, *problem) {
	env := s.environment
	fail := func(msg string) (managedv1alpha1.ApplicationDestination, *problem) {
		return managedv1alpha1.ApplicationDestination{}, &problem{appstudiov1alpha1.BindingReasonErrorGeneratingGitOpsDeployment, msg}
	}
	switch {
	case env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName != "":
		if s.claim == nil {
			return fail(msgClaimNotFound)
		}
		if s.target == nil {
			return fail(msgTargetNotFound)
		}
		return managedv1alpha1.ApplicationDestination{
			Environment: environment.ManagedEnvironmentName(env.Name),
			// May be empty: the GitOpsDeployment then reports it.
			Namespace: s.target.Spec.KubernetesClusterCredentials.DefaultNamespace,
		}, nil
	case env.Spec.UnstableConfigurationFields != nil:
		ns := env.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.TargetNamespace
		if ns == "" {
			return fail(msgMissingTargetNamespace)
		}
		return managedv1alpha1.ApplicationDestination{Environment: environment.ManagedEnvironmentName(env.Name), Namespace: ns}, nil
	}
	return managedv1alpha1.ApplicationDestination{}, nil
}

// desiredDeployment is the GitOpsDeployment that binding b generates for component c, or why
// the API would refuse it.
func desiredDeployment(b *appstudiov1alpha1.SnapshotEnvironmentBinding, c appstudiov1alpha1.BindingComponentStatus,
	dest managedv1alpha1.ApplicationDestination) (*managedv1alpha1.GitOpsDeployment, *problem) {
	name := DeploymentName(b.Name, b.Spec.Application, b.Spec.Environment, c.Name)
	fail := func(msg string) (*managedv1alpha1.GitOpsDeployment, *problem) {
		return nil, &problem{appstudiov1alpha1.BindingReasonErrorGeneratingGitOpsDeployment, msg}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fail(fmt.Sprintf("invalid GitOpsDeployment name %q for component %s: %s", name, c.Name, strings.Join(errs, "; ")))
	}
	labels := map[string]string{}
	for k, v := range b.Labels {
		if strings.Contains(k, appstudioLabelKey) {
			labels[k] = v
		}
	}
	for _, l := range []struct{ key, value string }{
		{appstudiov1alpha1.ApplicationLabel, b.Spec.Application},
		{appstudiov1alpha1.ComponentLabel, c.Name},
		{appstudiov1alpha1.EnvironmentLabel, b.Spec.Environment},
	} {
		// Names may be up to 253 characters, label values only 63.
		if errs := validation.IsValidLabelValue(l.value); len(errs) > 0 {
			return fail(fmt.Sprintf("unable to set label %s on GitOpsDeployment %s: value '%s': %s", l.key, name, l.value, strings.Join(errs, "; ")))
		}
		labels[l.key] = l.value
	}
	return &managedv1alpha1.GitOpsDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       b.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{ownerRef(b)},
		},
		Spec: managedv1alpha1.GitOpsDeploymentSpec{
			Source: managedv1alpha1.ApplicationSource{
				RepoURL: c.GitOpsRepository.URL, Path: c.GitOpsRepository.Path, TargetRevision: c.GitOpsRepository.Branch,
			},
			Destination: dest,
			Type:        managedv1alpha1.GitOpsDeploymentSpecTypeAutomated,
		},
	}, nil
}

func ownerRef(b *appstudiov1alpha1.SnapshotEnvironmentBinding) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: appstudiov1alpha1.SchemeGroupVersion.String(), Kind: ownerKind, Name: b.Name, UID: b.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// isBindingRef tells whether r points at a binding named name, of any UID: one that went
// and came back under the same name takes over what its predecessor made.
func isBindingRef(r metav1.OwnerReference, name string) bool {
	return isBindingKind(r) && r.Name == name
}

// isBindingKind tells whether r points at a binding, of any version of the API.
func isBindingKind(r metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	return err == nil && gv.Group == appstudiov1alpha1.SchemeGroupVersion.Group && r.Kind == ownerKind
}

// controlled is the deployments that a binding named name controls and that are not already
// being deleted (a user's finalizer keeps one until Argo CD has pruned what it deployed), by
// name.
func controlled(deployments map[string]*managedv1alpha1.GitOpsDeployment, name string) []*managedv1alpha1.GitOpsDeployment {
	var out []*managedv1alpha1.GitOpsDeployment
	for _, d := range deployments {
		if owner := metav1.GetControllerOf(d); owner != nil && isBindingRef(*owner, name) && d.DeletionTimestamp == nil {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// updated is existing changed to match want: its spec and appstudio labels, with want's
// controller; the other labels and owners stay. Nil when existing already matches.
func updated(existing, want *managedv1alpha1.GitOpsDeployment) *managedv1alpha1.GitOpsDeployment {
	labels := map[string]string{}
	for k, v := range existing.Labels {
		if !strings.Contains(k, appstudioLabelKey) {
			labels[k] = v
		}
	}
	for k, v := range want.Labels {
		labels[k] = v
	}
	owners := append([]metav1.OwnerReference(nil), want.OwnerReferences...)
	for _, r := range existing.OwnerReferences {
		if !ptr.Deref(r.Controller, false) {
			owners = append(owners, r)
		}
	}
	if apiequality.Semantic.DeepEqual(existing.Spec, want.Spec) && apiequality.Semantic.DeepEqual(existing.Labels, labels) &&
		sameOwners(existing.OwnerReferences, owners) {
		return nil
	}
	upd := existing.DeepCopy()
	upd.Spec = want.Spec
	upd.Labels = labels
	upd.OwnerReferences = owners
	return upd
}

// sameOwners compares owner references regardless of order.
func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		found := false
		for _, o := range b {
			if apiequality.Semantic.DeepEqual(r, o) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// bindingConditions is conds reporting pr, or that the binding is reconciled when pr is nil:
// the Reconciled condition and its legacy inverse ErrorOccurred, whose reason is always
// ErrorOccurred.
func bindingConditions(conds []metav1.Condition, pr *problem, now metav1.Time) []metav1.Condition {
	reconciled := metav1.Condition{Type: appstudiov1alpha1.BindingConditionReconciled, Status: metav1.ConditionTrue,
		Reason: appstudiov1alpha1.BindingReasonReconciled, LastTransitionTime: now}
	errorOccurred := metav1.Condition{Type: appstudiov1alpha1.BindingConditionErrorOccurred, Status: metav1.ConditionFalse,
		Reason: appstudiov1alpha1.BindingReasonErrorOccurred, LastTransitionTime: now}
	if pr != nil {
		reconciled.Status, reconciled.Reason, reconciled.Message = metav1.ConditionFalse, pr.reason, pr.message
		errorOccurred.Status, errorOccurred.Message = metav1.ConditionTrue, pr.message
	}
	out := append([]metav1.Condition(nil), conds...)
	meta.SetStatusCondition(&out, errorOccurred)
	meta.SetStatusCondition(&out, reconciled)
	return out
}

// maxComponentReasons is how many components' reasons AllComponentsDeployed quotes; each is its
// GitOpsDeployment's ResourcesReady message, itself capped.
const maxComponentReasons = 5

// maxDeployedMessage bounds AllComponentsDeployed's message, far below the 32768 characters
// a condition's message may have.
const maxDeployedMessage = 4096

// allComponentsDeployed is the binding's one component deployment condition for entries:
// True when every GitOpsDeployment is both Synced and Healthy, with the count in the message;
// while not, the message adds why for each component whose deployment says (its ResourcesReady
// condition), so that the binding's reader need not look at each GitOpsDeployment.
func allComponentsDeployed(conds []metav1.Condition, entries []appstudiov1alpha1.BindingStatusGitOpsDeployment, why map[string]string,
	now metav1.Time,
) []metav1.Condition {
	deployed := 0
	var reasons []string
	for _, e := range entries {
		if e.SyncStatus == string(managedv1alpha1.SyncStatusCodeSynced) && e.Health == string(managedv1alpha1.HealthStatusCodeHealthy) {
			deployed++
		} else if r := why[e.ComponentName]; r != "" {
			reasons = append(reasons, e.ComponentName+": "+r)
		}
	}
	message := fmt.Sprintf("%d of %d components deployed", deployed, len(entries))
	if len(reasons) > 0 {
		message = framework.TruncateMessage(message+"; "+framework.JoinMessages(reasons, maxComponentReasons), maxDeployedMessage)
	}
	c := metav1.Condition{
		Type: appstudiov1alpha1.ComponentDeploymentConditionAllComponentsDeployed, Status: metav1.ConditionFalse,
		Reason:  appstudiov1alpha1.ComponentDeploymentConditionCommitsUnsynced,
		Message: message, LastTransitionTime: now,
	}
	if deployed == len(entries) {
		c.Status, c.Reason = metav1.ConditionTrue, appstudiov1alpha1.ComponentDeploymentConditionCommitsSynced
	}
	var out []metav1.Condition
	if old := meta.FindStatusCondition(conds, c.Type); old != nil {
		out = append(out, *old)
	}
	meta.SetStatusCondition(&out, c)
	return out
}
