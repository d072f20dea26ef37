#!/usr/bin/env bash
# make bench: run bench/cmd/gitops-bench against the local stack and regenerate docs/performance.md,
# docs/performance.png (and the raw docs/performance.json).
#
# A stack already running at GITOPS_LOCAL_DIR (default .local, started by `make up` or `make run`)
# is reused and left running; otherwise one is started for the benchmark and stopped afterwards.
# BENCH_FLAGS adds to or overrides the defaults, for example:
#
#   make bench BENCH_FLAGS='-n 1000,10000'          # also N=10000
#   make bench BENCH_FLAGS='-n 100000 -c 32 -w 100' # the large size, opt-in
#
# Where a get's time goes (issue 37): instead of the plan, gets only, each process's CPU time per
# get and CPU profiles of kube-apiserver and gitops-apiserver (in .local/profile; the report is
# left alone):
#
#   make bench BENCH_FLAGS='-profile-gets .local/profile -profile-for 60s -rounds 6 -targets A,B,C'
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
STATE="${GITOPS_LOCAL_DIR:-${ROOT}/.local}"
OFFSET="${GITOPS_LOCAL_PORT_OFFSET:-0}"

alive() {
	local pidfile="${STATE}/pids/$1.pid"
	[[ -f "${pidfile}" ]] && kill -0 "$(cat "${pidfile}")" 2>/dev/null
}

started=""
if alive kube-apiserver && alive gitops-apiserver && alive etcd && alive postgres; then
	echo "bench: reusing the stack running at ${STATE}" >&2
	if alive agent; then
		echo "bench: warning: the agent runs on this stack and reconciles the GitOpsDeployments of targets A and C into Argo CD (B's are not), which skews A and C; a stack started by make bench leaves it out" >&2
	fi
else
	echo "bench: starting a local stack at ${STATE} without Argo CD and the agent" >&2
	GITOPS_LOCAL_API_ONLY=1 hack/local-up.sh up
	started=1
	trap 'echo "bench: stopping the stack it started" >&2; hack/local-up.sh stop' EXIT
fi

# The benchmark programs are a module of their own (bench/go.mod). Built into the stack's
# state, not bin/, which worktrees share: each checkout runs its own tool.
mkdir -p "${STATE}/bin"
(cd bench && go build -o "${STATE}/bin/gitops-bench" ./cmd/gitops-bench)
mkdir -p docs
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
"${STATE}/bin/gitops-bench" \
	-kubeconfig "${STATE}/kubeconfig" -local-dir "${STATE}" \
	-direct-server "https://127.0.0.1:$((18443 + OFFSET))" -etcd-url "http://127.0.0.1:$((12379 + OFFSET))" \
	-out docs/performance.md -chart docs/performance.png -json docs/performance.json \
	-invoked-as "make bench${BENCH_FLAGS:+ BENCH_FLAGS='${BENCH_FLAGS}'}" ${BENCH_FLAGS:-}
