package apitesting

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
)

// Fixed seeds keep round trips deterministic; several of them widen what one run explores.
// Each seed fuzzes every kind roundtrip.FuzzIters times.
var seeds = []int64{1, 2, 3, 4, 5, 6, 7, 8}

// Group describes one API group to the round-trip tests.
type Group struct {
	Install func(*runtime.Scheme)
	// Internal and Versioned are the group's internal and served versions.
	Internal, Versioned schema.GroupVersion
	// Kinds are every kind (lists included) the group must register in both versions.
	Kinds []string
	// Sample is one versioned and one internal object, to tell the group's own types from
	// the meta.k8s.io option types that every group version registers.
	Sample      [2]runtime.Object
	FuzzerFuncs fuzzer.FuzzerFuncs
}

// TestKindsRegistered guards the round trip, which only visits registered kinds: a kind
// missing from either version would otherwise go untested rather than fail.
func TestKindsRegistered(t *testing.T, g Group) {
	scheme := runtime.NewScheme()
	g.Install(scheme)
	want := append([]string(nil), g.Kinds...)
	sort.Strings(want)
	for _, gv := range []schema.GroupVersion{g.Internal, g.Versioned} {
		if got := ownKinds(scheme, gv, g.Sample); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: registered kinds %v, want %v", gv, got, want)
		}
	}
	if got := scheme.PrioritizedVersionsForGroup(g.Versioned.Group); len(got) != 1 || got[0] != g.Versioned {
		t.Errorf("prioritized versions %v, want [%s]", got, g.Versioned)
	}
}

// TestRoundTrip fuzzes every kind of the group and checks that internal -> versioned -> JSON
// or protobuf -> versioned -> internal, and versioned -> JSON or protobuf -> versioned, lose
// nothing (the groups are served in both). roundtrip.RoundTripTestForAPIGroup would do
// the same with a random seed and with the kinds in map order sharing one fuzzer; a fuzzer per
// seed and kind, in sorted order, makes every run fuzz the same values.
func TestRoundTrip(t *testing.T, g Group) {
	scheme := runtime.NewScheme()
	g.Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, g.FuzzerFuncs)
	for _, gv := range []schema.GroupVersion{g.Internal, g.Versioned} {
		for _, kind := range ownKinds(scheme, gv, g.Sample) {
			gvk := gv.WithKind(kind)
			t.Run(gvk.Version+"/"+kind, func(t *testing.T) {
				for _, seed := range seeds {
					f := fuzzer.FuzzerFor(funcs, rand.NewSource(seed), codecs)
					roundtrip.RoundTripSpecificKind(t, gvk, scheme, codecs, f, nil)
					if t.Failed() {
						t.Fatalf("round trip failed with seed %d", seed)
					}
				}
			})
		}
	}
}

// ownKinds lists, sorted, the kinds of gv whose Go types are in the packages of sample.
func ownKinds(scheme *runtime.Scheme, gv schema.GroupVersion, sample [2]runtime.Object) []string {
	pkgs := map[string]bool{}
	for _, obj := range sample {
		pkgs[reflect.TypeOf(obj).Elem().PkgPath()] = true
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
