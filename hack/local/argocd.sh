# shellcheck shell=bash
# Argo CD (hack/local-up.sh sources this file; do not run it): start_argocd installs the stack's
# Argo CD, instance "main" of the fleet, and starts its Redis, argocd-repo-server and
# argocd-application-controller (state under .local/argocd and .local/redis); stop_argocd stops
# them. install_argocd and start_argocd_processes also serve the engine instance
# (hack/local/engine.sh).
#
# Expects from the caller: ROOT, STATE, ARGOCD_NAMESPACE, REDIS_PORT, REPO_SERVER_PORT,
# REPO_SERVER_METRICS_PORT, CONTROLLER_METRICS_PORT, ARGOCD_BIN (the folder hack/build-argocd.sh
# prints), KUBECTL (kubectl with the admin kubeconfig, an array); the kubeconfig of
# argocd-application-controller (hack/local/kube.sh); log, start_bg, wait_for and stop_pid
# (hack/local/processes.sh).

# start_argocd installs the stack's Argo CD, instance "main" of the fleet, in ${ARGOCD_NAMESPACE}
# of the stack's cluster, and starts its processes.
start_argocd() {
	log "installing Argo CD's CRDs and settings in ${ARGOCD_NAMESPACE}"
	install_argocd KUBECTL "${ARGOCD_NAMESPACE}" "${ROOT}/artifacts/argocd-local"
	# shellcheck disable=SC2153 # REDIS_PORT is the caller's (hack/local-up.sh), not a misspelt redis_port
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
# --persist-resource-health=false is Argo CD 3.x's default (controller.resource.health.persist):
# each resource's health is kept in the resource tree in Redis, not in the Application's status,
# and the agent reads it there (its --argocd-redis, hack/local/agent.sh).
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
		--persist-resource-health=false --logformat text
	wait_for "argocd-application-controller${suffix}" 60 "argocd-application-controller${suffix}" \
		curl -sf "http://127.0.0.1:${controller_metrics}/healthz"
}

stop_argocd() {
	for name in argocd-application-controller argocd-repo-server redis; do
		stop_pid "${name}"
	done
}
