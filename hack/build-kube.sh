#!/usr/bin/env bash
# Builds the control plane of the local stack and the e2e tests from source through the Go
# module proxy: etcd, kube-apiserver, kube-controller-manager and kubectl. They are kept under
# bin/kube-<version>/ and built only when missing (about 12 minutes cold on 2 cores).
#
#   hack/build-kube.sh          prints the directory holding the binaries
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODDIR="${ROOT}/hack/kube-tools"
KUBE_VERSION="$(cd "${MODDIR}" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ETCD_VERSION="$(cd "${MODDIR}" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
OUT="${ROOT}/bin/kube-${KUBE_VERSION}-etcd-${ETCD_VERSION}"

build() {
	local name="$1" pkg="$2" ldflags="${3:-}"
	if [[ -x "${OUT}/${name}" ]]; then
		return
	fi
	echo "building ${name} (${pkg})" >&2
	(cd "${MODDIR}" && go build -trimpath -ldflags "-s -w ${ldflags}" -o "${OUT}/${name}.tmp" "${pkg}")
	mv "${OUT}/${name}.tmp" "${OUT}/${name}"
}

mkdir -p "${OUT}"
# Without a version kubectl version and discovery clients see v0.0.0-master and refuse skew checks.
VERSION_LDFLAGS="-X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "${KUBE_VERSION}" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
build etcd ./etcd
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${VERSION_LDFLAGS}"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${VERSION_LDFLAGS}"
build kubectl k8s.io/kubernetes/cmd/kubectl "${VERSION_LDFLAGS} -X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$(echo "${KUBE_VERSION}" | cut -d. -f2)"
echo "${OUT}"
