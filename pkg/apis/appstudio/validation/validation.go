// Package validation checks appstudio.redhat.com objects: the rules the original service
// enforced in admission webhooks and at run time that can be decided from the object alone.
package validation

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
)

var (
	specPath   = field.NewPath("spec")
	statusPath = field.NewPath("status")
	metaPath   = field.NewPath("metadata")
)

func validateMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, metaPath)
}

func validateMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(meta, old, metaPath)
}

func validateConditions(conditions []metav1.Condition, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateConditions(conditions, fldPath)
}

// ValidateEnvironment checks an Environment on create. Its name becomes part of generated
// object names and labels, so it must be a DNS-1123 label.
func ValidateEnvironment(obj *appstudio.Environment) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel)
	return append(errs, validateEnvironmentSpec(&obj.Spec)...)
}

// ValidateEnvironmentUpdate checks an Environment on update.
func ValidateEnvironmentUpdate(obj, old *appstudio.Environment) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateEnvironmentSpec(&obj.Spec)...)
}

func validateEnvironmentSpec(spec *appstudio.EnvironmentSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, fieldvalidation.Enum(specPath.Child("type"), spec.Type, false,
		appstudio.EnvironmentTypePOC, appstudio.EnvironmentTypeNonPOC)...)
	if spec.DisplayName == "" {
		errs = append(errs, field.Required(specPath.Child("displayName"), ""))
	}
	errs = append(errs, fieldvalidation.Enum(specPath.Child("deploymentStrategy"), spec.DeploymentStrategy, true,
		appstudio.DeploymentStrategyManual, appstudio.DeploymentStrategyAppStudioAutomated)...)
	errs = append(errs, fieldvalidation.NamespaceName(specPath.Child("parentEnvironment"), spec.ParentEnvironment, false)...)

	cfg := specPath.Child("configuration")
	errs = append(errs, validateEnvVars(spec.Configuration.Env, cfg.Child("env"))...)
	claimPath := cfg.Child("target", "deploymentTargetClaim", "claimName")
	claim := spec.Configuration.Target.DeploymentTargetClaim.ClaimName
	errs = append(errs, fieldvalidation.ObjectName(claimPath, claim, false)...)

	if u := spec.UnstableConfigurationFields; u != nil {
		unstable := specPath.Child("unstableConfigurationFields")
		if claim != "" {
			errs = append(errs, field.Forbidden(unstable,
				"an Environment cannot have both a DeploymentTargetClaim (spec.configuration.target) and credentials configuration set"))
		}
		errs = append(errs, fieldvalidation.Enum(unstable.Child("clusterType"), u.ClusterType, false,
			appstudio.ConfigurationClusterTypeKubernetes, appstudio.ConfigurationClusterTypeOpenShift)...)
		creds := &u.KubernetesClusterCredentials
		credsPath := unstable.Child("kubernetesCredentials")
		errs = append(errs, fieldvalidation.NamespaceName(credsPath.Child("targetNamespace"), creds.TargetNamespace, true)...)
		errs = append(errs, fieldvalidation.HTTPSURL(credsPath.Child("apiURL"), creds.APIURL, true)...)
		ingress := credsPath.Child("ingressDomain")
		if creds.IngressDomain == "" {
			if u.ClusterType == appstudio.ConfigurationClusterTypeKubernetes {
				errs = append(errs, field.Required(ingress, "ingress domain cannot be empty if cluster is of type Kubernetes"))
			}
		} else {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(creds.IngressDomain) {
				errs = append(errs, field.Invalid(ingress, creds.IngressDomain, msg))
			}
		}
		errs = append(errs, fieldvalidation.ObjectName(credsPath.Child("clusterCredentialsSecret"), creds.ClusterCredentialsSecret, true)...)
		errs = append(errs, fieldvalidation.NamespaceList(credsPath.Child("namespaces"), creds.Namespaces)...)
	}
	return errs
}

func validateEnvVars(vars []appstudio.EnvVarPair, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range vars {
		idx := fldPath.Index(i).Child("name")
		if v.Name == "" {
			errs = append(errs, field.Required(idx, ""))
			continue
		}
		for _, msg := range utilvalidation.IsEnvVarName(v.Name) {
			errs = append(errs, field.Invalid(idx, v.Name, msg))
		}
		if seen.Has(v.Name) {
			errs = append(errs, field.Duplicate(idx, v.Name))
		}
		seen.Insert(v.Name)
	}
	return errs
}

