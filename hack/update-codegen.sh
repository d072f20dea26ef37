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

# Protobuf (generated.proto, generated.pb.go and the `protobuf:` struct tags in the types), so
# typed clients may speak application/vnd.kubernetes.protobuf with the server; storage stays JSON.
# code-generator's kube_codegen.sh has no protobuf step, so go-to-protobuf is called directly, as
# Kubernetes' own hack/update-codegen.sh does; protoc's version is pinned (see hack/lib.sh).
ensure_protoc
# go-to-protobuf, the gogo plugin protoc runs, and the goimports that go-to-protobuf runs on
# its output, at this module's versions.
go install \
	k8s.io/code-generator/cmd/go-to-protobuf \
	k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo \
	golang.org/x/tools/cmd/goimports
# go-to-protobuf and protoc locate packages and .proto files by import path under one root
# (a GOPATH, as in Kubernetes' staging/src): a scratch one of symlinks to this module and to
# the modules whose generated.proto ours import.
PROTO_ROOT="$(mktemp -d)"
trap 'rm -rf "${PROTO_ROOT}"' EXIT
mkdir -p "${PROTO_ROOT}/src/${MODULE%/*}" "${PROTO_ROOT}/src/k8s.io" "${PROTO_ROOT}/src/github.com/gogo"
ln -s "${ROOT}" "${PROTO_ROOT}/src/${MODULE}"
ln -s "$(module_dir k8s.io/apimachinery)" "${PROTO_ROOT}/src/k8s.io/apimachinery"
ln -s "$(module_dir k8s.io/api)" "${PROTO_ROOT}/src/k8s.io/api"
GOGO_DIR="$(module_dir github.com/gogo/protobuf)"
ln -s "${GOGO_DIR}" "${PROTO_ROOT}/src/github.com/gogo/protobuf"
# A field's proto name is its JSON name unless its `protobuf:` tag names it; Component's
# build-nudges-ref and build-nudged-by (application-api's JSON names) are no proto identifiers,
# so their tags in component_types.go name them. The '-' packages are only read (their messages are imported), never regenerated.
PATH="${GOBIN}:${PATH}" "${GOBIN}/go-to-protobuf" \
	--go-header-file "${BOILERPLATE}" \
	--output-dir "${PROTO_ROOT}/src" \
	--proto-import "${GOGO_DIR}/protobuf" \
	--apimachinery-packages "-k8s.io/apimachinery/pkg/util/intstr,-k8s.io/apimachinery/pkg/api/resource,-k8s.io/apimachinery/pkg/runtime/schema,-k8s.io/apimachinery/pkg/runtime,-k8s.io/apimachinery/pkg/apis/meta/v1,-k8s.io/api/core/v1,-k8s.io/api/batch/v1" \
	--packages "${MODULE}/pkg/apis/managedgitops/v1alpha1,${MODULE}/pkg/apis/appstudio/v1alpha1"
