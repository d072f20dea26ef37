package environment

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
	managedv1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
	"github.com/gitops-service/gitops-service/pkg/controller/appstudio/promotiongraph"
)

const ns = "tenant"

var (
	now     = metav1.NewTime(time.Unix(2000, 0))
	earlier = metav1.NewTime(time.Unix(1000, 0))
)

func environmentWith(mutate func(*appstudiov1alpha1.Environment)) *appstudiov1alpha1.Environment {
	env := &appstudiov1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: ns, UID: "env-uid"},
		Spec:       appstudiov1alpha1.EnvironmentSpec{DisplayName: "Staging", DeploymentStrategy: appstudiov1alpha1.DeploymentStrategyManual},
	}
	if mutate != nil {
		mutate(env)
	}
	return env
}

func withCredentials(env *appstudiov1alpha1.Environment) {
	env.Spec.UnstableConfigurationFields = &appstudiov1alpha1.UnstableEnvironmentConfiguration{
		KubernetesClusterCredentials: appstudiov1alpha1.KubernetesClusterCredentials{
			TargetNamespace: "target", APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "creds",
			AllowInsecureSkipTLSVerify: true, Namespaces: []string{"a", "b"}, ClusterResources: true,
		},
	}
}

func withClaim(env *appstudiov1alpha1.Environment) {
	env.Spec.Configuration.Target.DeploymentTargetClaim.ClaimName = "claim"
}

func withConditions(conds ...metav1.Condition) func(*appstudiov1alpha1.Environment) {
	return func(env *appstudiov1alpha1.Environment) { env.Status.Conditions = conds }
}

// claimUID is the UID of claim().
const claimUID = "claim-uid"

func claim(phase appstudiov1alpha1.DeploymentTargetClaimPhase, target string) *appstudiov1alpha1.DeploymentTargetClaim {
	return &appstudiov1alpha1.DeploymentTargetClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: ns, UID: claimUID},
		Spec:       appstudiov1alpha1.DeploymentTargetClaimSpec{DeploymentTargetClassName: "isolation-level-namespace", TargetName: target},
		Status:     appstudiov1alpha1.DeploymentTargetClaimStatus{Phase: phase},
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

func secret(name string, typ corev1.SecretType, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Type:       typ,
		Data:       map[string][]byte{"kubeconfig": []byte(data)},
	}
}

func ownerOf(env *appstudiov1alpha1.Environment) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "managed-gitops.redhat.com/v1alpha1", Kind: "Environment", Name: env.Name, UID: env.UID}
}

func managedEnvironment(owner metav1.OwnerReference, spec managedv1alpha1.ManagedEnvironmentSpec) *managedv1alpha1.GitOpsDeploymentManagedEnvironment {
	return &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
		ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-staging", Namespace: ns, UID: "me-uid", ResourceVersion: "7",
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: spec,
	}
}

var (
	credentialsSpec = managedv1alpha1.ManagedEnvironmentSpec{
		APIURL: "https://cluster.example.com:6443", ClusterCredentialsSecret: "creds", AllowInsecureSkipTLSVerify: true,
		Namespaces: []string{"a", "b"}, ClusterResources: true,
	}
	targetSpec = managedv1alpha1.ManagedEnvironmentSpec{
		APIURL: "https://sandbox.example.com:6443", ClusterCredentialsSecret: "space-secret", Namespaces: []string{"space"},
	}
	copiedSpec = managedv1alpha1.ManagedEnvironmentSpec{
		APIURL: "https://sandbox.example.com:6443", ClusterCredentialsSecret: "managed-environment-secret-staging", Namespaces: []string{"space"},
	}
)

func copyOf(env *appstudiov1alpha1.Environment, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "managed-environment-secret-staging", Namespace: ns,
			Labels: map[string]string{"appstudio.openshift.io/environment-secret": env.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "appstudio.redhat.com/v1alpha1", Kind: "Environment",
				Name: env.Name, UID: env.UID, Controller: ptr.To(true)}},
		},
		Type: managedv1alpha1.ManagedEnvironmentSecretType,
		Data: map[string][]byte{"kubeconfig": []byte(data)},
	}
}

func problemConds(reason, msg string) []metav1.Condition {
	return []metav1.Condition{
		{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "ErrorOccurred", Message: msg, LastTransitionTime: now},
		{Type: "Reconciled", Status: metav1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: now},
	}
}

