#!/usr/bin/env bash
# Runs one stage of `make test` and prints its wall time in a line hack/verify-fresh.sh collects:
#
#   hack/stage.sh NAME COMMAND [ARGS...]     →  "stage NAME: 123 s (ok)"
set -o nounset -o pipefail

name="$1"
shift
start=${SECONDS}
"$@"
rc=$?
result=ok
[[ ${rc} -eq 0 ]] || result="failed, exit ${rc}"
echo "stage ${name}: $((SECONDS - start)) s (${result})" >&2
exit "${rc}"
