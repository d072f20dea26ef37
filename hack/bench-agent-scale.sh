#!/usr/bin/env bash
# make bench-agent-scale: the scale benchmark of issue 18 (bench/cmd/agent-bench scale): T tenant
# namespaces with one automated GitOpsDeployment each, for T = 10, 100, 1000 (growing from one
# to the next); regenerates docs/agent-scale.md.
#
# It runs on a stack of its own, so that a `make run` stack (ports of offset 0, state in .local)
# and the e2e stacks (offsets 1000 and 3000) are neither measured nor disturbed: state in
# GITOPS_SCALE_DIR (default .local/bench-scale), ports GITOPS_SCALE_PORT_OFFSET (default 500)
# above `make run`'s. A stack already running there is reused and left running; otherwise one is
# started from a clean folder for the benchmark and stopped afterwards (hack/local-up.sh stop,
# by the PIDs it recorded).
# The stack it starts has the remote cluster of hack/local-up.sh (GITOPS_LOCAL_REMOTE_CLUSTER=1:
# a second etcd, kube-apiserver and a token-only kube-controller-manager, some 450 MB RSS and a few
# seconds at start; nothing of the local stack talks to it until an environment does, so the
# tenant figures are the same), which `-environments N` (the ManagedEnvironments step) needs;
# GITOPS_LOCAL_REMOTE_CLUSTER=0 leaves it out. A reused stack must have been started with it for
# -environments.
# AGENT_BENCH_SCALE_FLAGS adds to or overrides the defaults, e.g.
#   make bench-agent-scale AGENT_BENCH_SCALE_FLAGS='-tenants 10,50 -out /tmp/scale.md'
#   make bench-agent-scale AGENT_BENCH_SCALE_FLAGS='-tenants 10 -environments 5 -out /tmp/envscale.md'
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
export GITOPS_LOCAL_DIR="${GITOPS_SCALE_DIR:-${ROOT}/.local/bench-scale}"
export GITOPS_LOCAL_PORT_OFFSET="${GITOPS_SCALE_PORT_OFFSET:-500}"
export GITOPS_LOCAL_REMOTE_CLUSTER="${GITOPS_LOCAL_REMOTE_CLUSTER:-1}"
STATE="${GITOPS_LOCAL_DIR}"

# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"

if stack_running "${STATE}"; then
	echo "bench-agent-scale: reusing the stack running at ${STATE}" >&2
else
	# A folder left by an earlier run (its logs) is ours to clear: the baseline wants a fresh stack.
	if [[ -d "${STATE}" && -n "$(ls -A "${STATE}")" && ! -d "${STATE}/pids" ]]; then
		echo "bench-agent-scale: ${STATE} is not a stack's folder; not clearing it" >&2
		exit 1
	fi
	if [[ -d "${STATE}" ]]; then
		hack/local-up.sh stop >/dev/null 2>&1 || true
		rm -rf "${STATE}"
	fi
	echo "bench-agent-scale: starting a local stack at ${STATE} (port offset ${GITOPS_LOCAL_PORT_OFFSET})" >&2
	hack/local-up.sh up
	trap 'echo "bench-agent-scale: stopping the stack it started (logs stay in ${STATE}/logs)" >&2; hack/local-up.sh stop' EXIT
fi

# The benchmark programs are a module of their own (bench/go.mod).
(cd bench && go build -o "${ROOT}/bin/agent-bench" ./cmd/agent-bench)
mkdir -p docs
# shellcheck disable=SC2086 # AGENT_BENCH_SCALE_FLAGS is a list of flags
bin/agent-bench scale -local-dir "${STATE}" -out docs/agent-scale.md \
	-invoked-as "make bench-agent-scale${AGENT_BENCH_SCALE_FLAGS:+ AGENT_BENCH_SCALE_FLAGS='${AGENT_BENCH_SCALE_FLAGS}'}" ${AGENT_BENCH_SCALE_FLAGS:-}
