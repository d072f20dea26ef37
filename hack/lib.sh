# Helpers the hack/ scripts share; source it, do not run it.
#
#   module_dir MODULE         the folder of MODULE (as the current module requires it), downloaded
#                             into the module cache first when it is not there yet
#   ensure_command CMD PKG    installs the Debian package PKG when CMD is missing and we are root;
#                             otherwise stops with one line naming the package to install
#   ensure_postgres PGBIN     the same for PostgreSQL 15's server binaries in PGBIN
#   ensure_promtool           the same for promtool (Debian package prometheus), without the
#                             Prometheus server the package would start
#   ensure_protoc             protoc at PROTOC_VERSION (Debian bookworm's protobuf-compiler), which
#                             hack/update-codegen.sh needs for the protobuf of our API types
#   stack_running DIR         whether the local stack with its state in DIR is running

# `go list -m -f '{{.Dir}}'` prints nothing for a module whose files are not in the module cache
# yet (it never downloads), so a fresh machine would get "" here. `go mod download -json` fetches
# the module (or its replacement) and reports where it put it.
module_dir() {
	local dir
	dir="$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
	if [[ -z "${dir}" || ! -d "${dir}" ]]; then
		echo "cannot download Go module $1 (go mod download -json $1 gave no folder)" >&2
		return 1
	fi
	echo "${dir}"
}

apt_install() {
	echo "installing the Debian package(s) $*" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2 ||
		{ apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >&2; }
}

ensure_command() {
	local cmd="$1" pkg="$2"
	command -v "${cmd}" >/dev/null && return 0
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		apt_install "${pkg}" || true
	fi
	command -v "${cmd}" >/dev/null && return 0
	echo "${cmd} is missing: install the Debian package ${pkg} (apt-get install ${pkg})" >&2
	return 1
}

ensure_postgres() {
	local pgbin="$1"
	[[ -x "${pgbin}/initdb" ]] && return 0
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		apt_install postgresql-15 || true
	fi
	[[ -x "${pgbin}/initdb" ]] && return 0
	echo "no PostgreSQL 15 server binaries in ${pgbin}: install the Debian package postgresql-15, or set PG_BIN" >&2
	return 1
}

# ensure_promtool installs promtool, which Debian ships in the prometheus package, with nothing
# it recommends. The package's postinst starts the prometheus service through invoke-rc.d, which
# a container's /usr/sbin/policy-rc.d usually forbids (exit 101); where nothing forbids it, the
# server it started is stopped again by the PID in its pidfile (or with systemctl under systemd):
# the tests need the command, not a server.
ensure_promtool() {
	command -v promtool >/dev/null && return 0
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
		local pidfile=/run/prometheus/prometheus.pid was_running=""
		if [[ -f "${pidfile}" ]] || { command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; }; then
			was_running=1
		fi
		apt_install --no-install-recommends prometheus || true
		if [[ -z "${was_running}" ]]; then
			if [[ -f "${pidfile}" ]]; then
				local pid
				pid="$(cat "${pidfile}")"
				echo "stopping the prometheus server (PID ${pid}) that installing the package started" >&2
				kill "${pid}" 2>/dev/null || true
				rm -f "${pidfile}"
			elif [[ -d /run/systemd/system ]] && systemctl is-active --quiet prometheus 2>/dev/null; then
				echo "stopping the prometheus service that installing the package started" >&2
				systemctl stop prometheus || true
			fi
		fi
	fi
	command -v promtool >/dev/null && return 0
	echo "promtool is missing: install the Debian package prometheus (apt-get install --no-install-recommends prometheus)" >&2
	return 1
}

# ensure_protoc installs protoc (Debian's protobuf-compiler) and insists on PROTOC_VERSION: the
# descriptors protoc embeds in generated.pb.go depend on its version, and verify-codegen compares
# them byte for byte, so every machine must generate with the same one.
PROTOC_VERSION="3.21.12"
ensure_protoc() {
	ensure_command protoc protobuf-compiler || return 1
	local found
	found="$(protoc --version)"
	[[ "${found}" == "libprotoc ${PROTOC_VERSION}" ]] && return 0
	echo "protoc ${PROTOC_VERSION} is needed to generate the API's protobuf, found '${found}': install Debian bookworm's protobuf-compiler ${PROTOC_VERSION} (apt-get install protobuf-compiler)" >&2
	return 1
}

# stack_running tells whether the local stack whose state is in folder $1 has its API servers,
# Argo CD's application-controller and the agent running (by the PIDs it recorded).
stack_running() {
	local name pidfile
	for name in kube-apiserver gitops-apiserver agent argocd-application-controller; do
		pidfile="$1/pids/${name}.pid"
		[[ -f "${pidfile}" ]] && kill -0 "$(cat "${pidfile}")" 2>/dev/null || return 1
	done
}