// ValidateEnvironmentStatusUpdate checks a write of an Environment's status.
func ValidateEnvironmentStatusUpdate(obj, old *appstudio.Environment) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateSnapshot checks a Snapshot on create.
func ValidateSnapshot(obj *appstudio.Snapshot) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("application"), obj.Spec.Application, true)...)
	compPath := specPath.Child("components")
	seen := sets.New[string]()
	for i, c := range obj.Spec.Components {
		idx := compPath.Index(i)
		errs = append(errs, fieldvalidation.NamespaceName(idx.Child("name"), c.Name, true)...)
		if c.Name != "" && seen.Has(c.Name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
		}
		seen.Insert(c.Name)
		if c.ContainerImage == "" {
			errs = append(errs, field.Required(idx.Child("containerImage"), ""))
		}
		if g := c.Source.GitSource; g != nil && g.URL == "" {
			errs = append(errs, field.Required(idx.Child("source", "git", "url"), ""))
		}
	}
	return errs
}

// ValidateSnapshotUpdate checks a Snapshot on update: what a Snapshot captured never changes.
func ValidateSnapshotUpdate(obj, old *appstudio.Snapshot) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Application, old.Spec.Application, specPath.Child("application"))...)
	if !apiequality.Semantic.DeepEqual(obj.Spec.Components, old.Spec.Components) {
		errs = append(errs, field.Forbidden(specPath.Child("components"), "field is immutable: create a new Snapshot instead"))
	}
	return errs
}

// ValidateSnapshotStatusUpdate checks a write of a Snapshot's status.
func ValidateSnapshotStatusUpdate(obj, old *appstudio.Snapshot) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateSnapshotEnvironmentBinding checks a SnapshotEnvironmentBinding on create. That no
// other binding has the same application and environment is checked by the storage, atomically.
func ValidateSnapshotEnvironmentBinding(obj *appstudio.SnapshotEnvironmentBinding) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateBindingSpec(&obj.Spec)...)
}

// ValidateSnapshotEnvironmentBindingUpdate checks a SnapshotEnvironmentBinding on update; its
// application and environment never change.
func ValidateSnapshotEnvironmentBindingUpdate(obj, old *appstudio.SnapshotEnvironmentBinding) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateBindingSpec(&obj.Spec)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Application, old.Spec.Application, specPath.Child("application"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Environment, old.Spec.Environment, specPath.Child("environment"))...)
	return errs
}

func validateBindingSpec(spec *appstudio.SnapshotEnvironmentBindingSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("application"), spec.Application, true)...)
	errs = append(errs, fieldvalidation.NamespaceName(specPath.Child("environment"), spec.Environment, true)...)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("snapshot"), spec.Snapshot, true)...)
	compPath := specPath.Child("components")
	seen := sets.New[string]()
	for i, c := range spec.Components {
		idx := compPath.Index(i)
		errs = append(errs, fieldvalidation.NamespaceName(idx.Child("name"), c.Name, true)...)
		if c.Name != "" && seen.Has(c.Name) {
			errs = append(errs, field.Duplicate(idx.Child("name"), c.Name))
		}
		seen.Insert(c.Name)
		cfg := idx.Child("configuration")
		if r := c.Configuration.Replicas; r != nil && *r < 0 {
			errs = append(errs, field.Invalid(cfg.Child("replicas"), *r, "must be greater than or equal to 0"))
		}
		errs = append(errs, validateEnvVars(c.Configuration.Env, cfg.Child("env"))...)
		if r := c.Configuration.Resources; r != nil {
			errs = append(errs, validateResources(r, cfg.Child("resources"))...)
		}
	}
	return errs
}

// validateResources checks that quantities are not negative and requests do not exceed limits.
func validateResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range r.Limits {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("limits").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range r.Requests {
		p := fldPath.Child("requests").Key(string(name))
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be less than or equal to "+string(name)+" limit of "+limit.String()))
		}
	}
	return errs
}

