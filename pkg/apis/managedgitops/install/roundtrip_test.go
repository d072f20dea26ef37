package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/fuzzer"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

var group = apitesting.Group{
	Install:   Install,
	Internal:  managedgitops.SchemeGroupVersion,
	Versioned: v1alpha1.SchemeGroupVersion,
	Kinds: []string{
		"GitOpsDeployment", "GitOpsDeploymentList",
		"GitOpsDeploymentManagedEnvironment", "GitOpsDeploymentManagedEnvironmentList",
		"GitOpsDeploymentRepositoryCredential", "GitOpsDeploymentRepositoryCredentialList",
		"GitOpsDeploymentSyncRun", "GitOpsDeploymentSyncRunList",
		"Operation", "OperationList",
		"ArgoCDInstance", "ArgoCDInstanceList", "TenantPlacement", "TenantPlacementList",
		"AuditEntry", "AuditEntryList",
		"DeploymentRecord", "DeploymentRecordList",
		// The body of the deploymentrecords/diff subresource: no list, never stored.
		"DeploymentRecordDiff",
		"GitOpsDeploymentHold", "GitOpsDeploymentHoldList",
		"DeploymentPreview", "DeploymentPreviewList",
	},
	Sample:      [2]runtime.Object{&managedgitops.GitOpsDeployment{}, &v1alpha1.GitOpsDeployment{}},
	FuzzerFuncs: fuzzer.Funcs,
}

func TestKindsRegistered(t *testing.T) { apitesting.TestKindsRegistered(t, group) }

func TestRoundTripTypes(t *testing.T) { apitesting.TestRoundTrip(t, group) }
