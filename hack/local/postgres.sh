# shellcheck shell=bash
# PostgreSQL of the local stack (hack/local-up.sh sources this file; do not run it): start_postgres
# makes its data folder at first start (.local/postgres), starts it on 127.0.0.1:${PG_PORT} through
# pg_ctl, as the postgres user when we are root, records its PID in .local/pids/postgres.pid,
# creates the database gitops and writes its DSN to .local/postgres.dsn; stop_postgres stops it.
#
# Expects from the caller: STATE, PIDS, LOGS, PG_PORT, PG_BIN; GITOPS_LOCAL_PG_SHARED_BUFFERS
# (optional); log and die (hack/local/processes.sh).

as_postgres() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

start_postgres() {
	log "starting PostgreSQL on 127.0.0.1:${PG_PORT}"
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

stop_postgres() {
	if [[ -f "${STATE}/postgres/postmaster.pid" ]]; then
		as_postgres "${PG_BIN}/pg_ctl" -D "${STATE}/postgres" stop -m fast -w >/dev/null 2>&1 || true
	fi
	rm -f "${PIDS}/postgres.pid"
}
