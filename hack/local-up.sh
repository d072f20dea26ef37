#!/usr/bin/env bash
# The local stack: PostgreSQL, etcd, kube-apiserver and kube-controller-manager (built from
# source by hack/build-kube.sh), gitops-apiserver registered through real APIServices, a real
# Argo CD (Redis, argocd-repo-server and argocd-application-controller, built by
# hack/build-argocd.sh) and the agent that drives it. Everything listens on 127.0.0.1 (except
# the application-controller's metrics port, which Argo CD binds to every address) and keeps
# its state under .local/ (git-ignored).
#
#   hack/local-up.sh up     start everything in the background; return once the API is served
#   hack/local-up.sh run    start everything and stay in the foreground until Ctrl-C
#   hack/local-up.sh stop   stop everything this script started, by recorded PID
#
# Ports are fixed, so kubeconfigs stay valid across restarts: PostgreSQL 15432, etcd 12379/12380,
# kube-apiserver 16443, kube-controller-manager 16444, gitops-apiserver 18443, Redis 16379,
# argocd-repo-server 18081 (metrics 18084), argocd-application-controller metrics 18082, agent
# metrics 18085. A second stack
# (the e2e tests run one) sets GITOPS_LOCAL_DIR to its own folder and GITOPS_LOCAL_PORT_OFFSET.
# GITOPS_LOCAL_API_ONLY=1 leaves out Argo CD and the agent (the benchmark: the agent would
# reconcile every GitOpsDeployment it writes into an Argo CD Application).
# GITOPS_LOCAL_PG_SHARED_BUFFERS sets PostgreSQL's shared_buffers (default 512MB).
# GITOPS_LOCAL_INSTANCES=2 (with GITOPS_LOCAL_REMOTE_CLUSTER=1) starts a second Argo CD instance
# of the fleet, on the remote cluster as its engine cluster (start_engine).
#
# What each part starts is in its own file under hack/local/, sourced below: processes.sh (the
# helpers that start, wait for and stop processes), postgres.sh, kube.sh (certificates, tokens,
# kubeconfigs, etcd, kube-apiserver, kube-controller-manager), remote-cluster.sh,
# gitops-apiserver.sh, argocd.sh, agent.sh and engine.sh. This file keeps the settings they share
# and the entry points.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
STATE="${GITOPS_LOCAL_DIR:-${ROOT}/.local}"
mkdir -p "${STATE}"
STATE="$(cd "${STATE}" && pwd)"
PIDS="${STATE}/pids"
LOGS="${STATE}/logs"
CERTS="${STATE}/certs"

OFFSET="${GITOPS_LOCAL_PORT_OFFSET:-0}"
PG_PORT=$((15432 + OFFSET))
ETCD_PORT=$((12379 + OFFSET))
ETCD_PEER_PORT=$((12380 + OFFSET))
KUBE_PORT=$((16443 + OFFSET))
KCM_PORT=$((16444 + OFFSET))
GITOPS_PORT=$((18443 + OFFSET))
REDIS_PORT=$((16379 + OFFSET))
REPO_SERVER_PORT=$((18081 + OFFSET))
REPO_SERVER_METRICS_PORT=$((18084 + OFFSET))
CONTROLLER_METRICS_PORT=$((18082 + OFFSET))
AGENT_METRICS_PORT=$((18085 + OFFSET))
ARGOCD_NAMESPACE=gitops-service-argocd
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"

# shellcheck source=hack/local/processes.sh
source "${ROOT}/hack/local/processes.sh"
# shellcheck source=hack/local/postgres.sh
source "${ROOT}/hack/local/postgres.sh"
# shellcheck source=hack/local/kube.sh
source "${ROOT}/hack/local/kube.sh"
# shellcheck source=hack/local/remote-cluster.sh
source "${ROOT}/hack/local/remote-cluster.sh"
# shellcheck source=hack/local/gitops-apiserver.sh
source "${ROOT}/hack/local/gitops-apiserver.sh"
# shellcheck source=hack/local/argocd.sh
source "${ROOT}/hack/local/argocd.sh"
# shellcheck source=hack/local/agent.sh
source "${ROOT}/hack/local/agent.sh"
# shellcheck source=hack/local/engine.sh
source "${ROOT}/hack/local/engine.sh"

# --- the stack ---------------------------------------------------------------------------------