// ValidateSnapshotEnvironmentBindingStatusUpdate checks a write of a binding's status.
func ValidateSnapshotEnvironmentBindingStatusUpdate(obj, old *appstudio.SnapshotEnvironmentBinding) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	st := &obj.Status
	errs = append(errs, validateConditions(st.GitOpsRepoConditions, statusPath.Child("gitopsRepoConditions"))...)
	errs = append(errs, validateConditions(st.ComponentDeploymentConditions, statusPath.Child("componentDeploymentConditions"))...)
	errs = append(errs, validateConditions(st.BindingConditions, statusPath.Child("bindingConditions"))...)
	seen := sets.New[string]()
	for i, d := range st.GitOpsDeployments {
		idx := statusPath.Child("gitopsDeployments").Index(i).Child("componentName")
		if d.ComponentName == "" {
			errs = append(errs, field.Required(idx, ""))
		} else if seen.Has(d.ComponentName) {
			errs = append(errs, field.Duplicate(idx, d.ComponentName))
		}
		seen.Insert(d.ComponentName)
	}
	return errs
}

// ValidatePromotionRun checks a PromotionRun on create.
func ValidatePromotionRun(obj *appstudio.PromotionRun) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := &obj.Spec
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("snapshot"), spec.Snapshot, true)...)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("application"), spec.Application, true)...)
	manual := specPath.Child("manualPromotion", "targetEnvironment")
	automated := specPath.Child("automatedPromotion", "initialEnvironment")
	switch {
	case spec.AutomatedPromotion.InitialEnvironment != "" && spec.ManualPromotion.TargetEnvironment != "":
		errs = append(errs, field.Forbidden(automated, "only one of spec.manualPromotion and spec.automatedPromotion may be set"))
	case spec.AutomatedPromotion.InitialEnvironment != "":
		errs = append(errs, fieldvalidation.NamespaceName(automated, spec.AutomatedPromotion.InitialEnvironment, true)...)
	case spec.ManualPromotion.TargetEnvironment == "":
		errs = append(errs, field.Required(manual, "the Environment to promote to (or spec.automatedPromotion.initialEnvironment)"))
	default:
		errs = append(errs, fieldvalidation.NamespaceName(manual, spec.ManualPromotion.TargetEnvironment, true)...)
	}
	return errs
}

// ValidatePromotionRunUpdate checks a PromotionRun on update: a run's spec never changes.
func ValidatePromotionRunUpdate(obj, old *appstudio.PromotionRun) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "field is immutable: create a new PromotionRun instead"))
	}
	return errs
}

// ValidatePromotionRunStatusUpdate checks a write of a PromotionRun's status.
func ValidatePromotionRunStatusUpdate(obj, old *appstudio.PromotionRun) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	st := &obj.Status
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("state"), st.State, false,
		appstudio.PromotionRunStateActive, appstudio.PromotionRunStateWaiting, appstudio.PromotionRunStateComplete)...)
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("completionResult"), st.CompletionResult, false,
		appstudio.PromotionRunCompleteResultSuccess, appstudio.PromotionRunCompleteResultFailure)...)
	if st.CompletionResult != "" && st.State != appstudio.PromotionRunStateComplete {
		errs = append(errs, field.Invalid(statusPath.Child("completionResult"), st.CompletionResult, "may only be set when status.state is Complete"))
	}
	for i, e := range st.EnvironmentStatus {
		idx := statusPath.Child("environmentStatus").Index(i)
		errs = append(errs, fieldvalidation.Enum(idx.Child("status"), e.Status, true,
			appstudio.PromotionRunEnvironmentStatusSuccess, appstudio.PromotionRunEnvironmentStatusInProgress, appstudio.PromotionRunEnvironmentStatusFailed)...)
		if e.StartTime != nil && e.CompletionTime != nil && e.CompletionTime.Before(e.StartTime) {
			errs = append(errs, field.Invalid(idx.Child("completionTime"), e.CompletionTime.UTC().Format(time.RFC3339),
				"must not be before startTime ("+e.StartTime.UTC().Format(time.RFC3339)+")"))
		}
	}
	seen := sets.New[appstudio.PromotionRunConditionType]()
	for i, c := range st.Conditions {
		idx := statusPath.Child("conditions").Index(i)
		errs = append(errs, fieldvalidation.Enum(idx.Child("type"), c.Type, true, appstudio.PromotionRunConditionErrorOccurred)...)
		if seen.Has(c.Type) {
			errs = append(errs, field.Duplicate(idx.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		errs = append(errs, fieldvalidation.ConditionStatus(idx.Child("status"), c.Status)...)
	}
	return errs
}

// ValidateDeploymentTarget checks a DeploymentTarget on create.
func ValidateDeploymentTarget(obj *appstudio.DeploymentTarget) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeploymentTargetSpec(&obj.Spec)...)
}

