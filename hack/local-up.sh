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

log() { echo "local-up: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# --- processes ---------------------------------------------------------------------------------

# start_bg NAME CMD... runs CMD in the background with its output in .local/logs/NAME.log and
# its PID recorded in .local/pids/NAME.pid.
start_bg() {
	local name="$1"
	shift
	"$@" >"${LOGS}/${name}.log" 2>&1 &
	echo $! >"${PIDS}/${name}.pid"
}

alive() {
	local pidfile="${PIDS}/$1.pid"
	[[ -f "${pidfile}" ]] && kill -0 "$(cat "${pidfile}")" 2>/dev/null
}

# wait_for DESCRIPTION SECONDS NAME CMD... retries CMD until it succeeds; it fails early, with
# the end of NAME's log, if NAME's process has exited.
wait_for() {
	local what="$1" timeout="$2" name="$3"
	shift 3
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [[ -n "${name}" ]] && ! alive "${name}"; then
			tail -n 30 "${LOGS}/${name}.log" >&2 || true
			die "${name} exited while waiting for ${what}; its log is ${LOGS}/${name}.log"
		fi
		if ((SECONDS > deadline)); then
			[[ -n "${name}" ]] && { tail -n 30 "${LOGS}/${name}.log" >&2 || true; }
			die "timed out after ${timeout}s waiting for ${what}"
		fi
		sleep 0.5
	done
}

stop_pid() {
	local name="$1" pidfile="${PIDS}/$1.pid"
	[[ -f "${pidfile}" ]] || return 0
	local pid
	pid="$(cat "${pidfile}")"
	if kill -0 "${pid}" 2>/dev/null; then
		kill -TERM "${pid}" 2>/dev/null || true
		for _ in $(seq 1 60); do
			kill -0 "${pid}" 2>/dev/null || break
			sleep 0.25
		done
		if kill -0 "${pid}" 2>/dev/null; then
			log "${name} (${pid}) did not stop on SIGTERM; killing it"
			kill -KILL "${pid}" 2>/dev/null || true
		fi
	fi
	rm -f "${pidfile}"
}

stop_all() {
	stop_engine
	for name in agent argocd-application-controller argocd-repo-server redis gitops-apiserver kube-controller-manager kube-apiserver etcd; do
		stop_pid "${name}"
	done
	stop_remote_cluster
	if [[ -f "${STATE}/postgres/postmaster.pid" ]]; then
		as_postgres "${PG_BIN}/pg_ctl" -D "${STATE}/postgres" stop -m fast -w >/dev/null 2>&1 || true
	fi
	rm -f "${PIDS}/postgres.pid"
}

check_free() {
	local port="$1" what="$2"
	if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
		die "port ${port} (${what}) is in use: stop what holds it (hack/local-up.sh stop, if it is an earlier stack)"
	fi
}

# --- PostgreSQL --------------------------------------------------------------------------------

as_postgres() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start_postgres() {
	local data="${STATE}/postgres"
	if [[ $(id -u) -eq 0 ]] && ! runuser -u postgres -- test -x "${STATE}"; then
		die "PostgreSQL runs as the postgres user, which cannot reach ${STATE}: let others traverse its parent folders (chmod o+x), or set GITOPS_LOCAL_DIR to a folder it can reach"
	fi
	if [[ ! -f "${data}/PG_VERSION" ]]; then
		mkdir -p "${data}"
		[[ $(id -u) -eq 0 ]] && chown postgres: "${data}"
		chmod 700 "${data}"
		as_postgres "${PG_BIN}/initdb" -D "${data}" -U postgres --auth=trust -E UTF8 --locale=C >"${LOGS}/initdb.log" 2>&1 ||
			{ cat "${LOGS}/initdb.log" >&2; die "initdb failed"; }
		cat >>"${data}/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = ${PG_PORT}
unix_socket_directories = ''
max_connections = 200
EOF
	fi
	[[ $(id -u) -eq 0 ]] && chown postgres: "${LOGS}" && touch "${LOGS}/postgres.log" && chown postgres: "${LOGS}/postgres.log"
	# shared_buffers: PostgreSQL's default of 128 MB is smaller than the objects table at
	# 100,000 GitOpsDeployments (about 220 MB after a round of status updates), and every page a
	# query then reads from the kernel's cache instead costs about 30 µs on a small VM. Set at
	# start, so that existing data folders get it too.
	as_postgres "${PG_BIN}/pg_ctl" -D "${data}" -l "${LOGS}/postgres.log" \
		-o "-c shared_buffers=${GITOPS_LOCAL_PG_SHARED_BUFFERS:-512MB}" start -w -t 60 >/dev/null ||
		{ tail -n 30 "${LOGS}/postgres.log" >&2; die "PostgreSQL did not start"; }
	head -1 "${data}/postmaster.pid" >"${PIDS}/postgres.pid"
	local psql=("${PG_BIN}/psql" -h 127.0.0.1 -p "${PG_PORT}" -U postgres -v ON_ERROR_STOP=1 -qtA)
	if [[ "$("${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname = 'gitops'")" != 1 ]]; then
		"${psql[@]}" -c "CREATE DATABASE gitops" >/dev/null
	fi
	echo "postgres://postgres@127.0.0.1:${PG_PORT}/gitops?sslmode=disable" >"${STATE}/postgres.dsn"
	chmod 600 "${STATE}/postgres.dsn"
}

# --- certificates, tokens, kubeconfigs ---------------------------------------------------------

# sign NAME CN SANS [EXTKEYUSAGE [CA]] issues NAME.crt/NAME.key from CA (default: the local CA).
sign() {
	local name="$1" cn="$2" sans="$3" usage="${4:-serverAuth}"
	openssl req -new -newkey rsa:2048 -nodes -keyout "${CERTS}/${name}.key" -subj "/CN=${cn}" \
		-out "${CERTS}/${name}.csr" 2>/dev/null
	local ext="${CERTS}/${name}.ext"
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=${usage}"
		[[ -n "${sans}" ]] && echo "subjectAltName=${sans}"
	} >"${ext}"
	openssl x509 -req -in "${CERTS}/${name}.csr" -CA "${CERTS}/${5:-ca}.crt" -CAkey "${CERTS}/${5:-ca}.key" \
		-CAcreateserial -days 3650 -sha256 -extfile "${ext}" -out "${CERTS}/${name}.crt" 2>/dev/null
	rm -f "${CERTS}/${name}.csr" "${ext}"
}

make_ca() {
	openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "${CERTS}/$1.key" -subj "/CN=$2" \
		-days 3650 -sha256 -out "${CERTS}/$1.crt" 2>/dev/null
}

ensure_certs() {
	[[ -f "${CERTS}/done" ]] && return
	rm -rf "${CERTS}" && mkdir -p "${CERTS}" && chmod 700 "${CERTS}"
	make_ca ca "gitops-local-ca"
	make_ca front-proxy-ca "gitops-local-front-proxy-ca"
	sign kube-apiserver kube-apiserver "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	sign gitops-apiserver gitops-apiserver "DNS:gitops-apiserver.gitops-service.svc,DNS:localhost,IP:127.0.0.1"
	sign front-proxy-client front-proxy-client "" clientAuth front-proxy-ca
	openssl genrsa -out "${CERTS}/sa.key" 2048 2>/dev/null
	openssl rsa -in "${CERTS}/sa.key" -pubout -out "${CERTS}/sa.pub" 2>/dev/null
	touch "${CERTS}/done"
}

# The users of the static token file: an admin, the gitops-apiserver and agent identities
# (named like the ServiceAccounts the artifacts bind), and two tenants plus a viewer for the tests.
# The stack runs instance main's agent, the AppStudio controllers and the namespace provisioner
# in one process (the e2e suite kills and restarts it as one): its identity gitops-agent holds
# the rights of the three (bind_local_agent), where a real install gives each its own
# ServiceAccount (docs/operator-identities.md). The engine instance's agent is
# gitops-agent-engine, as an install names it.
USERS=(admin gitops-apiserver gitops-agent gitops-agent-engine argocd-application-controller alice bob carol)
user_line() {
	case "$1" in
	admin) echo "admin,admin-uid,\"system:masters\"" ;;
	argocd-application-controller) echo "system:serviceaccount:${ARGOCD_NAMESPACE}:$1,$1-uid,\"system:serviceaccounts,system:serviceaccounts:${ARGOCD_NAMESPACE}\"" ;;
	gitops-apiserver | gitops-agent | gitops-agent-engine) echo "system:serviceaccount:gitops-service:$1,$1-uid,\"system:serviceaccounts,system:serviceaccounts:gitops-service\"" ;;
	*) echo "$1,$1-uid,\"tenants\"" ;;
	esac
}