func earlierProblem(reason, msg string) []metav1.Condition {
	conds := problemConds(reason, msg)
	for i := range conds {
		conds[i].LastTransitionTime = earlier
	}
	return conds
}

func resolvedConds(reason string) []metav1.Condition {
	return []metav1.Condition{
		{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "ErrorOccurredResolved", LastTransitionTime: now},
		{Type: "Reconciled", Status: metav1.ConditionTrue, Reason: reason + "Resolved", LastTransitionTime: now},
	}
}

const secretNotFoundMsg = "the secret creds referenced by the Environment resource was not found"

func TestPlanEnvironment(t *testing.T) {
	credentialsEnv := environmentWith(withCredentials)
	claimEnv := environmentWith(withClaim)
	managed := corev1.SecretType(managedv1alpha1.ManagedEnvironmentSecretType)
	for _, tc := range []struct {
		name  string
		state state
		want  plan
	}{
		{
			name:  "credentials: the ManagedEnvironment is created, owned in the original's group, with no condition",
			state: state{env: credentialsEnv, secret: secret("creds", managed, "k")},
			want: plan{managedEnvironment: &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
				ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-staging", Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{ownerOf(credentialsEnv)}},
				Spec: credentialsSpec,
			}},
		},
		{
			name: "credentials: an up-to-date ManagedEnvironment is left alone",
			state: state{env: credentialsEnv, secret: secret("creds", managed, "k"),
				managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
		},
		{
			name: "credentials: a changed field updates the ManagedEnvironment",
			state: state{env: credentialsEnv, secret: secret("creds", managed, "k"),
				managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), targetSpec)},
			want: plan{managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
		},
		{
			name: "credentials: empty and missing namespaces are the same",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) {
				withCredentials(e)
				e.Spec.UnstableConfigurationFields.KubernetesClusterCredentials.Namespaces = []string{}
			}), secret: secret("creds", managed, "k"),
				managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), func() managedv1alpha1.ManagedEnvironmentSpec {
					s := credentialsSpec
					s.Namespaces = nil
					return s
				}())},
		},
		{
			name: "credentials: the ManagedEnvironment of an earlier Environment of the name is taken over",
			state: state{env: credentialsEnv, secret: secret("creds", managed, "k"),
				managedEnvironment: managedEnvironment(metav1.OwnerReference{APIVersion: "managed-gitops.redhat.com/v1alpha1", Kind: "Environment",
					Name: "staging", UID: "old-uid"}, credentialsSpec)},
			want: plan{managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
		},
		{
			name:  "credentials: a missing Secret is SecretNotFound, with the original's message",
			state: state{env: credentialsEnv, managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
			want: plan{conditions: problemConds("SecretNotFound", secretNotFoundMsg),
				problem: &problem{"SecretNotFound", secretNotFoundMsg}},
		},
		{
			name: "credentials: a problem already reported is not reported again",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) {
				withCredentials(e)
				e.Status.Conditions = earlierProblem("SecretNotFound", secretNotFoundMsg)
			})},
		},
		{
			name: "credentials: the Secret appears: SecretNotFoundResolved, with no message",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) {
				withCredentials(e)
				e.Status.Conditions = earlierProblem("SecretNotFound", secretNotFoundMsg)
			}), secret: secret("creds", managed, "k"), managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
			want: plan{conditions: resolvedConds("SecretNotFound")},
		},
		{
			name: "credentials: another problem replaces the one reported",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) {
				withClaim(e)
				e.Status.Conditions = earlierProblem("SecretNotFound", secretNotFoundMsg)
			})},
			want: plan{
				conditions: []metav1.Condition{
					{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "ErrorOccurred", Message: msgClaimNotFound, LastTransitionTime: earlier},
					{Type: "Reconciled", Status: metav1.ConditionFalse, Reason: "DeploymentTargetClaimNotFound", Message: msgClaimNotFound, LastTransitionTime: earlier},
				},
				problem: &problem{"DeploymentTargetClaimNotFound", msgClaimNotFound},
			},
		},
		{
			name: "both a claim and credentials: InvalidEnvironment, and the ManagedEnvironment stays",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) { withClaim(e); withCredentials(e) }),
				secret: secret("creds", managed, "k"), managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), targetSpec)},
			want: plan{conditions: problemConds("InvalidEnvironment", msgInvalidEnvironment),
				problem: &problem{"InvalidEnvironment", msgInvalidEnvironment}},
		},
		{
			name:  "claim: missing is DeploymentTargetClaimNotFound",
			state: state{env: claimEnv},
			want: plan{conditions: problemConds("DeploymentTargetClaimNotFound", msgClaimNotFound),
				problem: &problem{"DeploymentTargetClaimNotFound", msgClaimNotFound}},
		},
		{
			name: "claim: not Bound yet waits, and an earlier problem is resolved",
			state: state{env: environmentWith(func(e *appstudiov1alpha1.Environment) {
				withClaim(e)
				e.Status.Conditions = earlierProblem("DeploymentTargetClaimNotFound", msgClaimNotFound)
			}), claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhasePending, "")},
			want: plan{conditions: resolvedConds("DeploymentTargetClaimNotFound")},
		},
		{
			name:  "claim: not Bound, no problem before: nothing to do",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhasePending, "")},
		},
		{
			name:  "claim: Bound without a target is DeploymentTargetNotFound with the lookup's message",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"), targetProblem: msgTargetMissing},
			want: plan{conditions: problemConds("DeploymentTargetNotFound", msgTargetMissing),
				problem: &problem{"DeploymentTargetNotFound", msgTargetMissing}},
		},
		{
			name: "claim: a managed-environment Secret of the target is used as it is, with the target's namespace",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", managed, "k")},
			want: plan{managedEnvironment: &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
				ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-staging", Namespace: ns,
					OwnerReferences: []metav1.OwnerReference{ownerOf(claimEnv)}},
				Spec: targetSpec,
			}},
		},
		{
			name: "claim: a target without a default namespace limits no namespace",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", ""), secret: secret("space-secret", managed, "k"),
				managedEnvironment: managedEnvironment(ownerOf(claimEnv), func() managedv1alpha1.ManagedEnvironmentSpec {
					s := targetSpec
					s.Namespaces = nil
					return s
				}())},
		},
		{
			name: "claim: an Opaque Secret is copied, and the ManagedEnvironment points at the copy",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", corev1.SecretTypeOpaque, "k")},
			want: plan{
				copy: copyOf(claimEnv, "k"),
				managedEnvironment: &managedv1alpha1.GitOpsDeploymentManagedEnvironment{
					ObjectMeta: metav1.ObjectMeta{Name: "managed-environment-staging", Namespace: ns,
						OwnerReferences: []metav1.OwnerReference{ownerOf(claimEnv)}},
					Spec: copiedSpec,
				},
			},
		},
		{
			name: "claim: a Secret of the copy's name that is no copy is neither overwritten nor taken over",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", corev1.SecretTypeOpaque, "k"),
				copy: func() *corev1.Secret {
					s := copyOf(claimEnv, "someone's")
					s.Labels, s.OwnerReferences = nil, nil
					return s
				}()},
			want: plan{
				conditions: problemConds(reasonCopyNameTaken, msgCopyNameTaken("managed-environment-secret-staging")),
				problem:    &problem{reasonCopyNameTaken, msgCopyNameTaken("managed-environment-secret-staging")},
			},
		},
		{
			name: "claim: the copy follows the Secret",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", corev1.SecretTypeOpaque, "new"),
				copy: copyOf(claimEnv, "old"), managedEnvironment: managedEnvironment(ownerOf(claimEnv), copiedSpec)},
			want: plan{copy: copyOf(claimEnv, "new")},
		},
		{
			name: "claim: an up-to-date copy is left alone",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", corev1.SecretTypeOpaque, "k"),
				copy: copyOf(claimEnv, "k"), managedEnvironment: managedEnvironment(ownerOf(claimEnv), copiedSpec)},
		},
		{
			name: "claim: the Secret gone is SecretNotFound, and the copy goes too",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), copy: copyOf(claimEnv, "k"), managedEnvironment: managedEnvironment(ownerOf(claimEnv), copiedSpec)},
			want: plan{deleteCopy: true,
				conditions: problemConds("SecretNotFound", msgSecretNotFound("space-secret")),
				problem:    &problem{"SecretNotFound", msgSecretNotFound("space-secret")}},
		},
		{
			name: "claim: a copy is no longer used once the target's Secret has the managed-environment type",
			state: state{env: claimEnv, claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt"),
				target: target("dt", "claim", "space"), secret: secret("space-secret", managed, "k"),
				copy: copyOf(claimEnv, "k"), managedEnvironment: managedEnvironment(ownerOf(claimEnv), copiedSpec)},
			want: plan{deleteCopy: true, managedEnvironment: managedEnvironment(ownerOf(claimEnv), targetSpec)},
		},
		{
			name: "neither: no ManagedEnvironment; one made before goes, with its copy",
			state: state{env: environmentWith(nil), copy: copyOf(claimEnv, "k"),
				managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec)},
			want: plan{deleteManagedEnvironment: true, deleteCopy: true},
		},
		{
			name:  "neither: a ManagedEnvironment of the name that no Environment made is not touched",
			state: state{env: environmentWith(nil), managedEnvironment: managedEnvironment(metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "staging"}, credentialsSpec)},
		},
		{
			name:  "neither: an earlier problem is resolved",
			state: state{env: environmentWith(withConditions(earlierProblem("InvalidEnvironment", msgInvalidEnvironment)...))},
			want:  plan{conditions: resolvedConds("InvalidEnvironment")},
		},
		{
			name: "Environment gone: its ManagedEnvironment and copy are deleted",
			state: state{name: "staging", managedEnvironment: managedEnvironment(ownerOf(credentialsEnv), credentialsSpec),
				copy: copyOf(claimEnv, "k")},
			want: plan{deleteManagedEnvironment: true, deleteCopy: true},
		},
		{
			name:  "Environment gone: a ManagedEnvironment made for another Environment stays",
			state: state{name: "staging", managedEnvironment: managedEnvironment(ownerOf(environmentWith(func(e *appstudiov1alpha1.Environment) { e.Name = "prod" })), credentialsSpec)},
		},
		{
			name:  "Environment gone, nothing left: nothing to do",
			state: state{name: "staging"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.state.name == "" && tc.state.env != nil {
				tc.state.name = tc.state.env.Name
			}
			got := planEnvironment(tc.state, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan\n got %s\nwant %s", describe(got), describe(tc.want))
			}
		})
	}
}