// ValidateDeploymentTargetUpdate checks a DeploymentTarget on update.
func ValidateDeploymentTargetUpdate(obj, old *appstudio.DeploymentTarget) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateDeploymentTargetSpec(&obj.Spec)...)
}

func validateDeploymentTargetSpec(spec *appstudio.DeploymentTargetSpec) field.ErrorList {
	errs := fieldvalidation.ObjectName(specPath.Child("deploymentTargetClassName"), string(spec.DeploymentTargetClassName), true)
	creds := specPath.Child("kubernetesCredentials")
	c := &spec.KubernetesClusterCredentials
	errs = append(errs, fieldvalidation.NamespaceName(creds.Child("defaultNamespace"), c.DefaultNamespace, false)...)
	errs = append(errs, fieldvalidation.HTTPSURL(creds.Child("apiURL"), c.APIURL, true)...)
	errs = append(errs, fieldvalidation.ObjectName(creds.Child("clusterCredentialsSecret"), c.ClusterCredentialsSecret, true)...)
	return append(errs, fieldvalidation.ObjectName(specPath.Child("claimRef"), spec.ClaimRef, false)...)
}

// ValidateDeploymentTargetStatusUpdate checks a write of a DeploymentTarget's status.
func ValidateDeploymentTargetStatusUpdate(obj, old *appstudio.DeploymentTarget) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("phase"), obj.Status.Phase, false,
		appstudio.DeploymentTargetPhasePending, appstudio.DeploymentTargetPhaseAvailable, appstudio.DeploymentTargetPhaseBound,
		appstudio.DeploymentTargetPhaseReleased, appstudio.DeploymentTargetPhaseFailed)...)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateDeploymentTargetClaim checks a DeploymentTargetClaim on create.
func ValidateDeploymentTargetClaim(obj *appstudio.DeploymentTargetClaim) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeploymentTargetClaimSpec(&obj.Spec)...)
}

// ValidateDeploymentTargetClaimUpdate checks a DeploymentTargetClaim on update. Its target may
// be set when empty (the binder sets the target it picked) but not changed once set, as a
// PersistentVolumeClaim's volumeName: a bound claim that named another target would leave the
// binder to bind a second target while the first still serves it. Its class is fixed at
// creation, when the storage counts the claim against the class's maxClaimsPerNamespace: a
// class set later would escape that limit.
func ValidateDeploymentTargetClaimUpdate(obj, old *appstudio.DeploymentTargetClaim) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	if obj.Spec.DeploymentTargetClassName != old.Spec.DeploymentTargetClassName {
		errs = append(errs, field.Invalid(specPath.Child("deploymentTargetClassName"), obj.Spec.DeploymentTargetClassName,
			"may not be changed after creation (the class's claim limit is counted when a claim is created)"))
	}
	if old.Spec.TargetName != "" && obj.Spec.TargetName != old.Spec.TargetName {
		errs = append(errs, field.Invalid(specPath.Child("targetName"), obj.Spec.TargetName, "may not be changed once set"))
	}
	return append(errs, validateDeploymentTargetClaimSpec(&obj.Spec)...)
}

func validateDeploymentTargetClaimSpec(spec *appstudio.DeploymentTargetClaimSpec) field.ErrorList {
	// The class may be empty: a claim can name its target directly.
	errs := fieldvalidation.ObjectName(specPath.Child("deploymentTargetClassName"), string(spec.DeploymentTargetClassName), false)
	return append(errs, fieldvalidation.ObjectName(specPath.Child("targetName"), spec.TargetName, false)...)
}

// ValidateDeploymentTargetClaimStatusUpdate checks a write of a DeploymentTargetClaim's status.
func ValidateDeploymentTargetClaimStatusUpdate(obj, old *appstudio.DeploymentTargetClaim) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("phase"), obj.Status.Phase, false,
		appstudio.DeploymentTargetClaimPhasePending, appstudio.DeploymentTargetClaimPhaseBound, appstudio.DeploymentTargetClaimPhaseLost)...)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateDeploymentTargetClass checks a DeploymentTargetClass on create.
