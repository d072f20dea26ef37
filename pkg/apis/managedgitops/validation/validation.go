// Package validation checks managed-gitops.redhat.com objects: the rules the original service
// enforced in admission webhooks and at run time that can be decided from the object alone.
package validation

import (
	"fmt"
	"path"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// Options are the server settings that change what is valid.
type Options struct {
	// AllowFileRepositories accepts file:// repository URLs. Only for local stacks and tests:
	// on a shared Argo CD a file:// URL reads whatever repository the repo-server can see.
	AllowFileRepositories bool
}

var (
	specPath   = field.NewPath("spec")
	statusPath = field.NewPath("status")
	metaPath   = field.NewPath("metadata")
)

func validateMeta(meta *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(meta, true, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
}

// ValidateGitOpsDeployment checks a GitOpsDeployment on create.
func ValidateGitOpsDeployment(obj *gitops.GitOpsDeployment, opts Options) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	return append(errs, validateGitOpsDeploymentSpec(&obj.Spec, obj.Namespace, opts, specPath)...)
}

// ValidateGitOpsDeploymentUpdate checks a GitOpsDeployment on update; every spec field may change.
func ValidateGitOpsDeploymentUpdate(obj, old *gitops.GitOpsDeployment, opts Options) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateGitOpsDeploymentSpec(&obj.Spec, obj.Namespace, opts, specPath)...)
}

func repositorySchemes(opts Options) []string {
	schemes := []string{"https", "http", "ssh", "git"}
	if opts.AllowFileRepositories {
		schemes = append(schemes, "file")
	}
	return schemes
}

func validateGitOpsDeploymentSpec(spec *gitops.GitOpsDeploymentSpec, namespace string, opts Options, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateApplicationSource(&spec.Source, opts, fldPath.Child("source"))...)

	dest := fldPath.Child("destination")
	errs = append(errs, fieldvalidation.ObjectName(dest.Child("environment"), spec.Destination.Environment, false)...)
	errs = append(errs, fieldvalidation.NamespaceName(dest.Child("namespace"), spec.Destination.Namespace, false)...)
	// Without a managed environment the service deploys with a credential scoped to the object's
	// own namespace, so naming any other namespace could only fail later, or reach another tenant.
	if spec.Destination.Environment == "" && spec.Destination.Namespace != "" && spec.Destination.Namespace != namespace {
		errs = append(errs, field.Invalid(dest.Child("namespace"), spec.Destination.Namespace,
			"must be empty or this object's namespace when spec.destination.environment is empty"))
	}
	// The original refused this at run time ("the namespace specified in the destination field
	// is invalid"): on another cluster there is no "own namespace" to fall back to.
	if spec.Destination.Environment != "" && spec.Destination.Namespace == "" {
		errs = append(errs, field.Required(dest.Child("namespace"), "the namespace to deploy to on the cluster of spec.destination.environment"))
	}

	if spec.SyncPolicy != nil {
		errs = append(errs, validateSyncOptions(spec.SyncPolicy.SyncOptions, fldPath.Child("syncPolicy", "syncOptions"))...)
	}
	errs = append(errs, fieldvalidation.Enum(fldPath.Child("type"), spec.Type, true,
		gitops.GitOpsDeploymentSpecTypeAutomated, gitops.GitOpsDeploymentSpecTypeManual)...)
	if l := spec.RevisionHistoryLimit; l != nil && (*l < 0 || *l > MaxRevisionHistoryLimit) {
		errs = append(errs, field.Invalid(fldPath.Child("revisionHistoryLimit"), *l,
			fmt.Sprintf("must be between 0 and %d", MaxRevisionHistoryLimit)))
	}
	return errs
}

