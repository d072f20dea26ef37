//go:build tools

// Package tools pins helm at the version Argo CD v2.14 ships in its images
// (hack/tool-versions.sh of argo-cd), for hack/build-argocd.sh. Its own module keeps helm's
// dependency graph (k8s.io/*, containerd, oras) from moving Argo CD's.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
