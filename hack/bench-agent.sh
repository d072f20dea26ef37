#!/usr/bin/env bash
# make bench-agent: measure the agent's latency in both directions (bench/cmd/agent-bench) against
# the local stack and regenerate docs/agent-latency.md.
#
# A stack already running at GITOPS_LOCAL_DIR (default .local, started by `make up` or `make run`)
# is reused and left running; otherwise one is started for the benchmark and stopped afterwards.
# AGENT_BENCH_FLAGS adds to or overrides the defaults (200 deployments over 10 namespaces).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
STATE="${GITOPS_LOCAL_DIR:-${ROOT}/.local}"

# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"

if stack_running "${STATE}"; then
	echo "bench-agent: reusing the stack running at ${STATE}" >&2
else
	echo "bench-agent: starting a local stack at ${STATE}" >&2
	hack/local-up.sh up
	trap 'echo "bench-agent: stopping the stack it started" >&2; hack/local-up.sh stop' EXIT
fi

# The benchmark programs are a module of their own (bench/go.mod).
(cd bench && go build -o "${ROOT}/bin/agent-bench" ./cmd/agent-bench)
mkdir -p docs
# shellcheck disable=SC2086 # AGENT_BENCH_FLAGS is a list of flags
bin/agent-bench -kubeconfig "${STATE}/kubeconfig" -out docs/agent-latency.md \
	-invoked-as "make bench-agent${AGENT_BENCH_FLAGS:+ AGENT_BENCH_FLAGS='${AGENT_BENCH_FLAGS}'}" ${AGENT_BENCH_FLAGS:-}
