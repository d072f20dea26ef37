#!/usr/bin/env bash
# `make test` (and so .ci/run): every check CI runs, in order, each stage printing its wall time
# in a line hack/verify-fresh.sh collects ("stage NAME: N s").
#
#   host tools → codegen current → gofmt → vet (once, with the e2e tag, and bench/) → the images'
#   binaries → Prometheus rules → unit tests → the kubectl plugin installed by krew → e2e suite
#   on a stack of its own
#
# Two things keep a cold run (a new machine: empty Go caches, no bin/) well inside CI's limit:
#
# - One build configuration, CGO_ENABLED=0 and -trimpath (the images' own), for everything
#   compiled without the race detector: vet, the images, the unit tests that run without -race
#   (hack/unit.sh) and the e2e stack and suite all reuse one compilation of each package.
# - The e2e stack's tools, Kubernetes' control plane (hack/build-kube.sh) and Argo CD
#   (hack/build-argocd.sh), are separate modules that nothing before the e2e stage needs. They are
#   built from the start in the background at the lowest CPU priority (nice 19), so they take the
#   CPU the foreground stages leave idle (module downloads, links, tests waiting on PostgreSQL)
#   without slowing those. The e2e stage first waits for them (stage "tools", at normal priority
#   from then on when we may raise it). With bin/ already built they return at once.
#
# Everything started here is stopped when the script ends, by its recorded process group.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
export GO="${GO:-go}"

hack/host-tools.sh

tools_log="$(mktemp "${TMPDIR:-/tmp}/gitops-tools.XXXXXX")"
tools_pid=""
cleanup() {
	local rc=$?
	# The group, not its leader: go builds may outlive a leader that died.
	if [[ -n "${tools_pid}" ]] && kill -0 -- "-${tools_pid}" 2>/dev/null; then
		kill -TERM -- "-${tools_pid}" 2>/dev/null || true
		wait "${tools_pid}" 2>/dev/null || true
	fi
	rm -f "${tools_log}"
	exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Job control gives the background job a process group of its own, whose ID is its PID: the
# go builds it starts are stopped with it. Its watchdog stops that group once this script is
# gone, also when it was killed without running its traps (a CI timeout's SIGKILL). No
# terminal input: a background group reading it would stop, and the wait below with it.
set -m
# shellcheck disable=SC2016 # expanded by the inner shell
nice -n 19 bash -c '
	( while kill -0 "$1" 2>/dev/null; do sleep 5; done; kill -TERM -- "-$$" ) &
	watchdog=$!
	hack/build-kube.sh >/dev/null && hack/build-argocd.sh >/dev/null
	rc=$?
	kill "${watchdog}" 2>/dev/null
	exit "${rc}"
' make-test "$$" </dev/null >"${tools_log}" 2>&1 &
tools_pid=$!
tools_start=${SECONDS}
set +m

export CGO_ENABLED=0 GOFLAGS=-trimpath

# The stages as the Makefile defines them, one target each.
"${MAKE:-make}" --no-print-directory GO="${GO}" verify-codegen vet images verify-monitoring unit

wait_tools() {
	# Lowering a niceness needs privilege; without it the builds finish at nice 19.
	renice -n 0 -g "${tools_pid}" >/dev/null 2>&1 || true
	local rc=0
	wait "${tools_pid}" || rc=$?
	tools_pid=""
	if [[ ${rc} -ne 0 ]]; then
		echo "building the e2e stack's tools failed (exit ${rc}):" >&2
		cat "${tools_log}" >&2
		return "${rc}"
	fi
	echo "the e2e stack's tools were built in the background in $((SECONDS - tools_start)) s" >&2
}
start=${SECONDS}
rc=0
wait_tools || rc=$?
echo "stage tools: $((SECONDS - start)) s ($([[ ${rc} -eq 0 ]] && echo ok || echo "failed, exit ${rc}"))" >&2
[[ ${rc} -eq 0 ]] || exit "${rc}"

# The plugin's krew install runs it through the pinned kubectl, which the tools stage built.
"${MAKE:-make}" --no-print-directory GO="${GO}" verify-plugin e2e