# ensure_tokens adds a token for every user the file lacks, so that a stack made before a user
# was added keeps its other tokens (and kubeconfigs).
ensure_tokens() {
	local tmp="${STATE}/tokens.csv.tmp"
	if [[ -f "${STATE}/tokens.csv" ]]; then cp "${STATE}/tokens.csv" "${tmp}"; else : >"${tmp}"; fi
	for u in "${USERS[@]}"; do
		[[ -n "$(token_of "${u}" "${tmp}")" ]] || echo "$(openssl rand -hex 24),$(user_line "${u}")" >>"${tmp}"
	done
	chmod 600 "${tmp}"
	mv "${tmp}" "${STATE}/tokens.csv"
}

token_of() {
	local name
	name="$(user_line "$1" | cut -d, -f1)"
	awk -F, -v n="${name}" '$2 == n { print $1 }' "${2:-${STATE}/tokens.csv}"
}

write_kubeconfig() {
	local file="$1" user="$2"
	cat >"${file}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:${KUBE_PORT}
    certificate-authority: ${CERTS}/ca.crt
users:
- name: ${user}
  user:
    token: $(token_of "${user}")
contexts:
- name: ${user}@local
  context:
    cluster: local
    user: ${user}
current-context: ${user}@local
EOF
	chmod 600 "${file}"
}

