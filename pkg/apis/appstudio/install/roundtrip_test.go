package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gitops-service/gitops-service/pkg/apis/apitesting"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/fuzzer"
	"github.com/gitops-service/gitops-service/pkg/apis/appstudio/v1alpha1"
)

var group = apitesting.Group{
	Install:   Install,
	Internal:  appstudio.SchemeGroupVersion,
	Versioned: v1alpha1.SchemeGroupVersion,
	Kinds: []string{
		"Application", "ApplicationList",
		"Component", "ComponentList",
		"ComponentDetectionQuery", "ComponentDetectionQueryList",
		"DeploymentTarget", "DeploymentTargetList",
		"DeploymentTargetClaim", "DeploymentTargetClaimList",
		"DeploymentTargetClass", "DeploymentTargetClassList",
		"Environment", "EnvironmentList",
		"EnvironmentHold", "EnvironmentHoldList",
		"PromotionApproval", "PromotionApprovalList",
		"PromotionGate", "PromotionGateList",
		"PromotionRun", "PromotionRunList",
		"Snapshot", "SnapshotList",
		"SnapshotEnvironmentBinding", "SnapshotEnvironmentBindingList",
	},
	Sample:      [2]runtime.Object{&appstudio.Environment{}, &v1alpha1.Environment{}},
	FuzzerFuncs: fuzzer.Funcs,
}

func TestKindsRegistered(t *testing.T) { apitesting.TestKindsRegistered(t, group) }

func TestRoundTripTypes(t *testing.T) { apitesting.TestRoundTrip(t, group) }
