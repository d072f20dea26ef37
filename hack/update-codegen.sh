#!/usr/bin/env bash
# Regenerates every generated file: deepcopy, defaulters and conversions next to the API types,
# and the OpenAPI definitions, clientset, listers, informers and apply configurations under
# pkg/generated. This is the only way generated code may change.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
MODULE="github.com/gitops-service/gitops-service"

CODEGEN_VERSION="$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/code-generator)"
CODEGEN_PKG="$(module_dir k8s.io/code-generator)"
# The generators are built once per code-generator version and kept under bin/.
export GOBIN="${ROOT}/bin/codegen-${CODEGEN_VERSION}"
# kube_codegen.sh builds the generators from inside code-generator's own module, whose
# golang.org/x/tools is too old for the Go toolchain here; a workspace holding only this
# module makes them build with this module's (newer, compatible) dependency versions.
export GOWORK="${ROOT}/hack/codegen.work"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/pkg/apis"

# API rule violations (JSON names that differ from Go names, kept for wire compatibility
# with the original service) are recorded in api/api-rules; new ones fail generation.
REPORT_ARGS=(--report-filename "${ROOT}/api/api-rules/violation_exceptions.list")
if [[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]]; then
	REPORT_ARGS+=(--update-report)
fi

kube::codegen::gen_openapi \
	--output-dir "${ROOT}/pkg/generated/openapi" \
	--output-pkg "${MODULE}/pkg/generated/openapi" \
	--extra-pkgs "k8s.io/api/core/v1" \
	--extra-pkgs "k8s.io/api/batch/v1" \
	--extra-pkgs "k8s.io/apimachinery/pkg/api/resource" \
	--extra-pkgs "k8s.io/apimachinery/pkg/util/intstr" \
	"${REPORT_ARGS[@]}" \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/pkg/apis"

kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--applyconfig-externals "k8s.io/api/core/v1.ResourceRequirements:k8s.io/client-go/applyconfigurations/core/v1,k8s.io/api/core/v1.ResourceClaim:k8s.io/client-go/applyconfigurations/core/v1,k8s.io/api/batch/v1.JobTemplateSpec:k8s.io/client-go/applyconfigurations/batch/v1" \
	--output-dir "${ROOT}/pkg/generated" \
	--output-pkg "${MODULE}/pkg/generated" \
	--boilerplate "${BOILERPLATE}" \
	"${ROOT}/pkg/apis"