// ofClaimUID is t as the binder bound it to the claim of uid.
func ofClaimUID(t *appstudiov1alpha1.DeploymentTarget, uid string) *appstudiov1alpha1.DeploymentTarget {
	t.Annotations = map[string]string{appstudiov1alpha1.AnnClaimUID: uid}
	return t
}

func TestBoundTarget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		targetName  string
		targets     []*appstudiov1alpha1.DeploymentTarget
		want        string
		wantProblem string
	}{
		{name: "named and claiming it", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "")}, want: "dt"},
		{name: "named, claiming nothing", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "", "")}, want: "dt"},
		{name: "named, missing", targetName: "dt", wantProblem: msgTargetMissing},
		{name: "named, claiming another claim", targetName: "dt", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "other", "")},
			wantProblem: msgTargetConflict},
		{name: "named one wins over others claiming the claim", targetName: "dt",
			targets: []*appstudiov1alpha1.DeploymentTarget{target("stray", "claim", ""), target("dt", "claim", "")}, want: "dt"},
		{name: "unnamed, one claiming it", targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "")}, want: "dt"},
		{name: "unnamed, none claiming it", wantProblem: msgTargetNotBound},
		{name: "unnamed, one bound to an earlier claim of the name (another UID)",
			targets: []*appstudiov1alpha1.DeploymentTarget{ofClaimUID(target("dt", "claim", ""), "deleted-uid")}, wantProblem: msgTargetNotBound},
		{name: "unnamed, one bound to this claim by UID", targets: []*appstudiov1alpha1.DeploymentTarget{ofClaimUID(target("dt", "claim", ""), claimUID)},
			want: "dt"},
		{name: "named, bound to an earlier claim of the name (another UID)", targetName: "dt",
			targets: []*appstudiov1alpha1.DeploymentTarget{ofClaimUID(target("dt", "claim", ""), "deleted-uid")}, wantProblem: msgTargetConflict},
		{name: "unnamed, two claiming it",
			targets:     []*appstudiov1alpha1.DeploymentTarget{target("a", "claim", ""), target("b", "claim", "")},
			wantProblem: msgTargetConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := BoundTarget(claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, tc.targetName), tc.targets)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want || problem != tc.wantProblem {
				t.Errorf("boundTarget = %q, %q; want %q, %q", name, problem, tc.want, tc.wantProblem)
			}
		})
	}
}

