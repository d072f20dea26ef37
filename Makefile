# The two commands a newcomer needs are `make run` and `make test`; see README.md.
GO ?= go

.PHONY: all build run up stop test host-tools vet images images-verify unit e2e verify-codegen verify-monitoring verify-plugin plugin-release codegen docs bench bench-agent linearizability fuzz

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

# Everything CI runs (.ci/run calls exactly this), in hack/make-test.sh: the host tools are there,
# generated code and docs/reference are current, gofmt and vet are clean, the images' binaries
# build, the Prometheus rules check and pass their promtool unit tests, every unit test passes
# against a throwaway PostgreSQL (under the race detector where goroutines meet, hack/unit.sh),
# and the e2e suite passes against a stack of its own, whose tools are built in the background
# from the start. Each stage prints its wall time ("stage NAME: N s"); hack/verify-fresh.sh runs
# all of it on a cold machine. The targets below run one stage each.
test:
	GO=$(GO) hack/make-test.sh

host-tools:
	hack/host-tools.sh

vet:
	GO=$(GO) hack/stage.sh gofmt hack/verify-gofmt.sh
	hack/stage.sh vet sh -c '$(GO) vet -tags e2e ./... && cd bench && $(GO) vet ./...'

# The container images' contents without Docker or a registry (hack/build-images.sh): both
# binaries as build/Dockerfile builds them, into bin/images/<version>/. images-verify builds
# them again from an empty build cache and checks both builds byte-identical.
images:
	GO=$(GO) hack/stage.sh images hack/build-images.sh

images-verify:
	GO=$(GO) GITOPS_IMAGES_VERIFY=1 hack/build-images.sh

# kubectl-gitops as krew installs it (hack/release-plugin.sh): plugin-release builds every
# platform's archive and the rendered krew manifest into bin/release/<VERSION>/; verify-plugin
# builds the host's, installs it with krew from the rendered manifest and runs it through kubectl.
plugin-release:
	GO=$(GO) hack/release-plugin.sh

verify-plugin:
	GO=$(GO) GITOPS_PLUGIN_VERIFY=1 hack/stage.sh verify-plugin hack/release-plugin.sh

unit:
	GO=$(GO) hack/stage.sh unit hack/test-postgres.sh hack/unit.sh

e2e:
	hack/stage.sh e2e hack/e2e.sh

verify-codegen:
	hack/stage.sh verify-codegen hack/verify-codegen.sh

# promtool check rules and promtool test rules on artifacts/monitoring (docs/monitoring.md).
verify-monitoring:
	hack/stage.sh monitoring hack/verify-monitoring.sh

# Generated code, then the reference docs derived from it (docs/reference/api.md reads the
# generated OpenAPI).
codegen:
	hack/update-codegen.sh
	$(GO) run ./hack/docgen

# docs/reference/flags.md and api.md, from the binaries' flag sets and the OpenAPI definitions
# (hack/docgen); make unit fails when they are out of date.
docs:
	$(GO) run ./hack/docgen

# Go's fuzzing beyond the seed corpora, which `make unit` already runs as tests: each target for
# FUZZTIME, one after the other, the storage ones against a throwaway PostgreSQL each. A failing
# input is saved under the package's testdata/fuzz/ and replays in every later `go test`.
# Extra flags: make fuzz FUZZTIME=10m FUZZ_FLAGS=-parallel=1
FUZZTIME ?= 60s
FUZZ_FLAGS ?=
fuzz_go = $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(FUZZTIME) $(FUZZ_FLAGS) $(2)

fuzz:
	hack/test-postgres.sh $(call fuzz_go,FuzzContinueToken,./pkg/storage/)
	hack/test-postgres.sh $(call fuzz_go,FuzzSelectorPushdown,./pkg/storage/)
	$(call fuzz_go,FuzzListEncoder,./pkg/apiserver/)
	$(call fuzz_go,FuzzDecode,./pkg/apiserver/)

# The benchmark of issue 6 (hack/bench.sh): reuses a running local stack or starts one, runs
# bench/cmd/gitops-bench (the benchmark programs are the module bench/, whose go.mod alone carries
# the plotting library) and regenerates docs/performance.md and docs/performance.png.
# Extra flags: make bench BENCH_FLAGS='-n 1000,10000'
bench:
	hack/bench.sh

# The agent's latency (issue 5, hack/bench-agent.sh): GitOpsDeployment → Application and
# Application status → GitOpsDeployment status over 200 deployments; writes docs/agent-latency.md.
bench-agent:
	hack/bench-agent.sh

# The agent at scale (issue 18, hack/bench-agent-scale.sh): T tenants with one automated
# deployment each, T = 10, 100, 1000, on a stack of its own; writes docs/agent-scale.md.
# Extra flags: make bench-agent-scale AGENT_BENCH_SCALE_FLAGS='-tenants 10'
.PHONY: bench-agent-scale
bench-agent-scale:
	hack/bench-agent-scale.sh

# The fleet (hack/bench-agent-fleet.sh): N tenants (default 60) placed over two Argo CD instances,
# then a drain of instance main timed, on a stack of its own; writes the section "A fleet of two
# instances" of docs/agent-scale.md. Extra flags: make bench-agent-fleet AGENT_BENCH_FLEET_FLAGS='-tenants 20'
.PHONY: bench-agent-fleet
bench-agent-fleet:
	hack/bench-agent-fleet.sh

# The fleet at scale (issue 37, hack/bench-agent-fleet.sh scale; not in make test): tenants grown
# in steps (100, 300, 1000) with two deployments each, then a third, over the fleet's instances;
# time to all Synced, balance, every process's CPU and memory, watches, a drain; fits
# cost = fixed + per-tenant × T + per-deployment × T×D and extrapolates to 10,000 tenants in the
# section "The fleet at scale" of docs/agent-scale.md. Hours; wants the machine to itself.
# Extra flags: make bench-fleet-scale FLEET_SCALE_FLAGS='-tenants 50,100' FLEET_SCALE_NOTE='...'
.PHONY: bench-fleet-scale
bench-fleet-scale:
	hack/bench-agent-fleet.sh scale

# The long form of TestLinearizability (pkg/apiserver/linearizability_test.go): three replica
# processes on one PostgreSQL, with kills, freezes, PostgreSQL restarts and cut connections,
# for 10 minutes; see the Linearizability section of pkg/storage/README.md.
linearizability:
	GITOPS_LINEARIZABILITY_DURATION=10m hack/test-postgres.sh $(GO) test -count=1 -timeout 60m -run 'TestLinearizability$$' -v ./pkg/apiserver/
