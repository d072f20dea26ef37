#!/usr/bin/env bash
# Builds a release of kubectl-gitops as krew installs it, into bin/release/<VERSION>/:
#
#   kubectl-gitops_<os>_<arch>.tar.gz   per platform: the binary (kubectl-gitops, .exe on
#                                       Windows) and README.md; reproducible (sorted entries,
#                                       no times or owners, gzip -n, -trimpath, no build ID)
#   sha256sums.txt                      their checksums
#   gitops.yaml                         artifacts/krew/gitops.yaml rendered as krew-release-bot
#                                       renders it at a release: the tag for {{ .TagName }}, each
#                                       archive's URL and sha256 for addURIAndSha
#
# A release uploads the archives to the GitHub release of the tag, then opens the pull request
# of gitops.yaml against krew-index (krew-release-bot does both from the template; this script
# makes what they need and checks it). `make plugin-release` runs it.
#
#   VERSION    the tag (default: the image tag of artifacts/deploy)
#   PLATFORMS  the os/arch pairs to build (default: every platform of the krew manifest)
#   GITOPS_PLUGIN_VERIFY=1
#              (`make verify-plugin`, which `make test` runs) builds the host's platform only,
#              renders the manifest with the other platforms' checksums dummies, installs the
#              archive with krew (built into bin/krew-<version>) into a throwaway KREW_ROOT, and
#              runs the installed plugin through kubectl as a user would
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
cd "${ROOT}"
ensure_command sha256sum coreutils

GO="${GO:-go}"
KREW_VERSION=v0.4.3
TEMPLATE=artifacts/krew/gitops.yaml
VERSION="${VERSION:-$(sed -n 's/^[[:space:]]*newTag:[[:space:]]*//p' artifacts/deploy/kustomization.yaml | head -n 1)}"
[[ -n "${VERSION}" ]] || { echo "no VERSION given and no newTag in artifacts/deploy/kustomization.yaml" >&2; exit 1; }
verify="${GITOPS_PLUGIN_VERIFY:-}"

