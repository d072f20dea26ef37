package environment

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/targetindex"
)

// ManagedEnvironmentName is the name of the GitOpsDeploymentManagedEnvironment of the
// Environment env, in the Environment's namespace; SnapshotEnvironmentBindings deploy through it.
func ManagedEnvironmentName(env string) string { return "managed-environment-" + env }

// CopiedSecretName is the name of the managed-environment Secret into which the Environment
// env's DeploymentTarget Secret is copied when that Secret is of another type.
func CopiedSecretName(env string) string { return "managed-environment-secret-" + env }

// ownerAPIVersion is the apiVersion of the ManagedEnvironment's ownerReference to its
// Environment. The Environment is served by appstudio.redhat.com, but the original service
// wrote this group, and its mapping from ManagedEnvironment to Environment (as ours) accepts
// only this one, so ManagedEnvironments it made stay recognised. It also means that no garbage
// collector can resolve the owner, so deleting the ManagedEnvironment is the controller's job.
var ownerAPIVersion = managedv1alpha1.SchemeGroupVersion.String()

const ownerKind = "Environment"

// The messages of the Environment's conditions, as the original service wrote them.
const (
	msgInvalidEnvironment = "Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set"
	msgClaimNotFound      = "DeploymentTargetClaim not found while generating the desired Environment resource"
	// msgTargetMissing: the claim names a DeploymentTarget that does not exist.
	msgTargetMissing = "DeploymentTargetClaim references a DeploymentTarget that does not exist"
	// msgTargetNotBound: no DeploymentTarget claims the claim.
	msgTargetNotBound = "DeploymentTarget not found for DeploymentTargetClaim"
	// msgTargetConflict: the binding is ambiguous or contradicts itself.
	msgTargetConflict = "Unable to find the DeploymentTarget for DeploymentTargetClaim"
)

// reasonCopyNameTaken is beyond the original, which overwrote whatever Secret had the copy's
// name.
const reasonCopyNameTaken = "CopiedSecretNameTaken"

func msgCopyNameTaken(name string) string {
	return "the Secret " + name + " exists and is not a copy this Environment made; rename or delete it so that the " +
		"DeploymentTarget's credentials can be copied there"
}

func msgSecretNotFound(secret string) string {
	return "the secret " + secret + " referenced by the Environment resource was not found"
}

// state is what the controller sees of one Environment key.
type state struct {
	// namespace and name are the Environment's, also once it is gone.
	namespace, name string
	// env is nil once the Environment is gone.
	env *appstudiov1alpha1.Environment
	// claim is the DeploymentTargetClaim the Environment names; nil when it names none or the
	// claim does not exist.
	claim *appstudiov1alpha1.DeploymentTargetClaim
	// target is the DeploymentTarget bound to claim, looked for once claim is Bound;
	// targetProblem says why there is none (BoundTarget).
	target        *appstudiov1alpha1.DeploymentTarget
	targetProblem string
	// secret is the credentials Secret that the target or the Environment names; nil when
	// missing.
	secret *corev1.Secret
	// managedEnvironment and copy are the objects of the Environment's name, nil when missing.
	managedEnvironment *managedv1alpha1.GitOpsDeploymentManagedEnvironment
	copy               *corev1.Secret
	// graphProblem is what keeps the Environment out of automated promotion (a cycle of
	// parents, a missing parent, above it or at it), nil for none.
	graphProblem *promotiongraph.Problem
}

// problem is why the Environment cannot be reconciled: the Reconciled condition's reason and
// message, and the Warning event's.
type problem struct{ reason, message string }

// plan is what to write for one Environment, in this order: the copied Secret, the
// ManagedEnvironment, the Environment's status.
type plan struct {
	// copy is the copied Secret to create (state has none) or update.
	copy       *corev1.Secret
	deleteCopy bool
	// managedEnvironment is the ManagedEnvironment to create (state has none) or update.
	managedEnvironment       *managedv1alpha1.GitOpsDeploymentManagedEnvironment
	deleteManagedEnvironment bool
	// conditions are the Environment's new conditions; nil leaves its status as it is.
	conditions []metav1.Condition
	// problem is set when the conditions report one.
	problem *problem
}