func validateApplicationSource(src *gitops.ApplicationSource, opts Options, fldPath *field.Path) field.ErrorList {
	errs := fieldvalidation.GitRepositoryURL(fldPath.Child("repoURL"), src.RepoURL, repositorySchemes(opts), true)
	pathPath := fldPath.Child("path")
	switch {
	case src.Path == "":
		errs = append(errs, field.Required(pathPath, "the directory of the repository to deploy; it cannot be empty"))
	case path.Clean("/"+src.Path) == "/":
		errs = append(errs, field.Invalid(pathPath, src.Path, "cannot be '/': name a directory of the repository"))
	case sets.New(strings.Split(src.Path, "/")...).Has(".."):
		errs = append(errs, field.Invalid(pathPath, src.Path, "must not contain '..'"))
	}
	if strings.ContainsAny(src.TargetRevision, " \t\r\n") {
		errs = append(errs, field.Invalid(fldPath.Child("targetRevision"), src.TargetRevision, "must not contain whitespace"))
	}
	return errs
}

func validateSyncOptions(options gitops.SyncOptions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[gitops.SyncOption]()
	for i, o := range options {
		idx := fldPath.Index(i)
		errs = append(errs, fieldvalidation.Enum(idx, o, true,
			gitops.SyncOptionCreateNamespaceTrue, gitops.SyncOptionCreateNamespaceFalse)...)
		if seen.Has(o) {
			errs = append(errs, field.Duplicate(idx, o))
		}
		seen.Insert(o)
	}
	if seen.Has(gitops.SyncOptionCreateNamespaceTrue) && seen.Has(gitops.SyncOptionCreateNamespaceFalse) {
		errs = append(errs, field.Invalid(fldPath, options, "cannot hold both CreateNamespace=true and CreateNamespace=false"))
	}
	return errs
}

// ValidateGitOpsDeploymentStatusUpdate checks a write of a GitOpsDeployment's status.
func ValidateGitOpsDeploymentStatusUpdate(obj, old *gitops.GitOpsDeployment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	st := &obj.Status
	seen := sets.New[gitops.GitOpsDeploymentConditionType]()
	for i, c := range st.Conditions {
		idx := statusPath.Child("conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(idx.Child("type"), ""))
		} else if seen.Has(c.Type) {
			errs = append(errs, field.Duplicate(idx.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		errs = append(errs, fieldvalidation.ConditionStatus(idx.Child("status"), c.Status)...)
	}
	errs = append(errs, validateSyncStatusCode(statusPath.Child("sync", "status"), st.Sync.Status)...)
	errs = append(errs, validateHealthStatusCode(statusPath.Child("health", "status"), st.Health.Status)...)
	for i, r := range st.Resources {
		idx := statusPath.Child("resources").Index(i)
		errs = append(errs, validateSyncStatusCode(idx.Child("status"), r.Status)...)
		if r.Health != nil {
			errs = append(errs, validateHealthStatusCode(idx.Child("health", "status"), r.Health.Status)...)
		}
	}
	if st.OperationState != nil {
		errs = append(errs, fieldvalidation.Enum(statusPath.Child("operationState", "phase"), st.OperationState.Phase, true,
			gitops.OperationPhaseRunning, gitops.OperationPhaseTerminating, gitops.OperationPhaseFailed,
			gitops.OperationPhaseError, gitops.OperationPhaseSucceeded)...)
	}
	return errs
}

func validateSyncStatusCode(fldPath *field.Path, v gitops.SyncStatusCode) field.ErrorList {
	return fieldvalidation.Enum(fldPath, v, false,
		gitops.SyncStatusCodeUnknown, gitops.SyncStatusCodeSynced, gitops.SyncStatusCodeOutOfSync)
}

func validateHealthStatusCode(fldPath *field.Path, v gitops.HealthStatusCode) field.ErrorList {
	return fieldvalidation.Enum(fldPath, v, false,
		gitops.HealthStatusCodeHealthy, gitops.HealthStatusCodeProgressing, gitops.HealthStatusCodeDegraded,
		gitops.HealthStatusCodeSuspended, gitops.HealthStatusCodeMissing, gitops.HealthStatusCodeUnknown)
}

// ValidateGitOpsDeploymentSyncRun checks a GitOpsDeploymentSyncRun on create.
func ValidateGitOpsDeploymentSyncRun(obj *gitops.GitOpsDeploymentSyncRun) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("gitopsDeploymentName"), obj.Spec.GitopsDeploymentName, true)...)
	if strings.ContainsAny(obj.Spec.RevisionID, " \t\r\n") {
		errs = append(errs, field.Invalid(specPath.Child("revisionID"), obj.Spec.RevisionID, "must not contain whitespace"))
	}
	return errs
}

