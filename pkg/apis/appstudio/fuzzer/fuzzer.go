// Package fuzzer holds the fuzzer functions for the appstudio.redhat.com API group. They only
// constrain values that the wire format cannot carry or that decoding legitimately changes, so
// that the round-trip test can tell those apart from real losses.
package fuzzer

import (
	"encoding/json"
	"fmt"

	fuzz "github.com/google/gofuzz"
	corev1 "k8s.io/api/core/v1"
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
		// A PromotionGate's verification Job is a batch/v1 JobTemplateSpec, whose pod template
		// v1alpha1 defaults as core/v1 does (zz_generated.defaults.go, from the +default markers
		// of k8s.io/api): the fields it sets when empty are generated already set.
		func(g *corev1.GRPCAction, c fuzz.Continue) {
			c.FuzzNoCustom(g)
			if g.Service == nil {
				g.Service = new(string)
			}
		},
		func(p *corev1.ContainerPort, c fuzz.Continue) {
			c.FuzzNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		},
		func(v *corev1.ISCSIVolumeSource, c fuzz.Continue) {
			c.FuzzNoCustom(v)
			if v.ISCSIInterface == "" {
				v.ISCSIInterface = "default"
			}
		},
		func(v *corev1.RBDVolumeSource, c fuzz.Continue) {
			c.FuzzNoCustom(v)
			orDefault(&v.RBDPool, "rbd")
			orDefault(&v.RadosUser, "admin")
			orDefault(&v.Keyring, "/etc/ceph/keyring")
		},
		func(v *corev1.ScaleIOVolumeSource, c fuzz.Continue) {
			c.FuzzNoCustom(v)
			orDefault(&v.StorageMode, "ThinProvisioned")
			orDefault(&v.FSType, "xfs")
		},
		func(v *corev1.AzureDiskVolumeSource, c fuzz.Continue) {
			c.FuzzNoCustom(v)
			if v.CachingMode == nil {
				mode := corev1.AzureDataDiskCachingReadWrite
				v.CachingMode = &mode
			}
			if v.FSType == nil {
				fsType := "ext4"
				v.FSType = &fsType
			}
			if v.ReadOnly == nil {
				v.ReadOnly = new(bool)
			}
			if v.Kind == nil {
				kind := corev1.AzureSharedBlobDisk
				v.Kind = &kind
			}
		},
	}
}

// orDefault sets an empty string to its default.
func orDefault(s *string, def string) {
	if *s == "" {
		*s = def
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