// planEnvironment decides, from what the controller sees, what to write for one Environment.
// It is pure, so every rule can be tested without a cluster.
//
// The rules are the original service's (reference §3.7): an Environment with the credentials
// of a cluster (unstableConfigurationFields) or a DeploymentTargetClaim gets a
// GitOpsDeploymentManagedEnvironment of that cluster; it cannot have both. A claim is used once
// Bound, through the DeploymentTarget bound to it; a DeploymentTarget Secret that is not of the
// managed-environment type (a SpaceRequest's is Opaque) is copied into one that is. A problem
// leaves the ManagedEnvironment as it was and is reported in the ErrorOccurred and Reconciled
// conditions; once it is gone they flip, with the reason "<reason>Resolved". An Environment
// that never had a problem has no conditions.
//
// Beyond the original: what the Environment no longer needs goes (the ManagedEnvironment of
// an Environment that now deploys into its own namespace, a copy no longer used), and
// ManagedEnvironment and copy go with the Environment.
func planEnvironment(s state, now metav1.Time) plan {
	p := planCluster(s, now)
	if s.env != nil {
		base := p.conditions
		if base == nil {
			base = s.env.Status.Conditions
		}
		if conds := graphConditions(base, s.graphProblem, now); conds != nil {
			p.conditions = conds
		}
	}
	return p
}

// planCluster is planEnvironment's part about the cluster the Environment deploys to.
func planCluster(s state, now metav1.Time) plan {
	var p plan
	env := s.env
	if env == nil {
		p.deleteManagedEnvironment = ownedManagedEnvironment(s.managedEnvironment, s.name)
		p.deleteCopy = ownedCopy(s.copy, s.name)
		return p
	}
	fail := func(pr problem) plan {
		p.conditions = problemConditions(env.Status.Conditions, pr, now)
		if p.conditions != nil {
			p.problem = &pr
		}
		return p
	}

	claimName := env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	unstable := env.Spec.UnstableConfigurationFields
	var spec managedv1alpha1.ManagedEnvironmentSpec
	switch {
	case claimName != "" && unstable != nil:
		// The API refuses this; an object stored before it did is reported.
		return fail(problem{appstudiov1alpha1.EnvironmentReasonInvalidEnvironment, msgInvalidEnvironment})
	case claimName != "":
		if s.claim == nil {
			return fail(problem{appstudiov1alpha1.EnvironmentReasonDeploymentTargetClaimNotFound, msgClaimNotFound})
		}
		if s.claim.Status.Phase != appstudiov1alpha1.DeploymentTargetClaimPhaseBound {
			// The claim's binding brings the Environment back; until then nothing is wrong.
			p.conditions = resolvedConditions(env.Status.Conditions, now)
			return p
		}
		if s.target == nil {
			return fail(problem{appstudiov1alpha1.EnvironmentReasonDeploymentTargetNotFound, s.targetProblem})
		}
		creds := s.target.Spec.KubernetesClusterCredentials
		spec = managedv1alpha1.ManagedEnvironmentSpec{
			APIURL:                     creds.APIURL,
			ClusterCredentialsSecret:   creds.ClusterCredentialsSecret,
			AllowInsecureSkipTLSVerify: creds.AllowInsecureSkipTLSVerify,
		}
		if creds.DefaultNamespace != "" {
			spec.Namespaces = []string{creds.DefaultNamespace}
		}
	case unstable != nil:
		creds := unstable.KubernetesClusterCredentials
		spec = managedv1alpha1.ManagedEnvironmentSpec{
			APIURL:                     creds.APIURL,
			ClusterCredentialsSecret:   creds.ClusterCredentialsSecret,
			AllowInsecureSkipTLSVerify: creds.AllowInsecureSkipTLSVerify,
			Namespaces:                 append([]string(nil), creds.Namespaces...),
			ClusterResources:           creds.ClusterResources,
		}
	default:
		// The Environment deploys into its own namespace: no ManagedEnvironment.
		p.deleteManagedEnvironment = ownedManagedEnvironment(s.managedEnvironment, env.Name)
		p.deleteCopy = ownedCopy(s.copy, env.Name)
		p.conditions = resolvedConditions(env.Status.Conditions, now)
		return p
	}

	if s.secret == nil {
		// A copy of a Secret that is gone must not outlive it.
		p.deleteCopy = ownedCopy(s.copy, env.Name)
		return fail(problem{appstudiov1alpha1.EnvironmentReasonSecretNotFound, msgSecretNotFound(spec.ClusterCredentialsSecret)})
	}
	if claimName != "" && s.secret.Type != managedv1alpha1.ManagedEnvironmentSecretType {
		if s.copy != nil && !ownedCopy(s.copy, env.Name) {
			// A Secret of the copy's name that no Environment's copy made holds someone's
			// credentials: overwritten, and deleted with the Environment, they would be lost.
			return fail(problem{reasonCopyNameTaken, msgCopyNameTaken(s.copy.Name)})
		}
		p.copy = copiedSecret(env, s.secret, s.copy)
		spec.ClusterCredentialsSecret = CopiedSecretName(env.Name)
	} else {
		p.deleteCopy = ownedCopy(s.copy, env.Name)
	}
	p.managedEnvironment = desiredManagedEnvironment(env, spec, s.managedEnvironment)
	p.conditions = resolvedConditions(env.Status.Conditions, now)
	return p
}