ensure_kubeconfigs() {
	write_kubeconfig "${STATE}/kubeconfig" admin
	write_kubeconfig "${STATE}/gitops-apiserver.kubeconfig" gitops-apiserver
	write_kubeconfig "${STATE}/gitops-agent.kubeconfig" gitops-agent
	write_kubeconfig "${STATE}/gitops-agent-engine.kubeconfig" gitops-agent-engine
	write_kubeconfig "${STATE}/argocd-application-controller.kubeconfig" argocd-application-controller
	for u in alice bob carol; do
		write_kubeconfig "${STATE}/${u}.kubeconfig" "${u}"
	done
}

# --- the remote cluster ------------------------------------------------------------------------

# With GITOPS_LOCAL_REMOTE_CLUSTER=1 (hack/e2e.sh sets it) a second etcd and kube-apiserver play
# the remote cluster of a GitOpsDeploymentManagedEnvironment: own CA, certificates and tokens under
# ${STATE}/remote, admin kubeconfig (CA inline, so tests can put it in a Secret) at
# ${STATE}/remote.kubeconfig. A kube-controller-manager runs only the token controller, which fills
# in the ServiceAccount token Secrets that createNewServiceAccount creates, as on a real cluster.
# Ports: etcd 12479/12480, kube-apiserver 16543, plus the same offset.
REMOTE_ETCD_PORT=$((12479 + OFFSET))
REMOTE_ETCD_PEER_PORT=$((12480 + OFFSET))
REMOTE_KUBE_PORT=$((16543 + OFFSET))

start_remote_cluster() {
	local kubebin="$1" dir="${STATE}/remote"
	local CERTS="${dir}/certs" # sign and make_ca issue into this folder
	check_free "${REMOTE_ETCD_PORT}" "remote etcd"
	check_free "${REMOTE_ETCD_PEER_PORT}" "remote etcd peer"
	check_free "${REMOTE_KUBE_PORT}" "remote kube-apiserver"
	if [[ ! -f "${CERTS}/done" ]]; then
		rm -rf "${CERTS}" && mkdir -p "${CERTS}" && chmod 700 "${CERTS}"
		make_ca ca "gitops-remote-ca"
		sign kube-apiserver kube-apiserver "IP:127.0.0.1,DNS:localhost"
		openssl genrsa -out "${CERTS}/sa.key" 2048 2>/dev/null
		openssl rsa -in "${CERTS}/sa.key" -pubout -out "${CERTS}/sa.pub" 2>/dev/null
		echo "$(openssl rand -hex 24),admin,admin-uid,\"system:masters\"" >"${CERTS}/tokens.csv"
		touch "${CERTS}/done"
	fi
	cat >"${STATE}/remote.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: remote
  cluster:
    server: https://127.0.0.1:${REMOTE_KUBE_PORT}
    certificate-authority-data: $(base64 -w0 <"${CERTS}/ca.crt")
users:
- name: admin
  user:
    token: $(cut -d, -f1 "${CERTS}/tokens.csv")
contexts:
- name: admin@remote
  context:
    cluster: remote
    user: admin
current-context: admin@remote
EOF
	chmod 600 "${STATE}/remote.kubeconfig"

	log "starting the remote cluster: etcd on 127.0.0.1:${REMOTE_ETCD_PORT}, kube-apiserver on 127.0.0.1:${REMOTE_KUBE_PORT}"
	start_bg remote-etcd "${kubebin}/etcd" --name remote --data-dir "${dir}/etcd" \
		--listen-client-urls "http://127.0.0.1:${REMOTE_ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${REMOTE_ETCD_PORT}" \
		--listen-peer-urls "http://127.0.0.1:${REMOTE_ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${REMOTE_ETCD_PEER_PORT}" \
		--initial-cluster "remote=http://127.0.0.1:${REMOTE_ETCD_PEER_PORT}" --listen-metrics-urls ""
	wait_for "remote etcd" 60 remote-etcd curl -sf "http://127.0.0.1:${REMOTE_ETCD_PORT}/health"
	start_bg remote-kube-apiserver "${kubebin}/kube-apiserver" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${REMOTE_KUBE_PORT}" \
		--etcd-servers "http://127.0.0.1:${REMOTE_ETCD_PORT}" \
		--tls-cert-file "${CERTS}/kube-apiserver.crt" --tls-private-key-file "${CERTS}/kube-apiserver.key" \
		--token-auth-file "${CERTS}/tokens.csv" --authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "${CERTS}/sa.pub" --service-account-signing-key-file "${CERTS}/sa.key" \
		--service-cluster-ip-range 10.0.1.0/24
	wait_for "the remote kube-apiserver" 120 remote-kube-apiserver \
		"${kubebin}/kubectl" --kubeconfig "${STATE}/remote.kubeconfig" get --raw /readyz
	start_bg remote-kube-controller-manager "${kubebin}/kube-controller-manager" \
		--kubeconfig "${STATE}/remote.kubeconfig" --secure-port 0 --leader-elect=false \
		--controllers serviceaccount-token \
		--service-account-private-key-file "${CERTS}/sa.key" --root-ca-file "${CERTS}/ca.crt"
}

