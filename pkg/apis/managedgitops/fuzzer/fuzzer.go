// Package fuzzer holds the fuzzer functions for the managed-gitops.redhat.com API group.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
)

// Funcs returns the fuzzer functions for the managed-gitops API group. It is empty on purpose:
// every field of this group survives v1alpha1 and JSON with the generic fuzzers of
// k8s.io/apimachinery (which already keep TypeMeta empty and times at second precision), and
// v1alpha1 has no defaults that would rewrite a fuzzed value. A function belongs here only for a
// value that no client could send; anything else that fails to round-trip is a bug to fix.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{}
}