func ValidateDeploymentTargetClass(obj *appstudio.DeploymentTargetClass) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDeploymentTargetClassSpec(&obj.Spec)...)
}

// ValidateDeploymentTargetClassUpdate checks a DeploymentTargetClass on update.
func ValidateDeploymentTargetClassUpdate(obj, old *appstudio.DeploymentTargetClass) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateDeploymentTargetClassSpec(&obj.Spec)...)
}

func validateDeploymentTargetClassSpec(spec *appstudio.DeploymentTargetClassSpec) field.ErrorList {
	var errs field.ErrorList
	p := specPath.Child("provisioner")
	if spec.Provisioner == "" {
		errs = append(errs, field.Required(p, ""))
	} else {
		for _, msg := range utilvalidation.IsQualifiedName(string(spec.Provisioner)) {
			errs = append(errs, field.Invalid(p, spec.Provisioner, msg))
		}
	}
	errs = append(errs, fieldvalidation.Enum(specPath.Child("reclaimPolicy"), spec.ReclaimPolicy, true,
		appstudio.ReclaimPolicyDelete, appstudio.ReclaimPolicyRetain)...)
	return append(errs, validateDeploymentTargetParameters(spec, specPath.Child("parameters"))...)
}

// Bounds of the namespace provisioner's durations. The TokenRequest API refuses tokens of less
// than 10 minutes; a year bounds a credential that nobody renews by hand anyway.
const (
	minNamespaceTTL             = time.Minute
	minNamespaceTokenExpiration = 10 * time.Minute
	maxNamespaceTokenExpiration = 8760 * time.Hour
)

// validateDeploymentTargetParameters checks a class's parameters: parameters.namespace belongs
// to the namespace provisioner alone; an empty parameters object is valid for every one.
func validateDeploymentTargetParameters(spec *appstudio.DeploymentTargetClassSpec, fldPath *field.Path) field.ErrorList {
	ns := spec.Parameters.Namespace
	if ns == nil {
		return nil
	}
	p := fldPath.Child("namespace")
	if spec.Provisioner != appstudio.ProvisionerNamespace {
		return field.ErrorList{field.Forbidden(p,
			fmt.Sprintf("may only be set when spec.provisioner is %s", appstudio.ProvisionerNamespace))}
	}
	var errs field.ErrorList
	if d := ns.TTL; d != nil && d.Duration < minNamespaceTTL {
		errs = append(errs, field.Invalid(p.Child("ttl"), d.Duration.String(),
			fmt.Sprintf("must be at least %s", minNamespaceTTL)))
	}
	if d := ns.TokenExpiration; d != nil {
		switch {
		case d.Duration < minNamespaceTokenExpiration:
			errs = append(errs, field.Invalid(p.Child("tokenExpiration"), d.Duration.String(),
				fmt.Sprintf("must be at least %s, the TokenRequest API's minimum", minNamespaceTokenExpiration)))
		case d.Duration > maxNamespaceTokenExpiration:
			errs = append(errs, field.Invalid(p.Child("tokenExpiration"), d.Duration.String(),
				fmt.Sprintf("must be at most %s", maxNamespaceTokenExpiration)))
		}
	}
	errs = append(errs, validateResourceList(ns.ResourceQuota, p.Child("resourceQuota"))...)
	if l := ns.ContainerLimits; l != nil {
		errs = append(errs, validateContainerLimits(l, p.Child("containerLimits"))...)
	}
	errs = append(errs, fieldvalidation.Enum(p.Child("podSecurityLevel"), ns.PodSecurityLevel, false,
		appstudio.PodSecurityRestricted, appstudio.PodSecurityBaseline, appstudio.PodSecurityPrivileged)...)
	if np := ns.NetworkPolicy; np != nil {
		for i := range np.AllowFromNamespaces {
			errs = append(errs, metav1validation.ValidateLabelSelector(&np.AllowFromNamespaces[i],
				metav1validation.LabelSelectorValidationOptions{}, p.Child("networkPolicy", "allowFromNamespaces").Index(i))...)
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(ns.Labels, p.Child("labels"))...)
	errs = append(errs, reservedKeys(ns.Labels, p.Child("labels"), provisionerPrefix, podSecurityPrefix, "kubernetes.io/metadata.name")...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(ns.Annotations, p.Child("annotations"))...)
	errs = append(errs, reservedKeys(ns.Annotations, p.Child("annotations"), provisionerPrefix)...)
	if m := ns.MaxClaimsPerNamespace; m != nil && *m < 1 {
		errs = append(errs, field.Invalid(p.Child("maxClaimsPerNamespace"), *m, "must be at least 1"))
	}
	return errs
}

// Keys that the provisioner sets itself on the namespaces it makes: a class may not name them,
// so that neither its labels nor its annotations can undo the Pod Security level or pass a
// namespace off as another claim's.
const (
	provisionerPrefix = "namespace.provisioner.managed-gitops.redhat.com/"
	podSecurityPrefix = "pod-security.kubernetes.io/"
)

// reservedKeys reports each key of m that is, or starts with, one of reserved.
func reservedKeys(m map[string]string, fldPath *field.Path, reserved ...string) field.ErrorList {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		for _, r := range reserved {
			if k == r || (strings.HasSuffix(r, "/") && strings.HasPrefix(k, r)) {
				errs = append(errs, field.Forbidden(fldPath.Key(k), fmt.Sprintf("%s is set by the namespace provisioner", r)))
				break
			}
		}
	}
	return errs
}