# Every platform the manifest lists, as os/arch, in its order.
mapfile -t listed < <(sed -n 's/.*kubectl-gitops_\([a-z0-9]*\)_\([a-z0-9]*\)\.tar\.gz.*/\1\/\2/p' "${TEMPLATE}")
[[ ${#listed[@]} -gt 0 ]] || { echo "${TEMPLATE} lists no kubectl-gitops_<os>_<arch>.tar.gz archive" >&2; exit 1; }
if [[ -n "${verify}" ]]; then
	PLATFORMS="$("${GO}" env GOOS)/$("${GO}" env GOARCH)"
	OUT="$(mktemp -d "${TMPDIR:-/tmp}/gitops-plugin.XXXXXX")"
	trap 'rm -rf "${OUT}"' EXIT
else
	PLATFORMS="${PLATFORMS:-${listed[*]}}"
	OUT="${ROOT}/bin/release/${VERSION}"
	rm -rf "${OUT}"
fi
mkdir -p "${OUT}"

for platform in ${PLATFORMS}; do
	os="${platform%/*}" arch="${platform#*/}"
	[[ " ${listed[*]} " == *" ${platform} "* ]] ||
		{ echo "platform ${platform} is not in ${TEMPLATE} (it lists ${listed[*]})" >&2; exit 1; }
	bin=kubectl-gitops
	[[ "${os}" == windows ]] && bin+=.exe
	stage="$(mktemp -d "${TMPDIR:-/tmp}/gitops-plugin-stage.XXXXXX")"
	echo "building ${bin} ${VERSION} for ${os}/${arch}" >&2
	CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" GOFLAGS= \
		"${GO}" build -trimpath -ldflags="-s -w -buildid=" -o "${stage}/${bin}" ./cmd/kubectl-gitops
	cp README.md "${stage}/README.md"
	tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "${stage}" -cf - "${bin}" README.md |
		gzip -n -9 >"${OUT}/kubectl-gitops_${os}_${arch}.tar.gz"
	rm -rf "${stage}"
done
(cd "${OUT}" && sha256sum -- *.tar.gz >sha256sums.txt)

# The manifest: {{ .TagName }} everywhere, then each addURIAndSha line as the URI and sha256
# lines krew-release-bot writes in its place, at the line's own indentation. In verify mode the
# platforms not built get a dummy checksum (not all digits, which YAML would read as a number): krew checks only the archive it installs.
manifest="$(sed "s/{{ \.TagName }}/${VERSION}/g" "${TEMPLATE}")"
for platform in "${listed[@]}"; do
	archive="kubectl-gitops_${platform%/*}_${platform#*/}.tar.gz"
	if [[ -f "${OUT}/${archive}" ]]; then
		sum="$(sha256sum "${OUT}/${archive}" | cut -d' ' -f1)"
	elif [[ -n "${verify}" ]]; then
		sum="$(printf 'f%.0s' {1..64})"
	else
		continue
	fi
	manifest="$(sed -E "s#^([[:space:]]*)\{\{ addURIAndSha \"([^\"]*/${archive})\" \.TagName \}\}\$#\1uri: \2\n\1sha256: ${sum}#" <<<"${manifest}")"
done
if grep -q '{{' <<<"${manifest}"; then
	echo "the krew manifest still has template actions after rendering (platforms not built: build them all for a release):" >&2
	grep -n '{{' <<<"${manifest}" >&2
	exit 1
fi
printf '%s\n' "${manifest}" >"${OUT}/gitops.yaml"

if [[ -z "${verify}" ]]; then
	echo "release ${VERSION} of kubectl-gitops in ${OUT}:" >&2
	cat "${OUT}/sha256sums.txt" >&2
	exit 0
fi

# Install as a user would, into a KREW_ROOT of our own with no network: its default index is a
# local Git repository holding the rendered manifest where krew-index would (plugins/gitops.yaml,
# so krew info reads it as users will), and the archive comes from the file, not the release URL.
krew="${ROOT}/bin/krew-${KREW_VERSION}/krew"
if [[ ! -x "${krew}" ]]; then
	echo "building krew ${KREW_VERSION} into bin/krew-${KREW_VERSION}" >&2
	GOBIN="${ROOT}/bin/krew-${KREW_VERSION}" CGO_ENABLED=0 GOFLAGS= "${GO}" install "sigs.k8s.io/krew/cmd/krew@${KREW_VERSION}"
fi
# The pinned kubectl (hack/build-kube.sh prints its folder, building it first when needed).
kubectl="$("${ROOT}/hack/build-kube.sh")/kubectl"
export KREW_ROOT="${OUT}/krew"
index="${KREW_ROOT}/index/default"
mkdir -p "${index}/plugins"
cp "${OUT}/gitops.yaml" "${index}/plugins/gitops.yaml"
git -C "${index}" init -q
git -C "${index}" add plugins
git -C "${index}" -c user.name=release-plugin -c user.email=release-plugin@localhost commit -q -m "gitops ${VERSION}"
archive="kubectl-gitops_${PLATFORMS%/*}_${PLATFORMS#*/}.tar.gz"
sum="$(sha256sum "${OUT}/${archive}" | cut -d' ' -f1)"
info="$("${krew}" info gitops 2>"${OUT}/krew.log")" || { echo "krew info gitops failed:" >&2; cat "${OUT}/krew.log" >&2; exit 1; }
grep -qx "VERSION: ${VERSION}" <<<"${info}" && grep -qx "SHA256: ${sum}" <<<"${info}" && grep -q "/${VERSION}/${archive}\$" <<<"${info}" ||
	{ echo "krew info gitops does not show version ${VERSION} and ${archive} with its sha256 ${sum}:" >&2; echo "${info}" >&2; exit 1; }
"${krew}" install --manifest="${OUT}/gitops.yaml" --archive="${OUT}/${archive}" </dev/null >"${OUT}/krew.log" 2>&1 ||
	{ echo "krew install --manifest --archive failed:" >&2; cat "${OUT}/krew.log" >&2; exit 1; }
installed="$("${krew}" list 2>>"${OUT}/krew.log")" || { echo "krew list failed:" >&2; cat "${OUT}/krew.log" >&2; exit 1; }
grep -q 'gitops$' <<<"${installed}" || { echo "krew list does not show gitops after the install: ${installed}" >&2; exit 1; }
help="$("${KREW_ROOT}/bin/kubectl-gitops" --help)"
grep -qE '^  status +Show what runs where' <<<"${help}" || { echo "the installed plugin's --help does not show its commands:" >&2; echo "${help}" >&2; exit 1; }
# kubectl finds plugins on the PATH, krew's bin first.
via_kubectl="$(PATH="${KREW_ROOT}/bin:${PATH}" "${kubectl}" gitops --help)"
[[ "${via_kubectl}" == "${help}" ]] || { echo "kubectl gitops --help differs from the plugin's own --help" >&2; exit 1; }
listed_by_kubectl="$(PATH="${KREW_ROOT}/bin:${PATH}" "${kubectl}" plugin list 2>/dev/null || true)"
grep -q "${KREW_ROOT}/bin/kubectl-gitops" <<<"${listed_by_kubectl}" ||
	{ echo "kubectl plugin list does not show the installed plugin: ${listed_by_kubectl}" >&2; exit 1; }
"${krew}" uninstall gitops >>"${OUT}/krew.log" 2>&1 || { echo "krew uninstall gitops failed:" >&2; cat "${OUT}/krew.log" >&2; exit 1; }
[[ ! -e "${KREW_ROOT}/bin/kubectl-gitops" ]] || { echo "krew uninstall left ${KREW_ROOT}/bin/kubectl-gitops" >&2; exit 1; }
echo "kubectl-gitops ${VERSION} for ${PLATFORMS}: krew installed it from the rendered manifest, kubectl runs it, krew uninstalled it" >&2
