//go:build tools

// Package tools pins kustomize at the version Argo CD v2.14 ships in its images
// (hack/tool-versions.sh of argo-cd), for hack/build-argocd.sh. Its own module keeps kustomize's
// dependency graph from moving Argo CD's.
package tools

import (
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
