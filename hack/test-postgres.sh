#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL 15 server:
#
#   hack/test-postgres.sh go test -race ./pkg/storage/...
#
# The server lives in a fresh temporary directory, listens on 127.0.0.1 (free port) and on a
# unix socket in that directory, and is stopped and deleted when the command ends, whatever
# happens. The command's exit code is returned. The command sees:
#
#   GITOPS_TEST_POSTGRES_DSN      superuser DSN (database "postgres"); tests create their own databases
#   GITOPS_TEST_POSTGRES_BIN      the folder of PostgreSQL's binaries, for tests that start a server of
#                                 their own to stop, crash or reconfigure (pgtest.StartServer): never
#                                 this shared one, which other packages' tests use at the same time
#
# PostgreSQL refuses to run as root; when run as root the server runs as the "postgres" user.
# fsync and synchronous_commit keep their defaults so that measurements mean something; only
# initdb skips its fsync, since the cluster is thrown away anyway.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 command [args...]" >&2
	exit 2
fi

pgbin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_postgres "${pgbin}" || exit 1

tmp="$(mktemp -d "${TMPDIR:-/tmp}/gitops-pg.XXXXXX")"
datadir="${tmp}/data"
as_pg=()
if [[ $(id -u) -eq 0 ]]; then
	chown postgres: "${tmp}"
	as_pg=(runuser -u postgres --)
fi

pgctl=("${as_pg[@]}" "${pgbin}/pg_ctl" -D "${datadir}")
started=""
cleanup() {
	local rc=$?
	if [[ -n "${started}" && -f "${datadir}/postmaster.pid" ]]; then
		# pg_ctl reads the PID recorded in postmaster.pid; "immediate" because the data is discarded.
		"${pgctl[@]}" stop -m immediate -w >/dev/null 2>&1 || {
			pid="$(head -1 "${datadir}/postmaster.pid" 2>/dev/null || true)"
			[[ -n "${pid}" ]] && kill -9 "${pid}" 2>/dev/null || true
		}
	fi
	rm -rf "${tmp}"
	exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	echo $((20000 + RANDOM % 20000)))"

"${as_pg[@]}" "${pgbin}/initdb" --no-sync -D "${datadir}" -U postgres --auth=trust -E UTF8 --locale=C >"${tmp}/initdb.log" 2>&1 ||
	{ cat "${tmp}/initdb.log" >&2; exit 1; }

cat >>"${datadir}/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = ${port}
unix_socket_directories = '${tmp}'
max_connections = 400
shared_buffers = 128MB
log_min_messages = warning
EOF

started=1
"${pgctl[@]}" start -w -t 60 -l "${tmp}/server.log" >/dev/null ||
	{ cat "${tmp}/server.log" >&2; exit 1; }

export GITOPS_TEST_POSTGRES_DSN="postgres://postgres@127.0.0.1:${port}/postgres?sslmode=disable"
export GITOPS_TEST_POSTGRES_BIN="${pgbin}"

set +e
"$@"
rc=$?
set -e
exit "${rc}"
