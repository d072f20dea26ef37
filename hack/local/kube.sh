# shellcheck shell=bash
# The stack's Kubernetes control plane (hack/local-up.sh sources this file; do not run it): its
# certificates (ensure_certs: a CA, a front-proxy CA, serving certificates and the ServiceAccount
# key under .local/certs), static tokens (ensure_tokens: .local/tokens.csv) and kubeconfigs
# (ensure_kubeconfigs: .local/*.kubeconfig), then etcd and kube-apiserver (start_kube_apiserver)
# and kube-controller-manager (start_kube_controller_manager), and stop_kube. sign and make_ca
# also issue the remote cluster's certificates (hack/local/remote-cluster.sh).
#
# Expects from the caller: STATE, CERTS, ARGOCD_NAMESPACE, ETCD_PORT, ETCD_PEER_PORT, KUBE_PORT,
# KCM_PORT; KUBECTL (kubectl with the admin kubeconfig, an array) before start_kube_apiserver;
# log, start_bg, wait_for and stop_pid (hack/local/processes.sh).

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

# start_kube_apiserver KUBEBIN starts etcd and kube-apiserver, the binaries in KUBEBIN, and
# waits until kube-apiserver is ready.
start_kube_apiserver() {
	local kubebin="$1"
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
}

# start_kube_controller_manager KUBEBIN starts kube-controller-manager, the binary in KUBEBIN.
start_kube_controller_manager() {
	local kubebin="$1"
	log "starting kube-controller-manager"
	start_bg kube-controller-manager "${kubebin}/kube-controller-manager" \
		--kubeconfig "${STATE}/kubeconfig" --authentication-kubeconfig "${STATE}/kubeconfig" \
		--authorization-kubeconfig "${STATE}/kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "${KCM_PORT}" --leader-elect=false \
		--service-account-private-key-file "${CERTS}/sa.key" --root-ca-file "${CERTS}/ca.crt" \
		--use-service-account-credentials=false
}

stop_kube() {
	for name in kube-controller-manager kube-apiserver etcd; do
		stop_pid "${name}"
	done
}