// validateResourceList checks that the names are qualified names (as Kubernetes' resource
// names: requests.cpu, count/pods, example.com/gpu) and the quantities not negative.
func validateResourceList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(list) {
		q := list[name]
		p := fldPath.Key(string(name))
		if name == "" {
			errs = append(errs, field.Invalid(p, string(name), "a resource name must not be empty"))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
				errs = append(errs, field.Invalid(p, string(name), msg))
			}
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

// validateContainerLimits checks a LimitRange item of type Container as Kubernetes does,
// simplified: maxLimitRequestRatio at least 1, and for each resource
// min <= defaultRequest <= default <= max among those set. A broken order is reported at the
// value that is out of place: min against max, the defaults against min, max and each other.
func validateContainerLimits(l *appstudio.ContainerLimits, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		list corev1.ResourceList
	}{
		{"default", l.Default}, {"defaultRequest", l.DefaultRequest}, {"max", l.Max}, {"min", l.Min},
		{"maxLimitRequestRatio", l.MaxLimitRequestRatio},
	} {
		errs = append(errs, validateResourceList(f.list, fldPath.Child(f.name))...)
	}
	for _, name := range sortedResourceNames(l.MaxLimitRequestRatio) {
		if q := l.MaxLimitRequestRatio[name]; q.Sign() >= 0 && q.Cmp(resource.MustParse("1")) < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("maxLimitRequestRatio").Key(string(name)), q.String(),
				"must be greater than or equal to 1"))
		}
	}
	names := sets.New[corev1.ResourceName]()
	for _, list := range []corev1.ResourceList{l.Default, l.DefaultRequest, l.Max, l.Min} {
		for name := range list {
			names.Insert(name)
		}
	}
	// Negative quantities are reported above and left out of the comparisons.
	for _, name := range sets.List(names) {
		// above reports list[name] > bound[name] at list's key when both are set.
		above := func(list corev1.ResourceList, listName string, bound corev1.ResourceList, boundName string) {
			q, ok := list[name]
			b, bok := bound[name]
			if ok && bok && q.Sign() >= 0 && b.Sign() >= 0 && q.Cmp(b) > 0 {
				errs = append(errs, field.Invalid(fldPath.Child(listName).Key(string(name)), q.String(),
					fmt.Sprintf("must be less than or equal to %s %s of %s", boundName, name, b.String())))
			}
		}
		below := func(list corev1.ResourceList, listName string, bound corev1.ResourceList, boundName string) {
			q, ok := list[name]
			b, bok := bound[name]
			if ok && bok && q.Sign() >= 0 && b.Sign() >= 0 && q.Cmp(b) < 0 {
				errs = append(errs, field.Invalid(fldPath.Child(listName).Key(string(name)), q.String(),
					fmt.Sprintf("must be greater than or equal to %s %s of %s", boundName, name, b.String())))
			}
		}
		above(l.Min, "min", l.Max, "max")
		above(l.Default, "default", l.Max, "max")
		below(l.Default, "default", l.Min, "min")
		above(l.DefaultRequest, "defaultRequest", l.Max, "max")
		below(l.DefaultRequest, "defaultRequest", l.Min, "min")
		above(l.DefaultRequest, "defaultRequest", l.Default, "default")
	}
	return errs
}

