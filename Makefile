# navarch — build, generate, lint and test.
#
# Tools are installed into ./bin at pinned versions; the Kubernetes binaries are built once into
# a cache outside the repository (hack/k8s/build.sh, $NAVARCH_CACHE_DIR, default ~/.cache/navarch).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := build

CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# Test packages run in parallel up to this many at once; each integration package starts its
# own control plane (~330 MB each), which 2 cores and 24 GiB handle comfortably.
TEST_PARALLEL ?= 2
TEST_TIMEOUT ?= 30m
# make test keeps its whole output here and, when a test fails, ends by listing the failures, so
# that the last lines of a CI log name them whatever the controllers logged before.
TEST_LOG ?= $(BIN)/test.log

##@ Development

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs into config/crd/bases and RBAC into config/rbac.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=navarch-controller paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt: ## Format the Go code.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (config in .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests ## Fail when generated files are stale or go.mod is untidy.
	go mod tidy
	cd hack/k8s && go mod tidy
	@if [ -n "$$(git status --porcelain -- api config go.mod go.sum hack/k8s/go.mod hack/k8s/go.sum)" ]; then \
		echo "verify: generated files or go.mod are stale; run 'make generate manifests' and 'go mod tidy' and commit:"; \
		git status --porcelain -- api config go.mod go.sum hack/k8s/go.mod hack/k8s/go.sum; \
		git --no-pager diff --stat -- api config go.mod go.sum hack; \
		exit 1; \
	fi

##@ Build

.PHONY: build
build: ## Build bin/navarch (static: see docs/scaling.md, "Memory").
	CGO_ENABLED=0 go build -o $(BIN)/navarch ./cmd/navarch

.PHONY: k8s
k8s: ## Build the Kubernetes binaries into the cache (a no-op when the cache is complete).
	@hack/k8s/build.sh >/dev/null

.PHONY: git
git: ## Install git (the test Git server runs git http-backend) and the OpenSSH client (Git over SSH) when missing.
	@command -v git >/dev/null 2>&1 || { echo "installing git"; apt-get update -qq && apt-get install -y -qq git; }
	@command -v ssh >/dev/null 2>&1 || { echo "installing openssh-client"; apt-get update -qq && apt-get install -y -qq openssh-client; }

.PHONY: chromium
chromium: ## Install Chromium (the dashboard's tests drive it headless, internal/browser) when missing.
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1 || \
		{ echo "installing chromium"; apt-get update -qq && apt-get install -y -qq chromium; }

##@ Test

.PHONY: test
test: git k8s chromium ## Run every unit, integration and e2e test against real local clusters, then short fuzz runs.
	@mkdir -p $(dir $(TEST_LOG))
	go test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) ./... 2>&1 | tee $(TEST_LOG) || \
		{ echo; echo "make test: these tests failed (the whole output is in $(TEST_LOG)):"; \
		  grep -E -e '^\s*--- FAIL' -e '^FAIL' -e '^panic:' -e '^\s+[A-Za-z0-9_]+_test\.go:[0-9]+:' $(TEST_LOG) | cut -c1-800 | tail -80; exit 1; }
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

# Fuzz targets as package:Target. `make fuzz` runs each for FUZZTIME; `make test` runs each for
# a fixed number of inputs (a count, not a duration: a timed run fails when the baseline
# coverage pass alone outlasts it on a loaded machine), so a regression shows up in CI.
FUZZ_TARGETS := ./templates:FuzzFastTemplate ./templates:FuzzGoTemplate ./generators:FuzzMatchPath \
	./internal/gitrepo:FuzzParseLsRemote ./internal/gitrepo:FuzzParseLsTree ./fleet/render:FuzzRender \
	./internal/jsontree:FuzzParsePointer ./internal/actions:FuzzParseResource ./internal/delta:FuzzRoundTrip
FUZZTIME ?= 2m
TEST_FUZZTIME ?= 2000x

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 2m each).
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		go test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

.PHONY: bench
bench: k8s ## Run the performance benchmarks (budgets in bench/README.md); results go in bench/RESULTS.md.
	go test -run='^$$' -bench=. -benchmem -count=1 -timeout 60m ./internal/appset/ ./templates/ ./generators/ ./internal/scm/ ./internal/dashboard/ ./internal/compact/ ./internal/delta/
	go test -run='^$$' -bench=. -benchtime=1x -count=1 -timeout 60m ./internal/controller/
	go test -run='^$$' -bench=. -benchtime=1x -count=1 -timeout 60m ./fleet/ ./fleet/clustercache/
	go test -run='^$$' -bench=. -benchtime=3x -count=1 -timeout 60m ./fleet/source/

.PHONY: bench-fleet
bench-fleet: k8s ## Run the fleet-scale benchmark: 100 Clusters × 10,000 Applications on 5 apiservers, navarch controller as its own process (bench/README.md).
	go test -run='^$$' -bench=BenchmarkFleet -benchtime=1x -count=1 -timeout 90m -v ./bench/fleet/

.PHONY: bench-requests
bench-requests: k8s ## Measure what each kind of request a sync sends costs a workload cluster's processes (bench/README.md).
	go test -run='^$$' -bench=BenchmarkRequestCosts -benchtime=1x -count=1 -timeout 30m -v ./bench/fleet/

.PHONY: demo
demo: git k8s build ## Run the examples on a local fleet (three workload clusters and the controller) until every Application is Synced and Healthy.
	$(BIN)/navarch demo --examples examples

# The dashboard's browser tests write their screenshots here when NAVARCH_SCREENSHOTS is set.
SCREENSHOTS_DIR ?= $(CURDIR)/docs/images

.PHONY: screenshots
screenshots: git k8s chromium ## Run the dashboard's browser tests, writing their screenshots to SCREENSHOTS_DIR (default docs/images).
	NAVARCH_SCREENSHOTS=$(SCREENSHOTS_DIR) go test -count=1 -run 'TestDashboard' ./e2e/

##@ Tools

$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(GOLANGCI_LINT):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@
