#!/usr/bin/env bash
# Checks the Prometheus rules of artifacts/monitoring (`make test` runs it as stage
# "monitoring"): `promtool check rules` on every rules file, and `promtool test rules` on every
# unit test under artifacts/monitoring/tests, which makes each alert fire on series that should
# page and stay silent on series that should not. promtool comes from Debian's prometheus
# package (hack/lib.sh ensure_promtool).
#
# What else holds the monitoring to the code, in the Go tests: test/monitoring (every alert has a
# severity, a summary, a description, a runbook section in docs/runbooks.md and a promtool test;
# the dashboard is valid), pkg/apiserver and pkg/agent (every metric a rule or a panel uses is
# exported by the binary it is scraped from), and the e2e spec "monitoring" (the same, scraped
# from the running binaries).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=hack/lib.sh
source "${ROOT}/hack/lib.sh"
ensure_promtool || exit 1

cd "${ROOT}/artifacts/monitoring"
shopt -s nullglob
rules=(*.rules.yaml)
tests=(tests/*.yaml)
if [[ ${#rules[@]} -eq 0 || ${#tests[@]} -eq 0 ]]; then
	echo "verify-monitoring: no rules or no tests under artifacts/monitoring" >&2
	exit 1
fi
promtool --version 2>&1 | head -1
promtool check rules "${rules[@]}"
promtool test rules "${tests[@]}"
