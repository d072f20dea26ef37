# shellcheck shell=bash
# gitops-apiserver (hack/local-up.sh sources this file; do not run it): register_gitops_apiserver
# applies the APIServices (artifacts/local, through .local/overlay) that make kube-apiserver serve
# its groups from 127.0.0.1:${GITOPS_PORT}, start_gitops_apiserver starts the stack's gitops-apiserver (.local/bin/gitops-apiserver)
# and waits until they are Available, stop_gitops_apiserver stops it.
#
# Expects from the caller: ROOT, STATE, CERTS, GITOPS_PORT, KUBECTL (kubectl with the admin
# kubeconfig, an array); the certificates, kubeconfigs and PostgreSQL's DSN file
# (hack/local/kube.sh, hack/local/postgres.sh); log, start_bg, wait_for and stop_pid
# (hack/local/processes.sh).

# register_gitops_apiserver points the APIServices of both groups at gitops-apiserver.
register_gitops_apiserver() {
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
}

# start_gitops_apiserver starts gitops-apiserver and waits until kube-apiserver serves both
# groups through it. The e2e tests call it alone to restart the server after killing it.
start_gitops_apiserver() {
	log "starting gitops-apiserver on 127.0.0.1:${GITOPS_PORT}"
	start_bg gitops-apiserver "${STATE}/bin/gitops-apiserver" \
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

stop_gitops_apiserver() {
	stop_pid gitops-apiserver
}
