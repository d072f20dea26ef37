#!/usr/bin/env bash
# Fails, listing them, when Go files of the repository are not as gofmt writes them.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
unformatted="$("$(${GO:-go} env GOROOT)/bin/gofmt" -l cmd pkg internal test hack bench)"
if [[ -n "${unformatted}" ]]; then
	echo "not gofmt-formatted (run gofmt -w on them):" >&2
	echo "${unformatted}" >&2
	exit 1
fi
