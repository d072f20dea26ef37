# shellcheck shell=bash
# The process helpers of the local stack (hack/local-up.sh sources this file; do not run it):
# log and die, start_bg (a process in the background, its output and PID under .local/), alive,
# wait_for, stop_pid (by recorded PID) and check_free (a port nobody holds). It starts nothing.
#
# Expects from the caller: PIDS and LOGS, the folders of the PID files and logs.

log() { echo "local-up: $*" >&2; }
die() {
	log "$*"
	exit 1
}

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

check_free() {
	local port="$1" what="$2"
	if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
		die "port ${port} (${what}) is in use: stop what holds it (hack/local-up.sh stop, if it is an earlier stack)"
	fi
}
