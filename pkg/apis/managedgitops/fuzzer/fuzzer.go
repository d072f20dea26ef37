// Package fuzzer holds the fuzzer functions for the managed-gitops.redhat.com API group.
package fuzzer

import (
	fuzz "github.com/google/gofuzz"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	gitops "github.com/gitops-service/gitops-service/pkg/apis/managedgitops"
)

// Funcs returns the fuzzer functions for the managed-gitops API group. Every field of this
// group survives v1alpha1 and JSON with the generic fuzzers of k8s.io/apimachinery (which
// already keep TypeMeta empty and times at second precision), but for v1alpha1's defaults,
// which rewrite an empty value. A function belongs here only for such a default or a value
// that no client could send; anything else that fails to round-trip is a bug to fix.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		// An empty releaseOn becomes Manual on the way through v1alpha1: defaulting, not a loss.
		func(s *gitops.GitOpsDeploymentHoldSpec, c fuzz.Continue) {
			c.FuzzNoCustom(s)
			if s.ReleaseOn == "" {
				policies := []gitops.HoldReleasePolicy{gitops.HoldReleaseManual, gitops.HoldReleaseNewCommit}
				s.ReleaseOn = policies[c.Intn(len(policies))]
			}
		},
	}
}
