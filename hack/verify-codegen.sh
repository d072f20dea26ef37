#!/usr/bin/env bash
# Fails when generated code differs from what hack/update-codegen.sh produces, or when a file
# under pkg/generated was written by hand. It regenerates in a scratch copy of the module, so
# the working tree is never touched.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
# Checked here too, so a missing or different protoc is named in one line rather than found
# at the end of a regeneration log.
ensure_protoc

status=0
while IFS= read -r -d '' f; do
	if ! grep -q '^// Code generated .* DO NOT EDIT\.$' "${f}"; then
		echo "${f}: not generated (no 'Code generated ... DO NOT EDIT.' header); pkg/generated holds generated code only" >&2
		status=1
	fi
done < <(find pkg/generated -name '*.go' -print0)

SCRATCH="$(mktemp -d)"
trap 'rm -rf "${SCRATCH}"' EXIT
# Two copies taken at the same moment: one stays as found, the other is regenerated.
mkdir -p "${SCRATCH}/found" "${SCRATCH}/regen/bin"
tar -cf - --exclude=./bin --exclude=./.git --exclude=./.local . | tar -xf - -C "${SCRATCH}/found"
cp -a "${SCRATCH}/found/." "${SCRATCH}/regen/"
# Reuse the generators already built under bin/ (they are keyed by version).
mkdir -p "${ROOT}/bin"
rmdir "${SCRATCH}/regen/bin" && ln -s "${ROOT}/bin" "${SCRATCH}/regen/bin"

if ! "${SCRATCH}/regen/hack/update-codegen.sh" >"${SCRATCH}/codegen.log" 2>&1; then
	cat "${SCRATCH}/codegen.log" >&2
	echo "hack/update-codegen.sh failed" >&2
	exit 1
fi

for d in pkg api; do
	if ! diff -Naupr "${SCRATCH}/found/${d}" "${SCRATCH}/regen/${d}"; then status=1; fi
done

if [[ ${status} -ne 0 ]]; then
	echo "Generated code is out of date or was edited by hand: run hack/update-codegen.sh" >&2
	exit 1
fi
echo "Generated code is up to date."
