#!/usr/bin/env bash
# The unit stage of `make test`: every Go test of both modules (the product and bench/), run by
# hack/test-postgres.sh against its throwaway PostgreSQL.
#
# The race detector runs where tests make goroutines meet: the storage and the server (watches,
# the committer, failover, linearizability), the agent and its controllers (informers, work
# queues, leader election) and the list encoder. The other packages (types, validation, registry
# strategies, the generators, the examples and monitoring checks) test pure functions; built
# without it they share their compiled dependencies with `go vet`, the images and the e2e stack
# (hack/make-test.sh sets one CGO_ENABLED and GOFLAGS for all of those), which on a cold machine
# saves compiling Kubernetes' and Argo CD's libraries a second time and linking thirty race
# binaries.
#
#   hack/test-postgres.sh hack/unit.sh [go test flags...]
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

race_re='^github\.com/gitops-service/gitops-service/(internal|pkg/storage|pkg/apiserver|pkg/agent|pkg/controller)(/|$)'
# go list first, so that a package that fails to load fails the stage (errexit) rather than
# drop out of the list.
all="$("${GO}" list ./...)"
mapfile -t race < <(grep -E "${race_re}" <<<"${all}")
mapfile -t plain < <(grep -vE "${race_re}" <<<"${all}")

rc=0
# -race needs cgo, whatever the caller chose for the rest.
CGO_ENABLED=1 "${GO}" test -race -count=1 "$@" "${race[@]}" || rc=1
"${GO}" test -count=1 "$@" "${plain[@]}" || rc=1
(cd bench && "${GO}" test -count=1 "$@" ./...) || rc=1
exit "${rc}"