up() {
	mkdir -p "${STATE}" "${PIDS}" "${LOGS}"
	for name in postgres etcd kube-apiserver kube-controller-manager gitops-apiserver redis argocd-repo-server argocd-application-controller agent; do
		alive "${name}" && die "${name} is already running (PID $(cat "${PIDS}/${name}.pid")): run hack/local-up.sh stop first"
	done
	check_free "${PG_PORT}" PostgreSQL
	check_free "${ETCD_PORT}" etcd
	check_free "${ETCD_PEER_PORT}" "etcd peer"
	check_free "${KUBE_PORT}" kube-apiserver
	check_free "${KCM_PORT}" kube-controller-manager
	check_free "${GITOPS_PORT}" gitops-apiserver
	check_free "${REDIS_PORT}" Redis
	check_free "${REPO_SERVER_PORT}" argocd-repo-server
	check_free "${REPO_SERVER_METRICS_PORT}" "argocd-repo-server metrics"
	check_free "${CONTROLLER_METRICS_PORT}" "argocd-application-controller metrics"
	# The host tools the stack runs, installed with apt when missing (as root).
	ensure_postgres "${PG_BIN}" || exit 1
	ensure_command openssl openssl || exit 1
	ensure_command curl curl || exit 1
	ensure_command git git || exit 1
	ensure_command ssh openssh-client || exit 1
	if [[ -z "${GITOPS_LOCAL_API_ONLY:-}" ]]; then ensure_command redis-server redis-server || exit 1; fi

	log "building the control plane (cached under bin/; about 12 minutes the first time)"
	local kubebin
	kubebin="$("${ROOT}/hack/stage.sh" build-kube "${ROOT}/hack/build-kube.sh")"
	log "building Argo CD, kustomize and helm (cached under bin/; about 10 minutes the first time)"
	ARGOCD_BIN="$("${ROOT}/hack/stage.sh" build-argocd "${ROOT}/hack/build-argocd.sh")"
	# Into the stack's own state, not bin/: stacks of several checkouts (worktrees share bin/)
	# may run side by side, and each must run the code it was started from.
	log "building gitops-apiserver and the agent"
	(cd "${ROOT}" && go build -o "${STATE}/bin/gitops-apiserver" ./cmd/gitops-apiserver &&
		go build -o "${STATE}/bin/agent" ./cmd/agent)
	KUBECTL=("${kubebin}/kubectl" --kubeconfig "${STATE}/kubeconfig")

	ensure_certs
	ensure_tokens
	ensure_kubeconfigs

	# Whatever fails from here on (die, or a failing command under errexit) stops what was started.
	trap 'if [[ -z "${UP_DONE:-}" ]]; then log "start-up failed; stopping what was started"; stop_all; fi' EXIT

	start_postgres
	start_kube_apiserver "${kubebin}"
	if [[ "${GITOPS_LOCAL_REMOTE_CLUSTER:-}" == 1 ]]; then start_remote_cluster "${kubebin}"; fi
	start_kube_controller_manager "${kubebin}"
	register_gitops_apiserver
	start_gitops_apiserver
	if [[ -z "${GITOPS_LOCAL_API_ONLY:-}" ]]; then
		start_argocd
		start_agent
		if [[ "${GITOPS_LOCAL_INSTANCES:-1}" == 2 ]]; then start_engine; fi
	fi
	UP_DONE=1
	trap - EXIT

	cat >&2 <<EOF

The GitOps Service is up. Use it with:

  export KUBECONFIG=${STATE}/kubeconfig     # cluster admin
  export PATH=${kubebin}:\$PATH      # kubectl
  kubectl apply -f artifacts/examples/
  kubectl get gitops -n jane
  kubectl get applications -n ${ARGOCD_NAMESPACE}     # what the agent made of them

Tenant kubeconfigs (no access until you bind them a role): ${STATE}/{alice,bob,carol}.kubeconfig
Logs: ${LOGS}/    Stop: make stop
EOF
}

stop_all() {
	stop_engine
	stop_agent
	stop_argocd
	stop_gitops_apiserver
	stop_kube
	stop_remote_cluster
	stop_postgres
}

run() {
	up
	trap 'echo; log "stopping"; stop_all; exit 0' INT TERM
	log "running in the foreground; Ctrl-C stops everything"
	while true; do
		for name in etcd kube-apiserver gitops-apiserver redis argocd-repo-server argocd-application-controller agent; do
			if ! alive "${name}"; then
				tail -n 30 "${LOGS}/${name}.log" >&2 || true
				log "${name} exited; stopping the stack"
				stop_all
				exit 1
			fi
		done
		sleep 2
	done
}

case "${1:-}" in
up) up ;;
run) run ;;
stop) stop_all ;;
start-gitops-apiserver | start-agent | start-engine-agent)
	# Starts one process of a running stack again (the e2e suite kills them to test recovery).
	KUBECTL=("$("${ROOT}/hack/build-kube.sh")/kubectl" --kubeconfig "${STATE}/kubeconfig")
	"${1//-/_}"
	;;
start-engine)
	KUBECTL=("$("${ROOT}/hack/build-kube.sh")/kubectl" --kubeconfig "${STATE}/kubeconfig")
	ARGOCD_BIN="$("${ROOT}/hack/build-argocd.sh")"
	start_engine
	;;
stop-engine) stop_engine ;;
*)
	echo "usage: $0 up|run|stop|start-gitops-apiserver|start-agent|start-engine|start-engine-agent|stop-engine" >&2
	exit 2
	;;
esac
