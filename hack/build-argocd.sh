#!/usr/bin/env bash
# Builds the real Argo CD multi-call binary (argocd-repo-server, argocd-application-controller,
# and the argocd CLI the repo-server runs for git credentials) from the Go module proxy, and
# takes the Application and AppProject CRDs from the same module version. Everything lands in
# bin/argocd-<version>/ and is built only when missing (about 5 minutes cold on 2 cores).
#
#   hack/build-argocd.sh          prints the directory holding the binaries and crds/
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODDIR="${ROOT}/hack/argocd-tools"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
MODULE=github.com/argoproj/argo-cd/v2
VERSION="$(cd "${MODDIR}" && go list -m -f '{{.Version}}' "${MODULE}")"
OUT="${ROOT}/bin/argocd-${VERSION}"

mkdir -p "${OUT}"
if [[ ! -x "${OUT}/argocd" ]]; then
	echo "building argocd ${VERSION}" >&2
	# Without the version the binary reports v99.99.99+unknown, which hides what runs.
	(cd "${MODDIR}" && go build -trimpath \
		-ldflags "-s -w -X ${MODULE}/common.version=${VERSION#v}" \
		-o "${OUT}/argocd.tmp" "${MODULE}/cmd")
	mv "${OUT}/argocd.tmp" "${OUT}/argocd"
fi
# The multi-call binary picks its role from the name it is called by.
for name in argocd-repo-server argocd-application-controller argocd-git-ask-pass; do
	ln -sfn argocd "${OUT}/${name}"
done
if [[ ! -f "${OUT}/crds/done" ]]; then
	src="$(cd "${MODDIR}" && module_dir "${MODULE}")/manifests/crds"
	mkdir -p "${OUT}/crds"
	cp "${src}/application-crd.yaml" "${src}/appproject-crd.yaml" "${OUT}/crds/"
	chmod u+w "${OUT}"/crds/*.yaml
	touch "${OUT}/crds/done"
fi
echo "${OUT}"
