//go:build tools

// Package tools pins the Argo CD v2.14 multi-call binary (repo-server, application-controller,
// CLI) that hack/build-argocd.sh builds for the local stack and the e2e tests. It lives in its
// own module because it needs argo-cd's own replace block (k8s.io/* at v0.31.0, the telegram
// fork), which the main module must not inherit.
package tools

import (
	_ "github.com/argoproj/argo-cd/v2/cmd"
)
