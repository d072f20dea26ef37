#!/usr/bin/env bash
# Builds the images' contents without a container registry or Docker: the two binaries
# exactly as build/Dockerfile's builder stage builds them (same go build flags, CGO_ENABLED=0,
# GOOS=linux), into bin/images/<VERSION>/, and prints their sha256 sums. `make images` runs it,
# and `make test` runs that.
#
# GITOPS_IMAGES_VERIFY=1 (`make images-verify`) shows the build is reproducible: it builds a
# second time, from an empty build cache into another folder, and fails unless both builds are
# byte-identical. That compiles all of Kubernetes' libraries again (about 7 minutes on 2 CPUs),
# so `make test` does not; a second build with the warm cache would only copy the first.
#
#   VERSION   the folder under bin/images (default: the image tag of artifacts/deploy)
#
# -trimpath and CGO_ENABLED=0 give cache entries of their own: the first run on a machine
# compiles everything once. The binaries equal those of an image built with
# --build-arg GO_VERSION=<the Go printed below>; build/Dockerfile defaults to go.mod's version.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
cd "${ROOT}"
ensure_command sha256sum coreutils

GO="${GO:-go}"
BINARIES=(gitops-apiserver agent)
VERSION="${VERSION:-$(sed -n 's/^[[:space:]]*newTag:[[:space:]]*//p' artifacts/deploy/kustomization.yaml | head -n 1)}"
[[ -n "${VERSION}" ]] || { echo "no VERSION given and no newTag in artifacts/deploy/kustomization.yaml" >&2; exit 1; }
OUT="${ROOT}/bin/images/${VERSION}"

# build DIR [ENV...] builds every binary into DIR the way build/Dockerfile does. -buildvcs=false
# because the image's build context has no .git (.dockerignore).
build() {
	local dir="$1"
	shift
	local bin
	for bin in "${BINARIES[@]}"; do
		env "$@" CGO_ENABLED=0 GOOS=linux GOFLAGS= \
			"${GO}" build -buildvcs=false -trimpath -ldflags='-s -w -buildid=' -o "${dir}/${bin}" "./cmd/${bin}"
	done
}

go_version="$("${GO}" env GOVERSION)"
mod_version="go$(sed -n 's/^go //p' go.mod)"
echo "building ${BINARIES[*]} for linux/$("${GO}" env GOARCH) with ${go_version} (go.mod: ${mod_version})" >&2
if [[ "${go_version}" != "${mod_version}" ]]; then
	echo "  the same bytes as: docker buildx build -f build/Dockerfile --build-arg GO_VERSION=${go_version#go} --build-arg BINARY=<binary> ." >&2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
build "${tmp}/1"
if [[ -n "${GITOPS_IMAGES_VERIFY:-}" ]]; then
	echo "building again from an empty build cache" >&2
	build "${tmp}/2" GOCACHE="${tmp}/gocache"
	failed=0
	for bin in "${BINARIES[@]}"; do
		sum1="$(sha256sum <"${tmp}/1/${bin}" | cut -d' ' -f1)"
		sum2="$(sha256sum <"${tmp}/2/${bin}" | cut -d' ' -f1)"
		if [[ "${sum1}" != "${sum2}" ]]; then
			echo "${bin} is not reproducible: two builds gave ${sum1} and ${sum2}" >&2
			failed=1
		fi
	done
	[[ ${failed} -eq 0 ]] || exit 1
	echo "both builds identical" >&2
fi

mkdir -p "${OUT}"
for bin in "${BINARIES[@]}"; do
	install -m 0755 "${tmp}/1/${bin}" "${OUT}/${bin}"
done
(cd "${OUT}" && sha256sum "${BINARIES[@]}")
echo "binaries in ${OUT#"${ROOT}/"}" >&2