// TestConditionsOfTheReference pins every reason and message of the Environment's conditions
// (reference §2.1, §3.7) to the original service's text, from what the controller sees to the
// conditions written: the other tests compare with the package's constants.
func TestConditionsOfTheReference(t *testing.T) {
	bound := claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "")
	named := claim(appstudiov1alpha1.DeploymentTargetClaimPhaseBound, "dt")
	for _, tc := range []struct {
		name    string
		env     *appstudiov1alpha1.Environment
		claim   *appstudiov1alpha1.DeploymentTargetClaim
		targets []*appstudiov1alpha1.DeploymentTarget
		secret  *corev1.Secret
		// reason and message of the Reconciled condition (False) and message of ErrorOccurred
		// (True, reason ErrorOccurred); "" for none written.
		reason, message string
		// resolved is the Reconciled condition's reason once resolved, from earlier problem.
		earlier  []metav1.Condition
		resolved string
	}{
		{name: "both a claim and credentials", env: environmentWith(func(e *appstudiov1alpha1.Environment) { withClaim(e); withCredentials(e) }),
			reason:  "InvalidEnvironment",
			message: "Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set"},
		{name: "claim missing", env: environmentWith(withClaim),
			reason: "DeploymentTargetClaimNotFound", message: "DeploymentTargetClaim not found while generating the desired Environment resource"},
		{name: "claim Bound, no target claims it", env: environmentWith(withClaim), claim: bound,
			reason: "DeploymentTargetNotFound", message: "DeploymentTarget not found for DeploymentTargetClaim"},
		{name: "claim Bound, two targets claim it", env: environmentWith(withClaim), claim: bound,
			targets: []*appstudiov1alpha1.DeploymentTarget{target("a", "claim", ""), target("b", "claim", "")},
			reason:  "DeploymentTargetNotFound", message: "Unable to find the DeploymentTarget for DeploymentTargetClaim"},
		{name: "claim Bound, the target it names is missing", env: environmentWith(withClaim), claim: named,
			reason: "DeploymentTargetNotFound", message: "DeploymentTargetClaim references a DeploymentTarget that does not exist"},
		{name: "claim Bound, the target it names claims another claim", env: environmentWith(withClaim), claim: named,
			targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "other", "space")},
			reason:  "DeploymentTargetNotFound", message: "Unable to find the DeploymentTarget for DeploymentTargetClaim"},
		{name: "the target's Secret missing", env: environmentWith(withClaim), claim: named,
			targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "space")},
			reason:  "SecretNotFound", message: "the secret space-secret referenced by the Environment resource was not found"},
		{name: "the credentials' Secret missing", env: environmentWith(withCredentials),
			reason: "SecretNotFound", message: "the secret creds referenced by the Environment resource was not found"},
		{name: "claim not Bound: no condition", env: environmentWith(withClaim), claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhasePending, "")},
		{name: "neither claim nor credentials: no condition", env: environmentWith(nil)},
		{name: "DeploymentTargetNotFound resolved once the target claims the claim",
			env: environmentWith(withClaim), claim: bound, targets: []*appstudiov1alpha1.DeploymentTarget{target("dt", "claim", "space")},
			secret:   secret("space-secret", managedv1alpha1.ManagedEnvironmentSecretType, "k"),
			earlier:  earlierProblem("DeploymentTargetNotFound", "DeploymentTarget not found for DeploymentTargetClaim"),
			resolved: "DeploymentTargetNotFoundResolved"},
		{name: "DeploymentTargetClaimNotFound resolved by a claim not Bound yet",
			env: environmentWith(withClaim), claim: claim(appstudiov1alpha1.DeploymentTargetClaimPhasePending, ""),
			earlier:  earlierProblem("DeploymentTargetClaimNotFound", "DeploymentTargetClaim not found while generating the desired Environment resource"),
			resolved: "DeploymentTargetClaimNotFoundResolved"},
		{name: "SecretNotFound resolved once the Secret exists", env: environmentWith(withCredentials),
			secret:   secret("creds", managedv1alpha1.ManagedEnvironmentSecretType, "k"),
			earlier:  earlierProblem("SecretNotFound", "the secret creds referenced by the Environment resource was not found"),
			resolved: "SecretNotFoundResolved"},
		{name: "InvalidEnvironment resolved once only credentials are left", env: environmentWith(withCredentials),
			secret:   secret("creds", managedv1alpha1.ManagedEnvironmentSecretType, "k"),
			earlier:  earlierProblem("InvalidEnvironment", "Environment is invalid since it cannot have both DeploymentTargetClaim and credentials configuration set"),
			resolved: "InvalidEnvironmentResolved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the controller's observe does: the target is looked for once the claim is Bound.
			s := state{name: tc.env.Name, env: tc.env.DeepCopy(), claim: tc.claim, secret: tc.secret}
			s.env.Status.Conditions = tc.earlier
			if tc.claim != nil && tc.claim.Status.Phase == appstudiov1alpha1.DeploymentTargetClaimPhaseBound {
				s.target, s.targetProblem = BoundTarget(tc.claim, tc.targets)
			}
			got := planEnvironment(s, now).conditions
			var want []metav1.Condition
			switch {
			case tc.reason != "":
				want = []metav1.Condition{
					{Type: "ErrorOccurred", Status: metav1.ConditionTrue, Reason: "ErrorOccurred", Message: tc.message, LastTransitionTime: now},
					{Type: "Reconciled", Status: metav1.ConditionFalse, Reason: tc.reason, Message: tc.message, LastTransitionTime: now},
				}
			case tc.resolved != "":
				want = []metav1.Condition{
					{Type: "ErrorOccurred", Status: metav1.ConditionFalse, Reason: "ErrorOccurredResolved", LastTransitionTime: now},
					{Type: "Reconciled", Status: metav1.ConditionTrue, Reason: tc.resolved, LastTransitionTime: now},
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("conditions\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// describe is p as JSON, for failure messages.
func describe(p plan) string {
	out := map[string]interface{}{"copy": p.copy, "deleteCopy": p.deleteCopy, "managedEnvironment": p.managedEnvironment,
		"deleteManagedEnvironment": p.deleteManagedEnvironment, "conditions": p.conditions}
	if p.problem != nil {
		out["problem"] = []string{p.problem.reason, p.problem.message}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return string(b)
}

// The promotion graph's condition sits beside the cluster's: set when the Environment cannot be
// promoted into automatically, resolved when it can again, never added otherwise.
func TestPromotionGraphCondition(t *testing.T) {
	missing := &promotiongraph.Problem{Kind: promotiongraph.ParentNotFound, Environments: []string{"staging"}, Parent: "qa"}
	cycle := &promotiongraph.Problem{Kind: promotiongraph.Cycle, Environments: []string{"prod", "staging"}}
	graphCond := func(status metav1.ConditionStatus, reason, msg string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: "PromotionGraphValid", Status: status, Reason: reason, Message: msg, LastTransitionTime: at}
	}
	reconciled := metav1.Condition{Type: "Reconciled", Status: "True", Reason: "SecretNotFoundResolved", LastTransitionTime: earlier}
	for _, tc := range []struct {
		name    string
		have    []metav1.Condition
		problem *promotiongraph.Problem
		want    []metav1.Condition // nil: the status is left as it is
	}{
		{name: "no problem, none before: nothing added"},
		{name: "a missing parent", problem: missing,
			want: []metav1.Condition{graphCond("False", "ParentNotFound", "Environment staging has parentEnvironment qa, which does not exist", now)}},
		{name: "beside the cluster's conditions", have: []metav1.Condition{reconciled}, problem: cycle,
			want: []metav1.Condition{reconciled, graphCond("False", "Cycle",
				"Environments prod, staging are each other's parents (a cycle): none can be promoted into automatically", now)}},
		{name: "already reported", problem: missing,
			have: []metav1.Condition{graphCond("False", "ParentNotFound", "Environment staging has parentEnvironment qa, which does not exist", earlier)}},
		{name: "mended", have: []metav1.Condition{graphCond("False", "Cycle", "...", earlier)},
			want: []metav1.Condition{graphCond("True", "CycleResolved", "", now)}},
		{name: "resolved stays resolved", have: []metav1.Condition{graphCond("True", "CycleResolved", "", earlier)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := environmentWith(func(e *appstudiov1alpha1.Environment) { e.Status.Conditions = tc.have })
			p := planEnvironment(state{namespace: ns, name: env.Name, env: env, graphProblem: tc.problem}, now)
			if !reflect.DeepEqual(p.conditions, tc.want) {
				t.Errorf("conditions\n%+v\nwant\n%+v", p.conditions, tc.want)
			}
		})
	}
}