stop_remote_cluster() {
	for name in remote-kube-controller-manager remote-kube-apiserver remote-etcd; do
		stop_pid "${name}"
	done
}

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
	log "building gitops-apiserver and the agent"
	(cd "${ROOT}" && go build -o "${ROOT}/bin/gitops-apiserver" ./cmd/gitops-apiserver &&
		go build -o "${ROOT}/bin/agent" ./cmd/agent)
	KUBECTL=("${kubebin}/kubectl" --kubeconfig "${STATE}/kubeconfig")

	ensure_certs
	ensure_tokens
	ensure_kubeconfigs

	# Whatever fails from here on (die, or a failing command under errexit) stops what was started.
	trap 'if [[ -z "${UP_DONE:-}" ]]; then log "start-up failed; stopping what was started"; stop_all; fi' EXIT

	log "starting PostgreSQL on 127.0.0.1:${PG_PORT}"
	start_postgres

	log "starting etcd on 127.0.0.1:${ETCD_PORT}"
	start_bg etcd "${kubebin}/etcd" --name local --data-dir "${STATE}/etcd" \
		--listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
		--listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-cluster "local=http://127.0.0.1:${ETCD_PEER_PORT}" --listen-metrics-urls ""
	wait_for "etcd" 60 etcd curl -sf "http://127.0.0.1:${ETCD_PORT}/health"

	log "starting kube-apiserver on 127.0.0.1:${KUBE_PORT}"
	start_bg kube-apiserver "${kubebin}/kube-apiserver" \
		--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "${KUBE_PORT}" \
		--etcd-servers "http://127.0.0.1:${ETCD_PORT}" \
		--tls-cert-file "${CERTS}/kube-apiserver.crt" --tls-private-key-file "${CERTS}/kube-apiserver.key" \
		--client-ca-file "${CERTS}/ca.crt" --token-auth-file "${STATE}/tokens.csv" \
		--authorization-mode RBAC \
		--service-account-issuer https://kubernetes.default.svc \
		--service-account-key-file "${CERTS}/sa.pub" --service-account-signing-key-file "${CERTS}/sa.key" \
		--service-cluster-ip-range 10.0.0.0/24 \
		--requestheader-client-ca-file "${CERTS}/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
		--requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
		--requestheader-extra-headers-prefix X-Remote-Extra- \
		--proxy-client-cert-file "${CERTS}/front-proxy-client.crt" --proxy-client-key-file "${CERTS}/front-proxy-client.key"
	wait_for "kube-apiserver" 120 kube-apiserver "${KUBECTL[@]}" get --raw /readyz

	if [[ "${GITOPS_LOCAL_REMOTE_CLUSTER:-}" == 1 ]]; then start_remote_cluster "${kubebin}"; fi

	log "starting kube-controller-manager"
	start_bg kube-controller-manager "${kubebin}/kube-controller-manager" \
		--kubeconfig "${STATE}/kubeconfig" --authentication-kubeconfig "${STATE}/kubeconfig" \
		--authorization-kubeconfig "${STATE}/kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "${KCM_PORT}" --leader-elect=false \
		--service-account-private-key-file "${CERTS}/sa.key" --root-ca-file "${CERTS}/ca.crt" \
		--use-service-account-credentials=false

	log "registering gitops-apiserver"
	local overlay="${STATE}/overlay"
	mkdir -p "${overlay}"
	cat >"${overlay}/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to "${overlay}" "${ROOT}/artifacts/local")
patches:
  - target:
      kind: APIService
    patch: |-
      - op: add
        path: /spec/caBundle
        value: $(base64 -w0 <"${CERTS}/ca.crt")
      - op: replace
        path: /spec/service/port
        value: ${GITOPS_PORT}
EOF
	"${KUBECTL[@]}" apply -k "${overlay}" >/dev/null

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

# start_gitops_apiserver starts gitops-apiserver and waits until kube-apiserver serves both
# groups through it. The e2e tests call it alone to restart the server after killing it.
start_gitops_apiserver() {
	log "starting gitops-apiserver on 127.0.0.1:${GITOPS_PORT}"
	start_bg gitops-apiserver "${ROOT}/bin/gitops-apiserver" \
		--bind-address 127.0.0.1 --secure-port "${GITOPS_PORT}" \
		--tls-cert-file "${CERTS}/gitops-apiserver.crt" --tls-private-key-file "${CERTS}/gitops-apiserver.key" \
		--kubeconfig "${STATE}/gitops-apiserver.kubeconfig" \
		--authentication-kubeconfig "${STATE}/gitops-apiserver.kubeconfig" \
		--authorization-kubeconfig "${STATE}/gitops-apiserver.kubeconfig" \
		--postgres-dsn-file "${STATE}/postgres.dsn" \
		--internal-api-users system:serviceaccount:gitops-service:gitops-controllers,system:serviceaccount:gitops-service:gitops-agent \
		--allow-file-repositories
	wait_for "gitops-apiserver to be ready" 120 gitops-apiserver \
		curl -sfk "https://127.0.0.1:${GITOPS_PORT}/readyz"
	wait_for "the GitOps APIServices to become Available" 120 gitops-apiserver \
		"${KUBECTL[@]}" wait --for=condition=Available --timeout=1s \
		apiservice/v1alpha1.managed-gitops.redhat.com apiservice/v1alpha1.appstudio.redhat.com
}

