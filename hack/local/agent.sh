# shellcheck shell=bash
# The agent (hack/local-up.sh sources this file; do not run it): start_agent applies the
# admission policies, the agent's and the namespace provisioner's artifacts, the local bindings
# of its identity gitops-agent and the ArgoCDInstance "main", then starts the stack's agent (.local/bin/agent) as instance
# main's agent, the AppStudio controllers and the namespace provisioner in one process;
# stop_agent stops it. instance and tenant_secrets_role also serve the engine instance
# (hack/local/engine.sh).
#
# Expects from the caller: ROOT, STATE, LOGS, ARGOCD_NAMESPACE, AGENT_METRICS_PORT, REDIS_PORT, REPO_SERVER_PORT, KUBECTL
# (kubectl with the admin kubeconfig, an array); the agent's kubeconfig (hack/local/kube.sh);
# log, start_bg, wait_for and stop_pid (hack/local/processes.sh).

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

# redaction_key prints the file of the key that redacts Secrets' values in the manifests
# DeploymentRecords keep, made once per stack: every agent of the stack (the engine's too)
# shares it, so that a tenant moved to another instance keeps comparable markers.
redaction_key() {
	local file="${STATE}/redaction.key"
	if [[ ! -s "${file}" ]]; then
		(umask 077 && head -c 32 /dev/urandom | base64 >"${file}")
	fi
	echo "${file}"
}

# lease_priority_for SERVICEACCOUNT KUBECTL... adds gitops-service's SERVICEACCOUNT to the
# subjects of the FlowSchema of artifacts/flowcontrol, unless it is there (a restart applies
# the artifacts again, which keeps what an earlier patch added).
lease_priority_for() {
	local sa="$1"
	shift
	local names
	names=" $("$@" get flowschema gitops-service-leader-election -o jsonpath='{.spec.rules[0].subjects[*].serviceAccount.name}') "
	[[ "${names}" == *" ${sa} "* ]] && return 0
	"$@" patch flowschema gitops-service-leader-election --type json -p "[{\"op\": \"add\", \"path\": \"/spec/rules/0/subjects/-\", \"value\": {\"kind\": \"ServiceAccount\", \"serviceAccount\": {\"namespace\": \"gitops-service\", \"name\": \"${sa}\"}}}]" >/dev/null
}

start_agent() {
	# The admission policies first: they hold what the agents' cluster-wide rights may not do.
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/admission-policy" >/dev/null
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/agent" >/dev/null
	# The stack's one agent process plays instance main's agent and the controllers as
	# gitops-agent: its Leases too go at the leader-election priority level.
	lease_priority_for gitops-agent "${KUBECTL[@]}"
	"${KUBECTL[@]}" apply -k "${ROOT}/artifacts/namespace-provisioner" >/dev/null
	bind_local_agent | "${KUBECTL[@]}" apply -f - >/dev/null
	instance main "${ARGOCD_NAMESPACE}" | "${KUBECTL[@]}" apply -f - >/dev/null
	log "starting the agent"
	# The name in the Leases is fixed so that the agent, restarted after a crash (the e2e suite
	# kills it), takes its Leases back at once instead of waiting out the lease duration.
	# --placement-max-owner-share 0.002 lets one owner (managed-gitops.redhat.com/tenant-owner)
	# have 2 of each instance's 1000 places: the e2e suite sees the share hold with a handful of
	# namespaces, and every other tenant of the suite is its own owner.
	# --argocd-redis is the Redis of the stack's Argo CD, whose application-controller keeps
	# each resource's health there only, as Argo CD 3.x does (hack/local/argocd.sh).
	# Records keep the manifests their commit renders, from the instance's repo-server.
	start_bg agent "${STATE}/bin/agent" --kubeconfig "${STATE}/gitops-agent.kubeconfig" \
		--argocd-namespace "${ARGOCD_NAMESPACE}" --instance main --leader-elect-identity local-agent \
		--argocd-redis "127.0.0.1:${REDIS_PORT}" \
		--controllers '*,namespaceprovisioner' --placement-max-owner-share 0.002 \
		--repo-server "127.0.0.1:${REPO_SERVER_PORT}" --repo-server-plaintext --redaction-key-file "$(redaction_key)" \
		--hold-new-commit-interval 10s \
		--metrics-bind-address "127.0.0.1:${AGENT_METRICS_PORT}" -v 2
	wait_for "the agent's caches" 60 agent grep -q "agent started" "${LOGS}/agent.log"
}

stop_agent() {
	stop_pid agent
}