// ValidateGitOpsDeploymentSyncRunUpdate checks a GitOpsDeploymentSyncRun on update: a SyncRun
// stands for one sync, so what it syncs never changes.
func ValidateGitOpsDeploymentSyncRunUpdate(obj, old *gitops.GitOpsDeploymentSyncRun) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.GitopsDeploymentName, old.Spec.GitopsDeploymentName, specPath.Child("gitopsDeploymentName"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.RevisionID, old.Spec.RevisionID, specPath.Child("revisionID"))...)
	return errs
}

// ValidateGitOpsDeploymentSyncRunStatusUpdate checks a write of a SyncRun's status.
func ValidateGitOpsDeploymentSyncRunStatusUpdate(obj, old *gitops.GitOpsDeploymentSyncRun) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	seen := sets.New[gitops.GitOpsDeploymentSyncRunConditionType]()
	for i, c := range obj.Status.Conditions {
		idx := statusPath.Child("conditions").Index(i)
		errs = append(errs, fieldvalidation.Enum(idx.Child("type"), c.Type, true, gitops.GitOpsDeploymentSyncRunConditionErrorOccurred)...)
		if seen.Has(c.Type) {
			errs = append(errs, field.Duplicate(idx.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		errs = append(errs, fieldvalidation.ConditionStatus(idx.Child("status"), c.Status)...)
	}
	return errs
}

// ValidateGitOpsDeploymentManagedEnvironment checks a GitOpsDeploymentManagedEnvironment on create.
func ValidateGitOpsDeploymentManagedEnvironment(obj *gitops.GitOpsDeploymentManagedEnvironment) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	return append(errs, validateManagedEnvironmentSpec(&obj.Spec)...)
}

// ValidateGitOpsDeploymentManagedEnvironmentUpdate checks a GitOpsDeploymentManagedEnvironment on update.
func ValidateGitOpsDeploymentManagedEnvironmentUpdate(obj, old *gitops.GitOpsDeploymentManagedEnvironment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateManagedEnvironmentSpec(&obj.Spec)...)
}

func validateManagedEnvironmentSpec(spec *gitops.ManagedEnvironmentSpec) field.ErrorList {
	errs := fieldvalidation.HTTPSURL(specPath.Child("apiURL"), spec.APIURL, true)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("credentialsSecret"), spec.ClusterCredentialsSecret, true)...)
	return append(errs, fieldvalidation.NamespaceList(specPath.Child("namespaces"), spec.Namespaces)...)
}

// ValidateGitOpsDeploymentManagedEnvironmentStatusUpdate checks a write of a ManagedEnvironment's status.
func ValidateGitOpsDeploymentManagedEnvironmentStatusUpdate(obj, old *gitops.GitOpsDeploymentManagedEnvironment) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, metav1validation.ValidateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateGitOpsDeploymentRepositoryCredential checks a GitOpsDeploymentRepositoryCredential on create.
func ValidateGitOpsDeploymentRepositoryCredential(obj *gitops.GitOpsDeploymentRepositoryCredential) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	return append(errs, validateRepositoryCredentialSpec(&obj.Spec)...)
}

// ValidateGitOpsDeploymentRepositoryCredentialUpdate checks a GitOpsDeploymentRepositoryCredential on update.
func ValidateGitOpsDeploymentRepositoryCredentialUpdate(obj, old *gitops.GitOpsDeploymentRepositoryCredential) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateRepositoryCredentialSpec(&obj.Spec)...)
}