# --- Argo CD and the agent ----------------------------------------------------------------------

# start_argocd installs the stack's Argo CD, instance "main" of the fleet, in ${ARGOCD_NAMESPACE}
# of the stack's cluster, and starts its processes.
start_argocd() {
	log "installing Argo CD's CRDs and settings in ${ARGOCD_NAMESPACE}"
	install_argocd KUBECTL "${ARGOCD_NAMESPACE}" "${ROOT}/artifacts/argocd-local"
	start_argocd_processes "" "${ARGOCD_NAMESPACE}" "${STATE}/argocd-application-controller.kubeconfig" \
		"${REDIS_PORT}" "${REPO_SERVER_PORT}" "${REPO_SERVER_METRICS_PORT}" "${CONTROLLER_METRICS_PORT}"
}

# install_argocd CLIENT NAMESPACE MANIFESTS applies Argo CD's CRDs, the YAML MANIFESTS (a file
# or kustomization) and argocd-secret through the kubectl command in the array named CLIENT.
install_argocd() {
	local -n client="$1"
	local namespace="$2" manifests="$3"
	"${client[@]}" apply --server-side -f "${ARGOCD_BIN}/crds/application-crd.yaml" -f "${ARGOCD_BIN}/crds/appproject-crd.yaml" >/dev/null
	if [[ -d "${manifests}" ]]; then "${client[@]}" apply -k "${manifests}" >/dev/null; else "${client[@]}" apply -f "${manifests}" >/dev/null; fi
	if ! "${client[@]}" -n "${namespace}" get secret argocd-secret >/dev/null 2>&1; then
		"${client[@]}" -n "${namespace}" create secret generic argocd-secret \
			--from-literal "server.secretkey=$(openssl rand -base64 32)" >/dev/null
		"${client[@]}" -n "${namespace}" label secret argocd-secret \
			app.kubernetes.io/name=argocd-secret app.kubernetes.io/part-of=argocd >/dev/null
	fi
	"${client[@]}" wait --for condition=Established --timeout 60s \
		crd/applications.argoproj.io crd/appprojects.argoproj.io >/dev/null
}

# start_argocd_processes SUFFIX NAMESPACE KUBECONFIG REDIS REPO REPO_METRICS CONTROLLER_METRICS runs
# Argo CD out of cluster, as its own developers do: repo-server and application-controller are
# the same binary under two names, the controller reaches "in-cluster" through KUBECONFIG
# (ARGOCD_FAKE_IN_CLUSTER), as its ServiceAccount, which may only read and impersonate the
# tenants' deployers (artifacts/argocd-controller), and nothing runs argocd-server, so the
# objects it would create (argocd-secret's key, the namespace's settings) are made by
# install_argocd. SUFFIX tells the processes of a second instance from the first's.
start_argocd_processes() {
	local suffix="$1" namespace="$2" kubeconfig="$3" redis_port="$4" repo_port="$5" repo_metrics="$6" controller_metrics="$7"
	local argo="${STATE}/argocd${suffix}"
	mkdir -p "${argo}/tmp" "${argo}/tls" "${argo}/ssh" "${argo}/xdg/cache" "${argo}/xdg/config" "${argo}/xdg/data" \
		"${STATE}/redis${suffix}"
	log "starting Redis${suffix} on 127.0.0.1:${redis_port}"
	start_bg "redis${suffix}" redis-server --bind 127.0.0.1 --port "${redis_port}" --save "" --appendonly no \
		--dir "${STATE}/redis${suffix}" --daemonize no
	wait_for "Redis${suffix}" 30 "redis${suffix}" redis-cli -p "${redis_port}" ping

	# The repo-server runs the argocd CLI (as argocd-git-ask-pass) for Git credentials, and
	# kustomize and helm to render, all from ${ARGOCD_BIN}, hence PATH; TMPDIR and the socket
	# keep parallel stacks from sharing clones and the socket. helm keeps its cache, settings
	# and plugins under the XDG folders: Argo CD gives each helm run its own under TMPDIR, and
	# these keep anything else (a kustomize plugin, a run Argo CD does not isolate) out of the
	# user's home. Not HELM_CACHE_HOME and the like: helm prefers them to XDG_*, so they would
	# make every run, of every tenant, share one cache of chart repositories.
	local env=(env PATH="${ARGOCD_BIN}:${PATH}" TMPDIR="${argo}/tmp" ARGOCD_GPG_ENABLED=false
		ARGOCD_ASK_PASS_SOCK="${argo}/askpass.sock" ARGOCD_TLS_DATA_PATH="${argo}/tls"
		ARGOCD_SSH_DATA_PATH="${argo}/ssh" XDG_CACHE_HOME="${argo}/xdg/cache"
		XDG_CONFIG_HOME="${argo}/xdg/config" XDG_DATA_HOME="${argo}/xdg/data")
	log "starting argocd-repo-server${suffix} on 127.0.0.1:${repo_port}"
	start_bg "argocd-repo-server${suffix}" "${env[@]}" "${ARGOCD_BIN}/argocd-repo-server" --disable-tls \
		--address 127.0.0.1 --port "${repo_port}" \
		--metrics-address 127.0.0.1 --metrics-port "${repo_metrics}" \
		--redis "127.0.0.1:${redis_port}" --logformat text
	wait_for "argocd-repo-server${suffix}" 60 "argocd-repo-server${suffix}" curl -sf "http://127.0.0.1:${repo_metrics}/metrics"

	log "starting argocd-application-controller${suffix}"
	start_bg "argocd-application-controller${suffix}" "${env[@]}" ARGOCD_FAKE_IN_CLUSTER=true KUBECONFIG="${kubeconfig}" \
		"${ARGOCD_BIN}/argocd-application-controller" --kubeconfig "${kubeconfig}" \
		--namespace "${namespace}" --redis "127.0.0.1:${redis_port}" \
		--repo-server "127.0.0.1:${repo_port}" --repo-server-plaintext \
		--metrics-port "${controller_metrics}" --status-processors 8 --operation-processors 4 \
		--logformat text
	wait_for "argocd-application-controller${suffix}" 60 "argocd-application-controller${suffix}" \
		curl -sf "http://127.0.0.1:${controller_metrics}/healthz"
}

