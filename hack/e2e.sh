#!/usr/bin/env bash
# Runs the e2e suite (test/e2e) against a local stack of its own: its state in .local/e2e, its
# ports 1000 above those of `make run` (GITOPS_E2E_PORT_OFFSET changes that, for a second e2e run
# beside the first), so both can run at once. The stack is stopped and its state removed
# afterwards, whatever the outcome. Specs run in a random order (--ginkgo.randomize-all), so
# that no spec leans on what another left behind; Ginkgo prints the seed. GINKGO_FLAGS replaces
# that, for example to repeat an order:
#
#   GINKGO_FLAGS='--ginkgo.randomize-all --ginkgo.seed=42' hack/e2e.sh
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GITOPS_LOCAL_DIR="${ROOT}/.local/e2e"
export GITOPS_LOCAL_PORT_OFFSET="${GITOPS_E2E_PORT_OFFSET:-1000}"
# A second kube-apiserver plays the remote cluster of the ManagedEnvironment tests.
export GITOPS_LOCAL_REMOTE_CLUSTER=1

cleanup() {
	local rc=$?
	"${ROOT}/hack/local-up.sh" stop || true
	if [[ ${rc} -ne 0 && -d "${GITOPS_LOCAL_DIR}/logs" ]]; then
		# The whole logs, with those of processes the suite restarted (*.earlier.log), outlive the
		# stack's folder for the failure's diagnosis.
		local kept
		kept="${GITOPS_E2E_ARTIFACTS:-${TMPDIR:-/tmp}/gitops-e2e-artifacts}/stack-logs-$(date +%Y%m%d-%H%M%S)"
		mkdir -p "${kept}" && cp -r "${GITOPS_LOCAL_DIR}/logs/." "${kept}/" && echo "--- the stack's logs are kept in ${kept}" >&2
		for f in "${GITOPS_LOCAL_DIR}"/logs/{gitops-apiserver,kube-apiserver,agent,argocd-application-controller,argocd-repo-server}.log; do
			[[ -f "${f}" ]] && { echo "--- last lines of ${f}" >&2; tail -n 40 "${f}" >&2; }
		done
	fi
	rm -rf "${GITOPS_LOCAL_DIR}"
	exit "${rc}"
}
trap cleanup EXIT

rm -rf "${GITOPS_LOCAL_DIR}"
"${ROOT}/hack/local-up.sh" up

KUBE_BIN="$("${ROOT}/hack/build-kube.sh")"
export GITOPS_E2E_DIR="${GITOPS_LOCAL_DIR}"
export GITOPS_E2E_KUBECTL="${KUBE_BIN}/kubectl"
cd "${ROOT}"
# shellcheck disable=SC2086 # GINKGO_FLAGS is a list of flags
go test -tags e2e -count=1 -timeout 30m -v ./test/e2e/... -args -ginkgo.v ${GINKGO_FLAGS:---ginkgo.randomize-all}
