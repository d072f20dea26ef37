package namespaceprovisioner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	appstudiov1alpha1 "github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

// ProvisionerName is the provisioner of the DeploymentTargetClasses this controller serves.
const ProvisionerName appstudiov1alpha1.Provisioner = "managed-gitops.redhat.com/namespace"

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
	LabelClaimNamespace = prefix + "claim-namespace"
	LabelClaimName      = prefix + "claim-name" // only when the claim's name is a valid label value
	LabelClaimUID       = prefix + "claim-uid"
	LabelTarget         = prefix + "target"
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
	// AnnParameters on a DeploymentTargetClass holds its parameters (see parseParameters):
	// application-api's DeploymentTargetParameters has no fields, so spec.parameters cannot.
	AnnParameters = prefix + "parameters"
	// Of the Secret: when its token was issued and expires (RFC 3339), the UID of the
	// ServiceAccount it is for, and a hash of the rest of the kubeconfig (server, CA,
	// namespace). A change of any makes a new token.
	annTokenIssued      = prefix + "token-issued"
	annTokenExpires     = prefix + "token-expires"
	annServiceAccount   = prefix + "service-account-uid"
	annKubeconfigConfig = prefix + "kubeconfig-hash"
	// AnnExpires on the target is when the claim expires (the class's ttl), RFC 3339.
	AnnExpires = prefix + "expires"
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

// minTokenExpiration is the TokenRequest API's minimum.
const minTokenExpiration = 10 * time.Minute

// parameters are a class's parameters for this provisioner.
type parameters struct {
	// ttl, when set, is how long after its target's creation the claim is deleted.
	ttl time.Duration
	// tokenExpiration is the lifetime of the tokens asked for.
	tokenExpiration time.Duration
	// quota is the namespace's ResourceQuota's hard limits, nil for none.
	quota corev1.ResourceList
	// limits are the namespace's LimitRange's Container limits, nil for none.
	limits *corev1.LimitRangeItem
}

// The keys of the parameters.
const (
	paramTTL             = "ttl"
	paramTokenExpiration = "tokenExpiration"
	paramQuotaHard       = "resourceQuota.hard."
	paramLimitRange      = "limitRange."
)

// parseParameters reads the parameters of a class from its annotation AnnParameters, a
// YAML/JSON object of strings, as a StorageClass's parameters:
//
//	ttl: 72h                              # delete the claim 72h after its target was made
//	tokenExpiration: 24h                  # token lifetime (default 24h, at least 10m)
//	resourceQuota.hard.<resource>: <qty>  # ResourceQuota "deployment-target", e.g. requests.cpu: "2", count/pods: "20"
//	limitRange.<kind>.<resource>: <qty>   # LimitRange "deployment-target", type Container;
//	                                      # kind: default, defaultRequest, max, min, maxLimitRequestRatio
//
// Any other key is an error, as is a value that does not parse: a typo is reported, not ignored.
func parseParameters(class *appstudiov1alpha1.DeploymentTargetClass) (parameters, error) {
	p := parameters{tokenExpiration: DefaultTokenExpiration}
	raw, ok := class.Annotations[AnnParameters]
	if !ok || strings.TrimSpace(raw) == "" {
		return p, nil
	}
	var m map[string]string
	if err := yaml.Unmarshal([]byte(raw), &m); err != nil {
		return p, fmt.Errorf("annotation %s is not an object of strings: %v", AnnParameters, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch {
		case k == paramTTL || k == paramTokenExpiration:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return p, fmt.Errorf("parameter %s: %q is not a positive duration", k, v)
			}
			if k == paramTTL {
				p.ttl = d
			} else if d < minTokenExpiration {
				return p, fmt.Errorf("parameter %s: %s is less than the TokenRequest API's minimum, %s", k, v, minTokenExpiration)
			} else {
				p.tokenExpiration = d
			}
		case strings.HasPrefix(k, paramQuotaHard):
			name := strings.TrimPrefix(k, paramQuotaHard)
			q, err := quantity(k, name, v)
			if err != nil {
				return p, err
			}
			if p.quota == nil {
				p.quota = corev1.ResourceList{}
			}
			p.quota[corev1.ResourceName(name)] = q
		case strings.HasPrefix(k, paramLimitRange):
			kind, name, _ := strings.Cut(strings.TrimPrefix(k, paramLimitRange), ".")
			q, err := quantity(k, name, v)
			if err != nil {
				return p, err
			}
			if p.limits == nil {
				p.limits = &corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
			}
			var list *corev1.ResourceList
			switch kind {
			case "default":
				list = &p.limits.Default
			case "defaultRequest":
				list = &p.limits.DefaultRequest
			case "max":
				list = &p.limits.Max
			case "min":
				list = &p.limits.Min
			case "maxLimitRequestRatio":
				list = &p.limits.MaxLimitRequestRatio
			default:
				return p, fmt.Errorf("parameter %s: %q is not one of default, defaultRequest, max, min, maxLimitRequestRatio", k, kind)
			}
			if *list == nil {
				*list = corev1.ResourceList{}
			}
			(*list)[corev1.ResourceName(name)] = q
		default:
			return p, fmt.Errorf("unknown parameter %q", k)
		}
	}
	return p, nil
}

func quantity(key, name, v string) (resource.Quantity, error) {
	if name == "" {
		return resource.Quantity{}, fmt.Errorf("parameter %s names no resource", key)
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return q, fmt.Errorf("parameter %s: %q is not a quantity", key, v)
	}
	return q, nil
}

// everything selects every object of a lister.
var everything = labels.Everything()
