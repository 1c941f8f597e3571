# multicloud-ccm. `make test` is what CI runs; `make build PROVIDERS=aws`
# builds a slim binary with only the named backends.

GO        ?= go
# PROVIDERS empty = every backend; otherwise a comma-separated list.
PROVIDERS ?=
ifeq ($(strip $(PROVIDERS)),)
TAGS :=
else
TAGS := providerless,$(PROVIDERS)
endif
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       ?= bin/multicloud-ccm
FUZZTIME  ?= 15s
# Go's default per-binary test timeout (10m) is too short for a cold
# control-plane build inside a test; make test builds it first anyway.
TEST_TIMEOUT ?= 30m

.PHONY: all build controlplane helm test unit fuzz lint clean

all: build

# Same build flags as the tests use, so it shares their build cache; the
# Dockerfile makes the static, trimmed release binary.
build:
	$(GO) build -tags "$(TAGS)" -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/multicloud-ccm
	@$(abspath $(BIN)) version

# kube-apiserver and etcd from the Go module proxy, into bin/ (cached by version).
controlplane:
	@bash test/controlplane/build.sh >/dev/null

# Helm from the Go module proxy, into bin/ (cached by version), for the
# chart tests (test/chart).
helm:
	@bash test/chart/build.sh >/dev/null

# Everything: unit, fuzz smoke, and the e2e tests against a real control plane.
test: controlplane helm lint unit fuzz

# -parallel 4: test/e2e runs each cloud's conformance run (and each hybrid
# pair's) against a control plane of its own, side by side; they mostly
# wait on the manager's periods (about a third of 2 cores busy at 2 at a
# time), so four at a time keeps a warm run well under 20 minutes.
PARALLEL  ?= 4

unit:
	$(GO) test -count=1 -parallel $(PARALLEL) -timeout $(TEST_TIMEOUT) ./...

fuzz:
	$(GO) test ./config -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

lint:
	@bash hack/check-large-files.sh
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2efake ./cmd/... ./test/...
	$(GO) vet -tags providerless ./cmd/... ./providers/...

clean:
	rm -rf bin/multicloud-ccm

# Which emulated cloud demo and bench run against: any cloud with a
# conformance adapter in test/conformance/clouds, or a comma-separated list
# (CLOUD=openstack,aws) for a hybrid cluster of them, the first the default
# load-balancer cloud.
CLOUD     ?= aws

# The sandbox: control plane + the CLOUD's emulator (each one's, for a
# list) + the CCM, on loopback. `make demo ONCE=1` prints the report and exits.
.PHONY: demo
demo:
	$(GO) run ./test/sandbox/demo -cloud $(CLOUD) $(if $(ONCE),-once)

# docs/reference from the code (hack/refdocs: backends, flags, metrics, Events, cloud-config);
# the freshness test in hack/refdocs fails `make test` when they are stale.
.PHONY: docs
docs:
	$(GO) generate ./docs

# Scale benchmarks of the CLOUD's backend against its emulator (minutes);
# see README "Performance". A CLOUD list runs BenchmarkHybrid only (each
# cloud alone, then one manager serving them all; about 20 minutes).
.PHONY: bench
bench: controlplane
	CLOUD=$(CLOUD) $(GO) test ./test/bench -run '^$$' -bench . -benchtime 1x -timeout 60m

# The switch between a cloud's upstream CCM and ours, both ways, against
# the CLOUD's emulator (test/upstreamcheck; CLOUD=all for every cloud, one
# after another). The first run builds the upstream CCM from the Go module
# proxy into bin/ (3-9 minutes on 2 cores). Not part of `make test`.
.PHONY: upstream-check
upstream-check: controlplane
	$(GO) test -tags upstreamcheck ./test/upstreamcheck -run 'TestUpstreamCheck/$(if $(filter all,$(CLOUD)),,$(CLOUD)$$)' -v -count=1 -timeout 90m