# instance NAME NAMESPACE [CLUSTER] is the ArgoCDInstance of one of the stack's Argo CD instances.
instance() {
	cat <<EOF
apiVersion: managed-gitops.redhat.com/v1alpha1
kind: ArgoCDInstance
metadata:
  name: $1
spec:
  namespace: $2
  capacity: 1000
EOF
	if [[ -n "${3:-}" ]]; then echo "  cluster: $3"; fi
}

# tenant_secrets_role SERVICEACCOUNT is the ClusterRole, and its binding, that let an identity
# of gitops-service delete its own binding of gitops-service-tenant-secrets-reader in a tenant
# namespace it stops serving, as artifacts/agent/rbac.yaml gives instance main's agent
# (gitops-agent-main-tenant-secrets).
tenant_secrets_role() {
	cat <<EOF
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: $1-tenant-secrets
rules:
  - apiGroups: ["rbac.authorization.k8s.io"]
    resources: ["rolebindings"]
    resourceNames: ["gitops-service-tenant-secrets-reader-$1"]
    verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: $1-tenant-secrets
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: $1-tenant-secrets
subjects:
  - kind: ServiceAccount
    name: $1
    namespace: gitops-service
EOF
}

# bind_local_agent gives the stack's one agent process, gitops-agent, the rights of the three
# identities it plays: instance main's agent, the AppStudio controllers and the namespace
# provisioner. It reads the tenants' Secrets in the namespaces any of the three serves, through
# one binding of its own in each (gitops-service-tenant-secrets-reader-gitops-agent).
bind_local_agent() {
	tenant_secrets_role gitops-agent
	local sa="  - kind: ServiceAccount
    name: gitops-agent
    namespace: gitops-service"
	local role
	for role in gitops-agent gitops-agent-deployers gitops-controllers gitops-controllers-environments gitops-agent-namespace-provisioner; do
		cat <<EOF
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: local-${role}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${role}
subjects:
${sa}
EOF
	done
	local ns
	for ns in "${ARGOCD_NAMESPACE}/gitops-agent" "${ARGOCD_NAMESPACE}/gitops-agent-operations" gitops-service/gitops-agent-leader-election \
		gitops-service/gitops-namespace-provisioner-leader-election; do
		cat <<EOF
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: local-${ns#*/}
  namespace: ${ns%/*}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: ${ns#*/}
subjects:
${sa}
EOF
	done
}

start_agent() {
	# The admission policies first: they hold what the agents' cluster-wide rights may not do.
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/admission-policy" >/dev/null
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/agent" >/dev/null
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/namespace-provisioner" >/dev/null
	bind_local_agent | "${KUBECTL[@]}" apply -f - >/dev/null
	instance main "${ARGOCD_NAMESPACE}" | "${KUBECTL[@]}" apply -f - >/dev/null
	log "starting the agent"
	# The name in the Leases is fixed so that the agent, restarted after a crash (the e2e suite
	# kills it), takes its Leases back at once instead of waiting out the lease duration.
	# --placement-max-owner-share 0.002 lets one owner (managed-gitops.redhat.com/tenant-owner)
	# have 2 of each instance's 1000 places: the e2e suite sees the share hold with a handful of
	# namespaces, and every other tenant of the suite is its own owner.
	start_bg agent "${ROOT}/bin/agent" --kubeconfig "${STATE}/gitops-agent.kubeconfig" \
		--argocd-namespace "${ARGOCD_NAMESPACE}" --instance main --leader-elect-identity local-agent \
		--controllers '*,namespaceprovisioner' --placement-max-owner-share 0.002 \
		--metrics-bind-address "127.0.0.1:${AGENT_METRICS_PORT}" -v 2
	wait_for "the agent's caches" 60 agent grep -q "agent started" "${LOGS}/agent.log"
}

# --- the engine instance ----------------------------------------------------------------------

# GITOPS_LOCAL_INSTANCES=2 (with the remote cluster) adds instance "engine" of the fleet: a
# second Argo CD on the remote cluster, as on a GitOps Engine cluster, in ${ENGINE_NAMESPACE},
# driven by a second agent (agent-engine) whose --engine-kubeconfig reaches it there. Argo CD
# reaches the stack's cluster, for deployments into tenants' own namespaces, through a cluster
# Secret holding a token of its ServiceAccount in ${ENGINE_NAMESPACE} of the stack's cluster:
# that identity reads and impersonates the deployers, as the first instance's does. The e2e
# suite starts and stops it (start-engine, stop-engine) around the specs of the fleet. Tokens
# are TokenRequest tokens valid for 48 hours. Ports: 16479 (Redis), 18181 and 18184
# (repo-server), 18182 (application-controller metrics), 18185 (agent metrics), plus the offset.
ENGINE_NAMESPACE=gitops-service-argocd-2
ENGINE_REDIS_PORT=$((16479 + OFFSET))
ENGINE_REPO_SERVER_PORT=$((18181 + OFFSET))
ENGINE_REPO_SERVER_METRICS_PORT=$((18184 + OFFSET))
ENGINE_CONTROLLER_METRICS_PORT=$((18182 + OFFSET))
ENGINE_AGENT_METRICS_PORT=$((18185 + OFFSET))
ENGINE_PROCESSES=(agent-engine argocd-application-controller-2 argocd-repo-server-2 redis-2)

# engine_manifests KUSTOMIZATION renders it for the engine instance's namespace.
engine_manifests() {
	"${KUBECTL[@]}" kustomize "$1" | sed "s/gitops-service-argocd/${ENGINE_NAMESPACE}/g"
}

# remote_kubeconfig FILE TOKEN writes a kubeconfig of the remote cluster for TOKEN.
remote_kubeconfig() {
	sed -e '/^users:/,$d' "${STATE}/remote.kubeconfig" >"$1"
	cat >>"$1" <<EOF
users:
- name: user
  user:
    token: $2
contexts:
- name: user@remote
  context:
    cluster: remote
    user: user
current-context: user@remote
EOF
	chmod 600 "$1"
}

start_engine() {
	[[ -f "${STATE}/remote.kubeconfig" ]] || die "the engine instance runs on the remote cluster: start the stack with GITOPS_LOCAL_REMOTE_CLUSTER=1"
	for name in "${ENGINE_PROCESSES[@]}"; do
		alive "${name}" && die "${name} is already running: run hack/local-up.sh stop-engine first"
	done
	check_free "${ENGINE_REDIS_PORT}" "engine Redis"
	check_free "${ENGINE_REPO_SERVER_PORT}" "engine argocd-repo-server"
	check_free "${ENGINE_REPO_SERVER_METRICS_PORT}" "engine argocd-repo-server metrics"
	check_free "${ENGINE_CONTROLLER_METRICS_PORT}" "engine argocd-application-controller metrics"
	check_free "${ENGINE_AGENT_METRICS_PORT}" "engine agent metrics"
	local REMOTE=("${KUBECTL[0]}" --kubeconfig "${STATE}/remote.kubeconfig")
	local manifests="${STATE}/engine-argocd.yaml"
	log "installing the engine instance's Argo CD in ${ENGINE_NAMESPACE} of the remote cluster"
	# Its agent reaches the stack's cluster as https://127.0.0.1:${KUBE_PORT}, not as its own
	# in-cluster cluster: that URL is the one whose Secrets stay out of its cache.
	engine_manifests "${ROOT}/artifacts/argocd-local" |
		sed "s#clusters: \[\"https://kubernetes.default.svc\"\]#clusters: [\"https://kubernetes.default.svc\", \"https://127.0.0.1:${KUBE_PORT}\"]#" >"${manifests}"
	grep -q "\"https://127.0.0.1:${KUBE_PORT}\"" "${manifests}" || die "the engine's argocd-cm does not exclude Secrets of https://127.0.0.1:${KUBE_PORT}"
	install_argocd REMOTE "${ENGINE_NAMESPACE}" "${manifests}"
	# The agent's identity and rights there, and on the stack's cluster its Operations' in the
	# instance's namespace, beside Argo CD's identity on the stack's cluster.
	# The agent's identity there is gitops-agent-engine, as on the stack's cluster, where it
	# holds the instances' ClusterRole gitops-agent and the deployers' (gitops-apiserver confines
	# it to instance engine by its name). The admission policies hold on both clusters.
	"${REMOTE[@]}" apply -k "${ROOT}/artifacts/admission-policy" >/dev/null
	"${REMOTE[@]}" create namespace gitops-service --dry-run=client -o yaml | "${REMOTE[@]}" apply -f - >/dev/null
	"${REMOTE[@]}" -n gitops-service create serviceaccount gitops-agent-engine --dry-run=client -o yaml | "${REMOTE[@]}" apply -f - >/dev/null
	engine_manifests "${ROOT}/artifacts/agent-argocd" | sed "s/name: gitops-agent-main$/name: gitops-agent-engine/" | "${REMOTE[@]}" apply -f - >/dev/null
	{
		cat "${ROOT}/artifacts/argocd-local/namespace.yaml"
		echo "---"
		cat "${ROOT}/artifacts/argocd-local/serviceaccount.yaml"
		echo "---"
		"${KUBECTL[@]}" kustomize "${ROOT}/artifacts/argocd-controller"
		echo "---"
		"${KUBECTL[@]}" kustomize "${ROOT}/artifacts/agent-operations"
		for role in gitops-agent gitops-agent-deployers; do
			cat <<EOF
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: ${role}-engine
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: ${role}
subjects:
  - kind: ServiceAccount
    name: gitops-agent-main
    namespace: gitops-service
EOF
		done
	} | sed -e "s/gitops-service-argocd/${ENGINE_NAMESPACE}/g" -e "s/name: gitops-agent-main$/name: gitops-agent-engine/" |
		"${KUBECTL[@]}" apply -f - >/dev/null
	# The tenants' Secrets it reads, in the tenants its instance keeps, are on the stack's cluster.
	tenant_secrets_role gitops-agent-engine | "${KUBECTL[@]}" apply -f - >/dev/null

	local api_token
	api_token="$("${KUBECTL[@]}" -n "${ENGINE_NAMESPACE}" create token argocd-application-controller --duration 48h)"
	# Server-side: a client-side apply would copy the token into an annotation.
	"${REMOTE[@]}" apply --server-side -f - >/dev/null <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: gitops-service-api-cluster
  namespace: ${ENGINE_NAMESPACE}
  labels:
    argocd.argoproj.io/secret-type: cluster
stringData:
  name: gitops-service-api
  server: https://127.0.0.1:${KUBE_PORT}
  config: '{"bearerToken":"${api_token}","tlsClientConfig":{"caData":"$(base64 -w0 <"${CERTS}/ca.crt")"}}'
EOF
	remote_kubeconfig "${STATE}/argocd-application-controller-2.kubeconfig" \
		"$("${REMOTE[@]}" -n "${ENGINE_NAMESPACE}" create token argocd-application-controller --duration 48h)"
	remote_kubeconfig "${STATE}/gitops-agent-engine-remote.kubeconfig" \
		"$("${REMOTE[@]}" -n gitops-service create token gitops-agent-engine --duration 48h)"

	start_argocd_processes -2 "${ENGINE_NAMESPACE}" "${STATE}/argocd-application-controller-2.kubeconfig" \
		"${ENGINE_REDIS_PORT}" "${ENGINE_REPO_SERVER_PORT}" "${ENGINE_REPO_SERVER_METRICS_PORT}" "${ENGINE_CONTROLLER_METRICS_PORT}"
	instance engine "${ENGINE_NAMESPACE}" remote | "${KUBECTL[@]}" apply -f - >/dev/null
	start_engine_agent
}

# start_engine_agent starts the engine instance's agent: only the Argo CD controllers, the
# others run once for the fleet in the first agent.
start_engine_agent() {
	log "starting the engine instance's agent"
	start_bg agent-engine "${ROOT}/bin/agent" --kubeconfig "${STATE}/gitops-agent-engine.kubeconfig" \
		--engine-kubeconfig "${STATE}/gitops-agent-engine-remote.kubeconfig" \
		--argocd-namespace "${ENGINE_NAMESPACE}" --instance engine --leader-elect-identity engine-agent \
		--local-cluster-server "https://127.0.0.1:${KUBE_PORT}" --controllers argocd \
		--metrics-bind-address "127.0.0.1:${ENGINE_AGENT_METRICS_PORT}" -v 2
	wait_for "the engine agent's caches" 60 agent-engine grep -q "agent started" "${LOGS}/agent-engine.log"
}

stop_engine() {
	for name in "${ENGINE_PROCESSES[@]}"; do
		stop_pid "${name}"
	done
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
