# shellcheck shell=bash
# The remote cluster (hack/local-up.sh sources this file; do not run it): start_remote_cluster
# starts its etcd, kube-apiserver and kube-controller-manager and writes its admin kubeconfig,
# stop_remote_cluster stops them.
#
# Expects from the caller: STATE and OFFSET (read when sourced, for the ports); log, start_bg,
# wait_for, check_free and stop_pid (hack/local/processes.sh); sign and make_ca
# (hack/local/kube.sh).

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
