# shellcheck shell=bash
# The engine instance (hack/local-up.sh sources this file; do not run it): start_engine installs
# a second Argo CD on the remote cluster and starts its Redis, argocd-repo-server and
# argocd-application-controller (suffix -2) and its agent (agent-engine, start_engine_agent);
# stop_engine stops them.
#
# Expects from the caller: ROOT, STATE, LOGS, CERTS, OFFSET (read when sourced, for the ports),
# KUBE_PORT, ARGOCD_BIN, KUBECTL (kubectl with the admin kubeconfig, an array); the remote cluster
# and its kubeconfig (hack/local/remote-cluster.sh); install_argocd and start_argocd_processes
# (hack/local/argocd.sh); instance and tenant_secrets_role (hack/local/agent.sh); log, die,
# alive, start_bg, wait_for, check_free and stop_pid (hack/local/processes.sh).

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
	# Its Lease there at the leader-election priority level.
	"${REMOTE[@]}" apply -k "${ROOT}/artifacts/flowcontrol" >/dev/null
	lease_priority_for gitops-agent-engine "${REMOTE[@]}"
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
	start_bg agent-engine "${STATE}/bin/agent" --kubeconfig "${STATE}/gitops-agent-engine.kubeconfig" \
		--engine-kubeconfig "${STATE}/gitops-agent-engine-remote.kubeconfig" \
		--argocd-namespace "${ENGINE_NAMESPACE}" --instance engine --leader-elect-identity engine-agent \
		--argocd-redis "127.0.0.1:${ENGINE_REDIS_PORT}" \
		--local-cluster-server "https://127.0.0.1:${KUBE_PORT}" --controllers argocd \
		--repo-server "127.0.0.1:${ENGINE_REPO_SERVER_PORT}" --repo-server-plaintext --redaction-key-file "$(redaction_key)" \
		--metrics-bind-address "127.0.0.1:${ENGINE_AGENT_METRICS_PORT}" -v 2
	wait_for "the engine agent's caches" 60 agent-engine grep -q "agent started" "${LOGS}/agent-engine.log"
}

stop_engine() {
	for name in "${ENGINE_PROCESSES[@]}"; do
		stop_pid "${name}"
	done
}