func validateRepositoryCredentialSpec(spec *gitops.RepositoryCredentialSpec) field.ErrorList {
	// Credentials are only ever sent over https or ssh.
	errs := fieldvalidation.GitRepositoryURL(specPath.Child("repository"), spec.Repository, []string{"https", "ssh"}, false)
	return append(errs, fieldvalidation.ObjectName(specPath.Child("secret"), spec.Secret, true)...)
}

// ValidateGitOpsDeploymentRepositoryCredentialStatusUpdate checks a write of a RepositoryCredential's status.
func ValidateGitOpsDeploymentRepositoryCredentialStatusUpdate(obj, old *gitops.GitOpsDeploymentRepositoryCredential) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, metav1validation.ValidateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
}

// ValidateOperation checks an Operation on create.
func ValidateOperation(obj *gitops.Operation) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	return append(errs, validateOperationSpec(&obj.Spec)...)
}

// ValidateOperationUpdate checks an Operation on update.
func ValidateOperationUpdate(obj, old *gitops.Operation) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateOperationSpec(&obj.Spec)...)
}

func validateOperationSpec(spec *gitops.OperationSpec) field.ErrorList {
	return fieldvalidation.Enum(specPath.Child("resourceType"), spec.ResourceType, false,
		gitops.OperationResourceTypeApplication, gitops.OperationResourceTypeSyncOperation,
		gitops.OperationResourceTypeManagedEnvironment, gitops.OperationResourceTypeRepositoryCredentials,
		gitops.OperationResourceTypeAppProject)
}

// ValidateOperationStatusUpdate checks a write of an Operation's status.
func ValidateOperationStatusUpdate(obj, old *gitops.Operation) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, fieldvalidation.Enum(statusPath.Child("state"), obj.Status.State, false,
		gitops.OperationStateWaiting, gitops.OperationStateInProgress, gitops.OperationStateCompleted, gitops.OperationStateFailed)...)
	if obj.Status.Attempts < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("attempts"), obj.Status.Attempts, "must be greater than or equal to 0"))
	}
	return errs
}

// ValidateArgoCDInstance checks an ArgoCDInstance on create. Its name is a DNS label: agents
// put it in label values and Lease names.
func ValidateArgoCDInstance(obj *gitops.ArgoCDInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.NameIsDNSLabel, metaPath)
	return append(errs, validateArgoCDInstanceSpec(&obj.Spec)...)
}

// ValidateArgoCDInstanceUpdate checks an ArgoCDInstance on update: where it runs cannot
// change, for its agents and Argo CD objects would be left behind.
func ValidateArgoCDInstanceUpdate(obj, old *gitops.ArgoCDInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, validateArgoCDInstanceSpec(&obj.Spec)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Namespace, old.Spec.Namespace, specPath.Child("namespace"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(obj.Spec.Cluster, old.Spec.Cluster, specPath.Child("cluster"))...)
}

func validateArgoCDInstanceSpec(spec *gitops.ArgoCDInstanceSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, fieldvalidation.DNSLabel(specPath.Child("namespace"), spec.Namespace, true)...)
	if spec.Cluster != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.Cluster, false) {
			errs = append(errs, field.Invalid(specPath.Child("cluster"), spec.Cluster, msg))
		}
	}
	if spec.Capacity < 1 {
		errs = append(errs, field.Invalid(specPath.Child("capacity"), spec.Capacity, "must be at least 1 (set spec.draining to take no tenants)"))
	}
	return errs
}

// ValidateArgoCDInstanceStatusUpdate checks an agent's report on an ArgoCDInstance.
func ValidateArgoCDInstanceStatusUpdate(obj, old *gitops.ArgoCDInstance) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, metav1validation.ValidateConditions(obj.Status.Conditions, statusPath.Child("conditions"))...)
	if obj.Status.Tenants < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("tenants"), obj.Status.Tenants, "must be greater than or equal to 0"))
	}
	if obj.Status.Applications < 0 {
		errs = append(errs, field.Invalid(statusPath.Child("applications"), obj.Status.Applications, "must be greater than or equal to 0"))
	}
	return errs
}

