# The two commands a newcomer needs are `make run` and `make test`; see README.md.
GO ?= go

.PHONY: all build run up stop test host-tools vet unit e2e verify-codegen codegen bench bench-agent

all: build

build:
	$(GO) build ./...

# The local stack (hack/local-up.sh): `run` stays in the foreground until Ctrl-C, `up` returns
# once the API is served, `stop` stops what `up` started.
run:
	hack/local-up.sh run

up:
	hack/local-up.sh up

stop:
	hack/local-up.sh stop

# Everything CI runs (.ci/run calls exactly this): the host tools are there, generated code is
# current, vet is clean, every unit test passes under the race detector against a throwaway
# PostgreSQL, and the e2e suite passes against a stack of its own. Each stage prints its wall
# time ("stage NAME: N s"); hack/verify-fresh.sh runs all of it on a cold machine.
test: host-tools verify-codegen vet unit e2e

host-tools:
	hack/host-tools.sh

vet:
	hack/stage.sh vet $(GO) vet ./...
	hack/stage.sh vet-e2e $(GO) vet -tags e2e ./test/e2e/...

unit:
	hack/stage.sh unit hack/test-postgres.sh $(GO) test -race -count=1 ./...

e2e:
	hack/stage.sh e2e hack/e2e.sh

verify-codegen:
	hack/stage.sh verify-codegen hack/verify-codegen.sh

codegen:
	hack/update-codegen.sh

# The benchmark of issue 6 (hack/bench.sh): reuses a running local stack or starts one, runs
# cmd/gitops-bench and regenerates docs/performance.md and docs/performance.png.
# Extra flags: make bench BENCH_FLAGS='-n 1000,10000'
bench:
	hack/bench.sh

# The agent's latency (issue 5, hack/bench-agent.sh): GitOpsDeployment → Application and
# Application status → GitOpsDeployment status over 200 deployments; writes docs/agent-latency.md.
bench-agent:
	hack/bench-agent.sh
