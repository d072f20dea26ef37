package install

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
	gitopsfuzzer "github.com/gitops-service/gitops-service/pkg/apis/managedgitops/fuzzer"
	"github.com/gitops-service/gitops-service/pkg/apis/managedgitops/v1alpha1"
)

// Fixed seeds keep the test deterministic; several of them widen what one run explores. Each
// seed fuzzes every kind roundtrip.FuzzIters times.
var seeds = []int64{1, 2, 3, 4, 5, 6, 7, 8}

var expectedKinds = []string{
	"GitOpsDeployment", "GitOpsDeploymentList",
	"GitOpsDeploymentManagedEnvironment", "GitOpsDeploymentManagedEnvironmentList",
	"GitOpsDeploymentRepositoryCredential", "GitOpsDeploymentRepositoryCredentialList",
	"GitOpsDeploymentSyncRun", "GitOpsDeploymentSyncRunList",
	"Operation", "OperationList",
}

// TestKindsRegistered guards the round trip below, which only visits registered kinds: a kind
// missing from either version would otherwise go untested rather than fail.
func TestKindsRegistered(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	want := append([]string(nil), expectedKinds...)
	sort.Strings(want)
	for _, gv := range []schema.GroupVersion{managedgitops.SchemeGroupVersion, v1alpha1.SchemeGroupVersion} {
		got := ownKinds(scheme, gv)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: registered kinds %v, want %v", gv, got, want)
		}
	}
	if got := scheme.PrioritizedVersionsForGroup(managedgitops.GroupName); len(got) != 1 || got[0] != v1alpha1.SchemeGroupVersion {
		t.Errorf("prioritized versions %v, want [%s]", got, v1alpha1.SchemeGroupVersion)
	}
}

// TestRoundTripTypes fuzzes every kind of the group and checks that internal -> v1alpha1 ->
// JSON -> v1alpha1 -> internal, and v1alpha1 -> JSON -> v1alpha1, lose nothing. The group is
// not served as protobuf, so protobuf is skipped. roundtrip.RoundTripTestForAPIGroup would do
// the same with a random seed and with the kinds in map order sharing one fuzzer; a fuzzer per
// seed and kind, in sorted order, makes every run fuzz the same values.
func TestRoundTripTypes(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, gitopsfuzzer.Funcs)
	for _, gv := range []schema.GroupVersion{managedgitops.SchemeGroupVersion, v1alpha1.SchemeGroupVersion} {
		for _, kind := range ownKinds(scheme, gv) {
			gvk := gv.WithKind(kind)
			t.Run(gvk.Version+"/"+kind, func(t *testing.T) {
				for _, seed := range seeds {
					f := fuzzer.FuzzerFor(funcs, rand.NewSource(seed), codecs)
					roundtrip.RoundTripSpecificKindWithoutProtobuf(t, gvk, scheme, codecs, f, nil)
					if t.Failed() {
						t.Fatalf("round trip failed with seed %d", seed)
					}
				}
			})
		}
	}
}

// ownKinds lists, sorted, the kinds of gv whose Go types belong to this group, leaving out the
// meta.k8s.io option types that every group version registers; apimachinery tests those.
func ownKinds(scheme *runtime.Scheme, gv schema.GroupVersion) []string {
	pkgs := map[string]bool{
		reflect.TypeOf(managedgitops.GitOpsDeployment{}).PkgPath(): true,
		reflect.TypeOf(v1alpha1.GitOpsDeployment{}).PkgPath():      true,
	}
	var kinds []string
	for kind, typ := range scheme.KnownTypes(gv) {
		if pkgs[typ.PkgPath()] {
			kinds = append(kinds, kind)
		}
	}
	sort.Strings(kinds)
	return kinds
}