// sortedResourceNames are a list's names in order, so that errors come in a stable order.
func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// The rules of Application, Component and ComponentDetectionQuery are those of
// application-service's admission webhooks (controllers/webhooks of
// redhat-appstudio/application-service at e01f1b60, December 2023, which pins application-api
// 2dde965, whose types of these kinds are those of 18f545e) and of the constraints of
// application-api's CRDs, with their messages.
// What the webhooks decided by reading other objects (indirect build-nudges-ref cycles, nudged
// components of other applications) and what they wrote (status.build-nudged-by) is
// application-service's business, not this server's.

// The webhooks' words for a name that is not a DNS-1035 label: they say what the rule is to
// users who never heard of RFC 1035.
const (
	applicationNameMessage = "an application resource name must start with a lower case alphabetical character, be under 63 characters, and can only consist of lower case alphanumeric characters or ‘-’"
	componentNameMessage   = "a component resource name must start with a lower case alphabetical character, be under 63 characters, and can only consist of lower case alphanumeric characters or ‘-’"
)

func dns1035Name(msg string) apimachineryvalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if len(apimachineryvalidation.NameIsDNS1035Label(name, prefix)) > 0 {
			return []string{msg}
		}
		return nil
	}
}

// ValidateApplication checks an Application on create.
func ValidateApplication(obj *appstudio.Application) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, dns1035Name(applicationNameMessage))
	// Only on create, as the webhook: the CRD's schema wanted the key, not a value.
	if obj.Spec.DisplayName == "" {
		errs = append(errs, field.Required(specPath.Child("displayName"), "display name must be provided when creating an Application"))
	}
	return append(errs, validateApplicationSpec(&obj.Spec)...)
}

// ValidateApplicationUpdate checks an Application on update: its repositories never change.
func ValidateApplicationUpdate(obj, old *appstudio.Application) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateApplicationSpec(&obj.Spec)...)
	if obj.Spec.AppModelRepository != old.Spec.AppModelRepository {
		errs = append(errs, field.Forbidden(specPath.Child("appModelRepository"),
			fmt.Sprintf("app model repository cannot be updated to %+v", obj.Spec.AppModelRepository)))
	}
	if obj.Spec.GitOpsRepository != old.Spec.GitOpsRepository {
		errs = append(errs, field.Forbidden(specPath.Child("gitOpsRepository"),
			fmt.Sprintf("gitops repository cannot be updated to %+v", obj.Spec.GitOpsRepository)))
	}
	return errs
}

func validateApplicationSpec(spec *appstudio.ApplicationSpec) field.ErrorList {
	errs := validateApplicationRepository(specPath.Child("appModelRepository"), &spec.AppModelRepository)
	return append(errs, validateApplicationRepository(specPath.Child("gitOpsRepository"), &spec.GitOpsRepository)...)
}

// validateApplicationRepository wants the URL that the CRD required of a repository that is
// given at all; an empty one asks application-service to generate the repository.
func validateApplicationRepository(fldPath *field.Path, repo *appstudio.ApplicationGitRepository) field.ErrorList {
	if repo.URL == "" && (repo.Branch != "" || repo.Context != "") {
		return field.ErrorList{field.Required(fldPath.Child("url"), "the repository whose branch or context is given")}
	}
	return nil
}

// ValidateApplicationStatusUpdate checks a write of an Application's status.
func ValidateApplicationStatusUpdate(obj, old *appstudio.Application) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateComponent checks a Component on create.
func ValidateComponent(obj *appstudio.Component) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, dns1035Name(componentNameMessage))
	errs = append(errs, validateComponentSpec(&obj.Spec, obj.Name)...)
	// Only on create, as the webhook. A Git source without URL is refused by itself.
	if obj.Spec.Source.GitSource == nil && obj.Spec.ContainerImage == "" {
		errs = append(errs, field.Required(specPath.Child("source"), "a git source or an image source must be specified when creating a component"))
	}
	return errs
}