// BoundTarget is the DeploymentTarget bound to claim among targets (those of its namespace
// that it names or that claim it), or nil and why there is none. A claim that names a target
// must be the one that target claims, if it claims any.
func BoundTarget(claim *appstudiov1alpha1.DeploymentTargetClaim, targets []*appstudiov1alpha1.DeploymentTarget) (*appstudiov1alpha1.DeploymentTarget, string) {
	if name := claim.Spec.TargetName; name != "" {
		for _, t := range targets {
			if t.Name != name {
				continue
			}
			if t.Spec.ClaimRef != "" && !targetindex.Claims(t, claim) {
				return nil, msgTargetConflict
			}
			return t, ""
		}
		return nil, msgTargetMissing
	}
	var bound *appstudiov1alpha1.DeploymentTarget
	for _, t := range targets {
		if !targetindex.Claims(t, claim) {
			continue
		}
		if bound != nil {
			return nil, msgTargetConflict // a claim binds one target
		}
		bound = t
	}
	if bound == nil {
		return nil, msgTargetNotBound
	}
	return bound, ""
}

// desiredManagedEnvironment is the ManagedEnvironment to write for env with spec, given the
// existing one (nil when none); nil when the existing one is already so.
func desiredManagedEnvironment(env *appstudiov1alpha1.Environment, spec managedv1alpha1.ManagedEnvironmentSpec,
	existing *managedv1alpha1.GitOpsDeploymentManagedEnvironment) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
	owner := metav1.OwnerReference{APIVersion: ownerAPIVersion, Kind: ownerKind, Name: env.Name, UID: env.UID}
	if existing == nil {
		return &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
			ObjectMeta: metav1.ObjectMeta{
				Name:            ManagedEnvironmentName(env.Name),
				Namespace:       env.Namespace,
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Spec: spec,
		}
	}
	// One of an earlier Environment of the name, or made by someone else, is taken over.
	owners := withOwner(existing.OwnerReferences, owner, func(r metav1.OwnerReference) bool {
		return r.APIVersion == ownerAPIVersion && r.Kind == ownerKind
	})
	if apiequality.Semantic.DeepEqual(existing.Spec, spec) && apiequality.Semantic.DeepEqual(existing.OwnerReferences, owners) {
		return nil
	}
	upd := existing.DeepCopy()
	upd.Spec = spec
	upd.OwnerReferences = owners
	return upd
}

// copiedSecret is the copy of source to write for env, given the existing copy (nil when
// none); nil when the existing one is already so.
func copiedSecret(env *appstudiov1alpha1.Environment, source, existing *corev1.Secret) *corev1.Secret {
	owner := metav1.OwnerReference{
		APIVersion: appstudiov1alpha1.SchemeGroupVersion.String(), Kind: ownerKind, Name: env.Name, UID: env.UID,
		// The copy lives in the kube-apiserver, whose garbage collector deletes it with the
		// Environment. blockOwnerDeletion is left out: nothing waits for the copy in a
		// foreground deletion, and setting it would need the right to update Environments'
		// finalizers.
		Controller: ptr.To(true),
	}
	if existing == nil {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:            CopiedSecretName(env.Name),
				Namespace:       env.Namespace,
				Labels:          map[string]string{appstudiov1alpha1.EnvironmentSecretLabel: env.Name},
				OwnerReferences: []metav1.OwnerReference{owner},
			},
			Type: managedv1alpha1.ManagedEnvironmentSecretType,
			Data: source.Data,
		}
	}
	owners := withOwner(existing.OwnerReferences, owner, func(r metav1.OwnerReference) bool { return ptr.Deref(r.Controller, false) })
	if apiequality.Semantic.DeepEqual(existing.Data, source.Data) && existing.Labels[appstudiov1alpha1.EnvironmentSecretLabel] == env.Name &&
		apiequality.Semantic.DeepEqual(existing.OwnerReferences, owners) {
		return nil
	}
	upd := existing.DeepCopy()
	upd.Data = source.Data
	if upd.Labels == nil {
		upd.Labels = map[string]string{}
	}
	upd.Labels[appstudiov1alpha1.EnvironmentSecretLabel] = env.Name
	upd.OwnerReferences = owners
	return upd
}

