#!/usr/bin/env bash
# Makes sure every host tool that the scripts and tests call is installed: with apt when we are
# root, otherwise it stops with one line naming the package to install. `make test` runs it
# first; hack/local-up.sh checks the same tools itself, so `make run` needs nothing else.
#
#   git, ssh (openssh-client)  the agent's ls-remote and the e2e Git servers
#   curl, openssl              the local stack's health checks and certificates
#   PostgreSQL 15              the unit tests' throwaway server and the local stack's database
#   redis-server               Argo CD's cache in the local stack
#   promtool (prometheus)      checks and unit-tests the Prometheus rules (hack/verify-monitoring.sh)
#   protoc (protobuf-compiler) hack/update-codegen.sh: the API types' protobuf (pinned, hack/lib.sh)
#   /usr/bin/chromium          the e2e suite drives `kubectl gitops dashboard` in it, headless
#
# Not host tools: etcd, kube-apiserver, kubectl, Argo CD and the kustomize and helm its
# repo-server runs are built from the Go module proxy into bin/ (hack/build-kube.sh,
# hack/build-argocd.sh), at the versions pinned in hack/kube-tools and hack/argocd-tools.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"

ensure_command git git
ensure_command ssh openssh-client
ensure_command curl curl
ensure_command openssl openssl
ensure_command redis-server redis-server
ensure_postgres "${PG_BIN:-/usr/lib/postgresql/15/bin}"
ensure_promtool
ensure_protoc

# Debian's chromium, at the path the e2e suite starts it from.
if [[ ! -x /usr/bin/chromium ]]; then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		apt_install chromium || true
	fi
	if [[ ! -x /usr/bin/chromium ]]; then
		echo "/usr/bin/chromium is missing: install the Debian package chromium (apt-get install chromium)" >&2
		exit 1
	fi
fi