// ValidateComponentUpdate checks a Component on update: its name, application and Git
// repository never change.
func ValidateComponentUpdate(obj, old *appstudio.Component) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, validateComponentSpec(&obj.Spec, obj.Name)...)
	if obj.Spec.ComponentName != old.Spec.ComponentName {
		errs = append(errs, field.Forbidden(specPath.Child("componentName"),
			fmt.Sprintf("component name cannot be updated to %s", obj.Spec.ComponentName)))
	}
	if obj.Spec.Application != old.Spec.Application {
		errs = append(errs, field.Forbidden(specPath.Child("application"),
			fmt.Sprintf("application name cannot be updated to %s", obj.Spec.Application)))
	}
	// As the webhook, only a change of URL between two Git sources: adding or dropping the
	// source is allowed.
	if g, oldG := obj.Spec.Source.GitSource, old.Spec.Source.GitSource; g != nil && oldG != nil && g.URL != oldG.URL {
		errs = append(errs, field.Forbidden(specPath.Child("source", "git", "url"),
			fmt.Sprintf("git source cannot be updated to %+v", *g)))
	}
	return errs
}

// validateComponentSpec checks what application-api's CRD checked (names as DNS-1123 labels,
// a Git source with a URL, named environment variables) and what the webhook could tell from
// the object alone (the URL's form, a component nudging itself); non-negative replicas, a
// valid port and requests within limits are ours, as for a binding's components.
func validateComponentSpec(spec *appstudio.ComponentSpec, name string) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, fieldvalidation.NamespaceName(specPath.Child("componentName"), spec.ComponentName, true)...)
	errs = append(errs, fieldvalidation.NamespaceName(specPath.Child("application"), spec.Application, true)...)
	if g := spec.Source.GitSource; g != nil {
		errs = append(errs, validateGitSourceURL(specPath.Child("source", "git", "url"), g.URL)...)
	}
	errs = append(errs, validateResources(&spec.Resources, specPath.Child("resources"))...)
	if r := spec.Replicas; r != nil && *r < 0 {
		errs = append(errs, field.Invalid(specPath.Child("replicas"), *r, "must be greater than or equal to 0"))
	}
	if p := spec.TargetPort; p != 0 {
		for _, msg := range utilvalidation.IsValidPortNum(int(p)) {
			errs = append(errs, field.Invalid(specPath.Child("targetPort"), p, msg))
		}
	}
	for i, e := range spec.Env {
		if e.Name == "" {
			errs = append(errs, field.Required(specPath.Child("env").Index(i).Child("name"), ""))
		}
	}
	for i, ref := range spec.BuildNudgesRef {
		if ref == name {
			errs = append(errs, field.Invalid(specPath.Child("build-nudges-ref").Index(i), ref,
				fmt.Sprintf("cycle detected: component %s cannot reference itself, directly or indirectly, via build-nudges-ref", ref)))
		}
	}
	return errs
}

// validateGitSourceURL accepts what the webhook accepted: an absolute URL or path.
func validateGitSourceURL(fldPath *field.Path, value string) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if _, err := url.ParseRequestURI(value); err != nil {
		return field.ErrorList{field.Invalid(fldPath, value, "gitsource URL must be an absolute URL starting with an 'https/http' scheme")}
	}
	return nil
}

// ValidateComponentStatusUpdate checks a write of a Component's status.
func ValidateComponentStatusUpdate(obj, old *appstudio.Component) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateComponentDetectionQuery checks a ComponentDetectionQuery on create. No webhook
// checked one; its CRD wanted the repository's URL.
func ValidateComponentDetectionQuery(obj *appstudio.ComponentDetectionQuery) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validateDetectionQuerySpec(&obj.Spec)...)
}

// ValidateComponentDetectionQueryUpdate checks a ComponentDetectionQuery on update.
func ValidateComponentDetectionQueryUpdate(obj, old *appstudio.ComponentDetectionQuery) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateDetectionQuerySpec(&obj.Spec)...)
}

func validateDetectionQuerySpec(spec *appstudio.ComponentDetectionQuerySpec) field.ErrorList {
	if spec.GitSource.URL == "" {
		return field.ErrorList{field.Required(specPath.Child("git", "url"), "")}
	}
	return nil
}

// ValidateComponentDetectionQueryStatusUpdate checks a write of a ComponentDetectionQuery's status.
func ValidateComponentDetectionQueryStatusUpdate(obj, old *appstudio.ComponentDetectionQuery) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}
