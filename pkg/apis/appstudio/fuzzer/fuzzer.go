// Package fuzzer holds the fuzzer functions for the appstudio.redhat.com API group. They only
// constrain values that the wire format cannot carry or that decoding legitimately changes, so
// that the round-trip test can tell those apart from real losses.
package fuzzer

import (
	"encoding/json"
	"fmt"

	fuzz "github.com/google/gofuzz"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
)

// Funcs returns the fuzzer functions for the appstudio API group.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		// Snapshot spec.artifacts.unstableFields is free-form JSON. Random bytes are not JSON,
		// and a RawExtension without bytes encodes as null, which decodes to no RawExtension
		// at all; neither is a value a client can send, so generate compact JSON documents
		// (the encoder compacts whatever it is given, so whitespace would not survive either).
		func(r *runtime.RawExtension, c fuzz.Continue) {
			raw, err := json.Marshal(randomJSONValue(c, 3, true))
			if err != nil {
				panic(fmt.Sprintf("marshalling fuzzed JSON: %v", err))
			}
			r.Raw = raw
			r.Object = nil
		},
		// Decoding defaults an empty reclaimPolicy to Delete, so an empty one cannot survive a
		// round trip through v1alpha1; that is defaulting, not a loss.
		func(s *appstudio.DeploymentTargetClassSpec, c fuzz.Continue) {
			c.FuzzNoCustom(s)
			if s.ReclaimPolicy == "" {
				policies := []appstudio.ReclaimPolicy{appstudio.ReclaimPolicyDelete, appstudio.ReclaimPolicyRetain}
				s.ReclaimPolicy = policies[c.Intn(len(policies))]
			}
		},
	}
}

// randomJSONValue returns a value that encoding/json marshals into a JSON document. The top
// level is never null, for the reason given above.
func randomJSONValue(c fuzz.Continue, depth int, top bool) interface{} {
	kinds := 6
	if depth <= 0 {
		// Scalars only, to bound the size.
		kinds = 4
	}
	k := c.Intn(kinds)
	if top && k == 0 {
		k = 5
	}
	switch k {
	case 0:
		return nil
	case 1:
		return c.RandString()
	case 2:
		// Integers: the bytes are kept verbatim, and a float's text is not what this is about.
		return c.Int63()
	case 3:
		return c.RandBool()
	case 4:
		list := make([]interface{}, c.Intn(4))
		for i := range list {
			list[i] = randomJSONValue(c, depth-1, false)
		}
		return list
	default:
		n := c.Intn(4)
		obj := make(map[string]interface{}, n)
		for i := 0; i < n; i++ {
			obj[c.RandString()] = randomJSONValue(c, depth-1, false)
		}
		return obj
	}
}