// withOwner is refs with owner in place of those that replace matches.
func withOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference, replace func(metav1.OwnerReference) bool) []metav1.OwnerReference {
	out := []metav1.OwnerReference{owner}
	for _, r := range refs {
		if !replace(r) {
			out = append(out, r)
		}
	}
	return out
}

// ownedManagedEnvironment tells whether me was made for an Environment named env (the
// current one or an earlier one of the name).
func ownedManagedEnvironment(me *managedv1alpha1.GitOpsDeploymentManagedEnvironment, env string) bool {
	if me == nil {
		return false
	}
	for _, r := range me.OwnerReferences {
		if r.APIVersion == ownerAPIVersion && r.Kind == ownerKind && r.Name == env {
			return true
		}
	}
	return false
}

// ownedCopy tells whether s is a copy made for an Environment named env.
func ownedCopy(s *corev1.Secret, env string) bool {
	return s != nil && s.Labels[appstudiov1alpha1.EnvironmentSecretLabel] == env
}

// problemConditions is conds reporting pr: the Reconciled condition and its legacy inverse
// ErrorOccurred. Nil when conds already do.
func problemConditions(conds []metav1.Condition, pr problem, now metav1.Time) []metav1.Condition {
	out := append([]metav1.Condition(nil), conds...)
	meta.SetStatusCondition(&out, metav1.Condition{
		Type: appstudiov1alpha1.EnvironmentConditionErrorOccurred, Status: metav1.ConditionTrue,
		Reason: appstudiov1alpha1.EnvironmentReasonErrorOccurred, Message: pr.message, LastTransitionTime: now,
	})
	meta.SetStatusCondition(&out, metav1.Condition{
		Type: appstudiov1alpha1.EnvironmentConditionReconciled, Status: metav1.ConditionFalse,
		Reason: pr.reason, Message: pr.message, LastTransitionTime: now,
	})
	if apiequality.Semantic.DeepEqual(out, conds) {
		return nil
	}
	return out
}

// resolvedConditions is conds with a reported problem marked resolved: each condition flips,
// its reason gains the suffix "Resolved" and its message goes. Conditions are not added: an
// Environment that never had a problem has none. Nil when nothing changes.
func resolvedConditions(conds []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := append([]metav1.Condition(nil), conds...)
	changed := false
	for i := range out {
		c := &out[i]
		var ok metav1.ConditionStatus
		switch c.Type {
		case appstudiov1alpha1.EnvironmentConditionErrorOccurred:
			ok = metav1.ConditionFalse
		case appstudiov1alpha1.EnvironmentConditionReconciled:
			ok = metav1.ConditionTrue
		default:
			continue
		}
		if c.Status == ok {
			continue
		}
		c.Status, c.Reason, c.Message, c.LastTransitionTime = ok, c.Reason+appstudiov1alpha1.EnvironmentReasonResolvedSuffix, "", now
		changed = true
	}
	if !changed {
		return nil
	}
	return out
}

// graphConditions is conds with the PromotionGraphValid condition reporting problem: False with
// the problem's kind and message; once the problem is gone, True with the reason
// "<kind>Resolved". Like the other conditions, it is not added to an Environment that never had
// a problem. Nil when nothing changes.
func graphConditions(conds []metav1.Condition, problem *promotiongraph.Problem, now metav1.Time) []metav1.Condition {
	out := append([]metav1.Condition(nil), conds...)
	cur := meta.FindStatusCondition(out, appstudiov1alpha1.EnvironmentConditionPromotionGraphValid)
	switch {
	case problem != nil:
		meta.SetStatusCondition(&out, metav1.Condition{Type: appstudiov1alpha1.EnvironmentConditionPromotionGraphValid,
			Status: metav1.ConditionFalse, Reason: string(problem.Kind), Message: problem.Message(), LastTransitionTime: now})
	case cur != nil && cur.Status == metav1.ConditionFalse:
		meta.SetStatusCondition(&out, metav1.Condition{Type: appstudiov1alpha1.EnvironmentConditionPromotionGraphValid,
			Status: metav1.ConditionTrue, Reason: cur.Reason + appstudiov1alpha1.EnvironmentReasonResolvedSuffix, LastTransitionTime: now})
	default:
		return nil
	}
	if apiequality.Semantic.DeepEqual(out, conds) {
		return nil
	}
	return out
}
