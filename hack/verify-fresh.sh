#!/usr/bin/env bash
# Runs `make test` as a newcomer's first run would: in a fresh clone of the committed HEAD, with
# an empty Go module cache, an empty build cache and no bin/, all in temporary folders that are
# removed afterwards. It prints the wall time of each stage of `make test` and of the whole.
# Not part of `make test`: run it before resolving an issue that changes the build, scripts or
# dependencies (about 35 minutes on 2 cores).
#
#   hack/verify-fresh.sh [REF]     REF defaults to HEAD; uncommitted changes are not included
#
# VERIFY_FRESH_KEEP=1 keeps the temporary folder (clone with its bin/, module and build caches) and
# prints its path, so that a new machine's first run can also warm the working tree's tools.
#
# Its e2e stack uses ports 3000 above `make run`'s (GITOPS_E2E_PORT_OFFSET overrides that), so it
# can run beside `make run` and beside a `make test` of the working tree.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REF="${1:-HEAD}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/gitops-fresh.XXXXXX")"
cleanup() {
	local rc=$?
	if [[ "${VERIFY_FRESH_KEEP:-0}" == 1 ]]; then
		echo "verify-fresh: kept ${TMP}" >&2
		exit "${rc}"
	fi
	# The module cache is read-only by design; make it removable first.
	chmod -R u+w "${TMP}" 2>/dev/null || true
	rm -rf "${TMP}"
	exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# mktemp makes the folder private; the local stack's PostgreSQL runs as the postgres user when we
# are root, and must reach its data folder inside the clone.
chmod 755 "${TMP}"

commit="$(git -C "${ROOT}" rev-parse --verify "${REF}^{commit}")"
git clone -q --no-local "${ROOT}" "${TMP}/repo"
git -C "${TMP}/repo" checkout -q "${commit}"

export GOMODCACHE="${TMP}/gomodcache" GOCACHE="${TMP}/gocache" GOPATH="${TMP}/gopath"
export GOFLAGS="" GITOPS_E2E_PORT_OFFSET="${GITOPS_E2E_PORT_OFFSET:-3000}"
echo "verify-fresh: make test at ${commit:0:12} in ${TMP}/repo, empty GOMODCACHE, GOCACHE and bin/" >&2

start=${SECONDS}
set +e
(cd "${TMP}/repo" && make test) 2>&1 | tee "${TMP}/make-test.log"
rc=${PIPESTATUS[0]}
set -e
total=$((SECONDS - start))

echo
echo "verify-fresh: make test at ${commit:0:12} on a cold machine, $(nproc) cores:"
grep -E '^stage [^ ]+: [0-9]+ s' "${TMP}/make-test.log" | sed 's/^/  /'
printf '  total: %d s (%dm%02ds), exit %d\n' "${total}" $((total / 60)) $((total % 60)) "${rc}"
exit "${rc}"
