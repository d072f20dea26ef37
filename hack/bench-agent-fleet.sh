#!/usr/bin/env bash
# make bench-agent-fleet: the fleet benchmark (bench/cmd/agent-bench fleet): N tenant namespaces
# (default 60) with one automated GitOpsDeployment each, placed by the service over two Argo CD
# instances, "main" on the stack's cluster and "engine" on its remote cluster; then instance main
# is drained and the moves of its tenants to engine are timed. Writes the section "A fleet of two
# instances" of docs/agent-scale.md (between <!-- fleet:begin --> and <!-- fleet:end -->), and
# nothing else of that file.
#
# It runs on a stack of its own, so that a `make run` stack (ports of offset 0, state in .local),
# the e2e stacks (offsets 1000 and 3000) and the scale benchmark's (500) are neither measured nor
# disturbed: state in GITOPS_FLEET_DIR (default .local/bench-fleet), ports GITOPS_FLEET_PORT_OFFSET
# (default 6000) above `make run`'s, with the remote cluster and the second instance
# (GITOPS_LOCAL_REMOTE_CLUSTER=1 GITOPS_LOCAL_INSTANCES=2). A stack already running there is reused
# and left running (it must have both instances); otherwise one is started from a clean folder for
# the benchmark and stopped afterwards (hack/local-up.sh stop, by the PIDs it recorded). Ports of
# offsets 2000 apart overlap (this stack's gitops-apiserver, 18443+6000, is the kube-apiserver of
# a stack at offset 8000): with such a stack running, pick another, e.g. GITOPS_FLEET_PORT_OFFSET=6500.
# AGENT_BENCH_FLEET_FLAGS adds to or overrides the defaults, e.g.
#   make bench-agent-fleet AGENT_BENCH_FLEET_FLAGS='-tenants 20 -out /tmp/fleet.md'
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
export GITOPS_LOCAL_DIR="${GITOPS_FLEET_DIR:-${ROOT}/.local/bench-fleet}"
export GITOPS_LOCAL_PORT_OFFSET="${GITOPS_FLEET_PORT_OFFSET:-6000}"
export GITOPS_LOCAL_REMOTE_CLUSTER=1 GITOPS_LOCAL_INSTANCES=2
STATE="${GITOPS_LOCAL_DIR}"

# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"

if stack_running "${STATE}"; then
	echo "bench-agent-fleet: reusing the stack running at ${STATE}" >&2
else
	# A folder left by an earlier run (its logs) is ours to clear: the run wants a fresh stack.
	if [[ -d "${STATE}" && -n "$(ls -A "${STATE}")" && ! -d "${STATE}/pids" ]]; then
		echo "bench-agent-fleet: ${STATE} is not a stack's folder; not clearing it" >&2
		exit 1
	fi
	if [[ -d "${STATE}" ]]; then
		hack/local-up.sh stop >/dev/null 2>&1 || true
		rm -rf "${STATE}"
	fi
	echo "bench-agent-fleet: starting a local stack with two Argo CD instances at ${STATE} (port offset ${GITOPS_LOCAL_PORT_OFFSET})" >&2
	# Set before `up`, so that a start that fails half-way is stopped too.
	trap 'echo "bench-agent-fleet: stopping the stack it started (logs stay in ${STATE}/logs)" >&2; hack/local-up.sh stop' EXIT
	hack/local-up.sh up
fi

# The benchmark programs are a module of their own (bench/go.mod).
(cd bench && go build -o "${ROOT}/bin/agent-bench" ./cmd/agent-bench)
mkdir -p docs
# shellcheck disable=SC2086 # AGENT_BENCH_FLEET_FLAGS is a list of flags
bin/agent-bench fleet -local-dir "${STATE}" -out docs/agent-scale.md \
	-invoked-as "${GITOPS_FLEET_PORT_OFFSET:+GITOPS_FLEET_PORT_OFFSET=${GITOPS_FLEET_PORT_OFFSET} }make bench-agent-fleet${AGENT_BENCH_FLEET_FLAGS:+ AGENT_BENCH_FLEET_FLAGS='${AGENT_BENCH_FLEET_FLAGS}'}" ${AGENT_BENCH_FLEET_FLAGS:-}
