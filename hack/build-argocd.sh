#!/usr/bin/env bash
# Builds the real Argo CD multi-call binary (argocd-repo-server, argocd-application-controller,
# and the argocd CLI the repo-server runs for git credentials) from the Go module proxy, and
# takes the Application and AppProject CRDs from the same module version. Beside it, the
# kustomize and helm the repo-server runs to render Kustomize and Helm sources, at the versions
# Argo CD's own images ship (its hack/tool-versions.sh), each in its own module under
# hack/argocd-tools/ so that their dependency graphs do not move Argo CD's. Everything lands in
# bin/argocd-<version>/, which local-up puts first on the repo-server's PATH, and is built only
# when missing (about 5 minutes cold on 2 cores for Argo CD, as many again for kustomize and helm).
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

# build_tool NAME MODDIR MODULE PKG LDFLAGS builds PKG of MODULE, at the version MODDIR's go.mod
# pins, into NAME-<version> and points NAME at it, so that a new pin builds anew.
build_tool() {
	local name="$1" moddir="$2" module="$3" pkg="$4" ldflags="$5" version
	version="$(cd "${moddir}" && go list -m -f '{{.Version}}' "${module}")"
	if [[ ! -x "${OUT}/${name}-${version}" ]]; then
		echo "building ${name} ${version}" >&2
		(cd "${moddir}" && go build -trimpath -ldflags "-s -w ${ldflags//@VERSION@/${version}}" \
			-o "${OUT}/${name}-${version}.tmp" "${pkg}")
		mv "${OUT}/${name}-${version}.tmp" "${OUT}/${name}-${version}"
	fi
	ln -sfn "${name}-${version}" "${OUT}/${name}"
}

# Set as kustomize's release does; without it `kustomize version` prints (devel), and Argo CD
# reads that version to choose some of kustomize's flags.
build_tool kustomize "${MODDIR}/kustomize" sigs.k8s.io/kustomize/kustomize/v5 sigs.k8s.io/kustomize/kustomize/v5 \
	"-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/@VERSION@"
# As helm's Makefile sets them for a release: the version (else "v3.16"), and the Kubernetes
# version `helm template` assumes without --kube-version, from the client-go it is built with.
HELM_K8S_MINOR="$(cd "${MODDIR}/helm" && go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)"
build_tool helm "${MODDIR}/helm" helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm \
	"-X helm.sh/helm/v3/internal/version.version=@VERSION@ -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR}
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
echo "${OUT}"
