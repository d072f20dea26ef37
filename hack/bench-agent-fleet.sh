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
#
# "hack/bench-agent-fleet.sh scale" (make bench-fleet-scale, issue 37) is the scale mode
# (agent-bench fleet -scale): the tenants grown in steps (default 100, 300, 1000) with two
# deployments each, then a third added to each, every process's CPU and memory and the watches
# read at each step, then the drain; it writes the section "The fleet at scale" of
# docs/agent-scale.md (<!-- fleet-scale:begin/end -->) with the cost model fitted to the steps
# and its extrapolation to 10,000 tenants. State in GITOPS_FLEET_DIR (default
# .local/bench-fleet-scale); FLEET_SCALE_FLAGS adds to or overrides the defaults, and
# FLEET_SCALE_NOTE is a remark shown first in the report, e.g.
#   make bench-fleet-scale FLEET_SCALE_FLAGS='-tenants 50,100' FLEET_SCALE_NOTE='A small validation run.'
# It takes hours at the defaults and wants the machine to itself. The measurements stay in
# <GITOPS_FLEET_DIR>/fleet-scale-results.json: `agent-bench fleet -scale -render-from FILE -out
# docs/agent-scale.md` renders the report of them again without a run.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MODE="${1:-fleet}"
case "${MODE}" in
fleet) DEFAULT_DIR="${ROOT}/.local/bench-fleet" ;;
scale) DEFAULT_DIR="${ROOT}/.local/bench-fleet-scale" ;;
*)
	echo "usage: $0 [fleet|scale]" >&2
	exit 2
	;;
esac
export GITOPS_LOCAL_DIR="${GITOPS_FLEET_DIR:-${DEFAULT_DIR}}"
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

# The benchmark programs are a module of their own (bench/go.mod); the binary goes into the
# stack's state, not the shared bin/, as checkouts may run their benchmarks side by side.
mkdir -p "${STATE}/bin"
(cd bench && go build -o "${STATE}/bin/agent-bench" ./cmd/agent-bench)
mkdir -p docs
invoked_offset="${GITOPS_FLEET_PORT_OFFSET:+GITOPS_FLEET_PORT_OFFSET=${GITOPS_FLEET_PORT_OFFSET} }"
if [[ "${MODE}" == scale ]]; then
	# Defaults for a machine of 2 cores and 23 GiB: two instances of capacity 1000, so that the
	# drain of the last step (half its tenants onto the other) stays within capacity. The settle
	# is also the window of the steady CPU: longer than Argo CD's reconciliation period (180 s,
	# a refresh of every Application), which a 30 s window caught in one run and not the next.
	# shellcheck disable=SC2086 # FLEET_SCALE_FLAGS is a list of flags
	"${STATE}/bin/agent-bench" fleet -scale -local-dir "${STATE}" -out docs/agent-scale.md \
		-gitops-apiserver "https://127.0.0.1:$((18443 + GITOPS_LOCAL_PORT_OFFSET))" -instances 2 \
		-tenants 100,300,1000 -deployments-per-tenant 2 -extra-deployments 1 -workers 16 -settle 3m30s -timeout 45m \
		-note "${FLEET_SCALE_NOTE:-}" -results "${STATE}/fleet-scale-results.json" \
		-invoked-as "${invoked_offset}make bench-fleet-scale${FLEET_SCALE_FLAGS:+ FLEET_SCALE_FLAGS='${FLEET_SCALE_FLAGS}'}" ${FLEET_SCALE_FLAGS:-}
	exit 0
fi
# shellcheck disable=SC2086 # AGENT_BENCH_FLEET_FLAGS is a list of flags
"${STATE}/bin/agent-bench" fleet -local-dir "${STATE}" -out docs/agent-scale.md \
	-invoked-as "${invoked_offset}make bench-agent-fleet${AGENT_BENCH_FLEET_FLAGS:+ AGENT_BENCH_FLEET_FLAGS='${AGENT_BENCH_FLEET_FLAGS}'}" ${AGENT_BENCH_FLEET_FLAGS:-}