// ValidateTenantPlacement checks a TenantPlacement on create: its name is the tenant's
// namespace.
func ValidateTenantPlacement(obj *gitops.TenantPlacement) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&obj.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName, metaPath)
	return append(errs, validateTenantPlacementSpec(&obj.Spec)...)
}

// ValidateTenantPlacementUpdate checks a TenantPlacement on update.
func ValidateTenantPlacementUpdate(obj, old *gitops.TenantPlacement) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateTenantPlacementSpec(&obj.Spec)...)
}

func validateTenantPlacementSpec(spec *gitops.TenantPlacementSpec) field.ErrorList {
	errs := fieldvalidation.DNSLabel(specPath.Child("instance"), spec.Instance, false)
	if spec.Pinned && spec.Instance == "" {
		errs = append(errs, field.Required(specPath.Child("instance"), "a pinned placement names its instance"))
	}
	return errs
}

// ValidateTenantPlacementStatusUpdate checks a hand-over of a tenant. status.instance only
// changes to or from empty, and only to the instance the spec names: an instance releases a
// tenant before another takes it, so that two instances never hold it at once (with the
// resourceVersion precondition of every update, two agents cannot both take it).
func ValidateTenantPlacementStatusUpdate(obj, old *gitops.TenantPlacement) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	p := statusPath.Child("instance")
	errs = append(errs, fieldvalidation.DNSLabel(p, obj.Status.Instance, false)...)
	switch to, from := obj.Status.Instance, old.Status.Instance; {
	case to == from || to == "":
	case from != "":
		errs = append(errs, field.Forbidden(p, "instance "+from+" holds the tenant: it must release it (empty status.instance) before another takes it"))
	case to != obj.Spec.Instance:
		errs = append(errs, field.Forbidden(p, "only the instance the tenant is placed on (spec.instance "+obj.Spec.Instance+") may take it"))
	}
	return errs
}

// MaxRevisionHistoryLimit bounds how many DeploymentRecords a deployment may keep.
const MaxRevisionHistoryLimit = 1000

// ValidateDeploymentRecord checks a DeploymentRecord on create.
func ValidateDeploymentRecord(obj *gitops.DeploymentRecord) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta)
	spec := specPath
	errs = append(errs, fieldvalidation.ObjectName(spec.Child("gitOpsDeploymentName"), obj.Spec.GitOpsDeploymentName, true)...)
	if obj.Spec.StartedAt.IsZero() {
		errs = append(errs, field.Required(spec.Child("startedAt"), "when Argo CD started the sync"))
	}
	errs = append(errs, fieldvalidation.Enum(spec.Child("trigger", "type"), obj.Spec.Trigger.Type, true,
		gitops.DeploymentTriggerSpecChange, gitops.DeploymentTriggerNewCommit, gitops.DeploymentTriggerSyncRun,
		gitops.DeploymentTriggerPromotion, gitops.DeploymentTriggerAutomated, gitops.DeploymentTriggerExternal,
		gitops.DeploymentTriggerRollback)...)
	return append(errs, validateDeploymentRecordStatus(&obj.Status)...)
}

// ValidateDeploymentRecordUpdate checks a DeploymentRecord on update: its spec never changes.
func ValidateDeploymentRecordUpdate(obj, old *gitops.DeploymentRecord) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	if !apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "a record's spec does not change"))
	}
	return errs
}

// ValidateDeploymentRecordStatusUpdate checks a write of a DeploymentRecord's status.
func ValidateDeploymentRecordStatusUpdate(obj, old *gitops.DeploymentRecord) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta, metaPath)
	return append(errs, validateDeploymentRecordStatus(&obj.Status)...)
}

func validateDeploymentRecordStatus(st *gitops.DeploymentRecordStatus) field.ErrorList {
	return fieldvalidation.Enum(statusPath.Child("phase"), st.Phase, false,
		gitops.DeploymentRecordRunning, gitops.DeploymentRecordSucceeded, gitops.DeploymentRecordFailed, gitops.DeploymentRecordError)
}
