//go:build tools

// Package tools pins the control-plane commands that hack/build-kube.sh builds for the local
// stack and the e2e tests. They live in their own module: Kubernetes 1.36 needs k8s.io/* v0.36,
// while the GitOps Service builds against the v0.31 line that Argo CD v2.14 uses.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
