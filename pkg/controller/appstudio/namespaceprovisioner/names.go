package namespaceprovisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// ProvisionerName is the provisioner of the DeploymentTargetClasses this controller serves.
const ProvisionerName = appstudiov1alpha1.ProvisionerNamespace

// prefix is the prefix of the provisioner's own labels, annotations and finalizer.
const prefix = "namespace.provisioner.managed-gitops.redhat.com/"

// Finalizer holds a DeploymentTarget this provisioner made until what was provisioned for it
// is removed (reclaim policy Delete) or marked retained (Retain). The reference's
// dt.appstudio.redhat.com/finalizer is the reclaim controller's, which drops it as soon as the
// target is deleted and then waits, DeletionTimeout, for the provisioners' finalizers.
const Finalizer = prefix + "finalizer"

// Labels of what the provisioner makes: the namespace on the host cluster, its
// ServiceAccount, RoleBinding, ResourceQuota and LimitRange, the credentials Secret and the
// DeploymentTarget in the claim's namespace. LabelClaimNamespace and LabelTarget together name
// the unit, "claim namespace/target name", which is the controller's key; LabelTarget is on
// every namespace the provisioner made (a label selector for a filtered informer).
const (
	LabelClaimNamespace = appstudiov1alpha1.LabelProvisionedClaimNamespace
	LabelClaimName      = prefix + "claim-name" // only when the claim's name is a valid label value
	LabelClaimUID       = prefix + "claim-uid"
	LabelTarget         = appstudiov1alpha1.LabelProvisionedTarget
	// LabelRetained marks a namespace and Secret kept when their target was deleted under a
	// Retain reclaim policy: nothing of this provisioner touches them again.
	LabelRetained = prefix + "retained"
	// LabelReclaimPolicy on the namespace is the class's reclaimPolicy when it was made: the
	// policy that applies when the class is gone by the time the target is deleted.
	LabelReclaimPolicy = prefix + "reclaim-policy"
)

// Annotations.
const (
	// AnnClaimName on the namespace and the target is the claim's full name.
	AnnClaimName = prefix + "claim-name"
	// Of the Secret: when its token was issued and expires (RFC 3339), the UID of the
	// ServiceAccount it is for, and a hash of the rest of the kubeconfig (server, CA,
	// namespace). A change of any makes a new token.
	annTokenIssued      = prefix + "token-issued"
	annTokenExpires     = prefix + "token-expires"
	annServiceAccount   = prefix + "service-account-uid"
	annKubeconfigConfig = prefix + "kubeconfig-hash"
	// AnnExpires on the target is when the claim expires (the class's ttl), RFC 3339.
	AnnExpires = prefix + "expires"
	// AnnTargetUID on the namespace is the UID of the DeploymentTarget it serves: the one
	// target the provisioner maintains and reclaims it for. The namespace is the provisioner's
	// (tenants cannot write namespaces), so a target that a tenant writes by hand with the
	// provisioner's annotation, finalizer and labels is not taken for it.
	AnnTargetUID = prefix + "target-uid"
)

// Names of the objects in the provisioned namespace.
const (
	ServiceAccountName = "deployer"
	RoleBindingName    = "deployer-edit"
	EditClusterRole    = "edit"
	ResourceQuotaName  = "deployment-target"
	LimitRangeName     = "deployment-target"
)

// hashLen is the length of the claim's hash in the names: 10 hex digits, 40 bits.
const hashLen = 10

// claimHash is a short hash of a claim's namespace, name and UID: a re-created claim (same
// name, new UID) gets other names.
func claimHash(namespace, name, uid string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + name + "/" + uid))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// derive is base, made a DNS-1123 label (lower case, dots and other characters to '-')
// truncated so that base-hash has at most 63 characters.
func derive(base, hash string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(base) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if max := validation.DNS1123LabelMaxLength - 1 - len(hash); len(s) > max {
		s = s[:max]
	}
	s = strings.Trim(s, "-")
	if s == "" {
		return "dt-" + hash
	}
	return s + "-" + hash
}

// TargetName is the name of the DeploymentTarget provisioned for a claim, in its namespace.
func TargetName(claim *appstudiov1alpha1.DeploymentTargetClaim) string {
	return derive(claim.Name, claimHash(claim.Namespace, claim.Name, string(claim.UID)))
}

// NamespaceName is the name of the namespace provisioned for a claim:
// "<claim namespace>-<claim name>" cut to fit, then "-<hash>".
func NamespaceName(claimNamespace, claimName, claimUID string) string {
	return derive(claimNamespace+"-"+claimName, claimHash(claimNamespace, claimName, claimUID))
}

// SecretName is the credentials Secret of a provisioned target.
func SecretName(targetName string) string { return targetName + "-kubeconfig" }

// labelsFor are the labels that tie an object to the unit of a claim.
func labelsFor(claimNamespace, claimName, claimUID, target string) map[string]string {
	l := map[string]string{
		LabelClaimNamespace: claimNamespace,
		LabelClaimUID:       claimUID,
		LabelTarget:         target,
	}
	if len(validation.IsValidLabelValue(claimName)) == 0 {
		l[LabelClaimName] = claimName
	}
	return l
}

// ownedBy tells whether labels tie an object to the unit namespace/target.
func ownedBy(labels map[string]string, namespace, target string) bool {
	return labels[LabelClaimNamespace] == namespace && labels[LabelTarget] == target
}

// DefaultTokenExpiration is the lifetime of the tokens asked for when the class sets none.
const DefaultTokenExpiration = 24 * time.Hour

// parameters are a class's parameters for this provisioner, with the defaults applied.
type parameters struct {
	// ttl, when set, is how long after its target's creation the claim is deleted.
	ttl time.Duration
	// tokenExpiration is the lifetime of the tokens asked for.
	tokenExpiration time.Duration
	// policy is what the namespace carries: Pod Security level, quota, limits, NetworkPolicy.
	policy namespacePolicy
}

// parametersOf reads the parameters of a class (nil: the class is unknown) from its
// spec.parameters.namespace (appstudiov1alpha1.NamespaceProvisionerParameters): ttl,
// tokenExpiration (DefaultTokenExpiration when unset) and the namespace's policy (policyOf).
// The API server decodes them strictly and validates them (pkg/apis/appstudio/validation), so
// they are used as they are.
func parametersOf(class *appstudiov1alpha1.DeploymentTargetClass) parameters {
	p := parameters{tokenExpiration: DefaultTokenExpiration}
	var n *appstudiov1alpha1.NamespaceProvisionerParameters
	if class != nil {
		n = class.Spec.Parameters.Namespace
	}
	p.policy = policyOf(n)
	if n == nil {
		return p
	}
	if n.TTL != nil {
		p.ttl = n.TTL.Duration
	}
	if n.TokenExpiration != nil {
		p.tokenExpiration = n.TokenExpiration.Duration
	}
	return p
}

// nonEmpty is a copy of list, nil when it is empty.
func nonEmpty(list corev1.ResourceList) corev1.ResourceList {
	if len(list) == 0 {
		return nil
	}
	return list.DeepCopy()
}
