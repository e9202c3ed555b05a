# pgw's front door. Every target works in a fresh clone with only Go installed;
# `make test` uses a real redis-server when one is on PATH (.ci/run installs it).

GO ?= go

# bench/ is its own module whose go.sum must also cover the root module's
# dependencies (it imports pgw through `replace => ../`). -mod=mod lets the go
# command add a checksum the root gained since bench/go.sum was last
# refreshed, instead of failing `make test` for an unrelated root change.
BENCH_GO = cd bench && GOFLAGS="-mod=mod $$GOFLAGS" $(GO)

# observe/otel is its own module too (so the library's go.mod names no
# OpenTelemetry package), with the same replace and the same -mod=mod.
OTEL_GO = cd observe/otel && GOFLAGS="-mod=mod $$GOFLAGS" $(GO)

# examples/sdk is its own module too (the SDKs are its dependencies, never
# the library's), with the same replace and the same -mod=mod reason.
SDK_GO = cd examples/sdk && GOFLAGS="-mod=mod $$GOFLAGS" $(GO)

.PHONY: test demo demo-tools demo-otel bench lint cover soak soak-short

## test: vet bench/ (its own module, so it must at least compile), then run
## every test of the root module under the race detector, then the
## allocation bounds (the race detector empties sync.Pools, so those tests
## skip under it and run once more without it), then the SDK
## examples' tests (examples/sdk, its own module). bench/ holds no
## tests that run here: its benchmarks are for `make bench`.
test:
	$(BENCH_GO) vet ./...
	$(GO) test -race ./...
	$(GO) test -count=1 -run 'Allocates' .
	$(OTEL_GO) test -race ./...
	$(SDK_GO) test -race ./...

## demo: run the quickstart: governed calls against in-process fake upstreams.
demo:
	$(GO) run ./examples/quickstart

## demo-otel: the same kind of governed calls reported by the OpenTelemetry
## observer (observe/otel): every span as the stdout exporter prints it, then
## the trace drawn as a tree.
demo-otel:
	$(OTEL_GO) run ./example/quickstart
## demo-tools: a tool-calling round trip that fails over from an
## OpenAI-compatible source to an Anthropic one, against an in-process fake.
demo-tools:
	$(GO) run ./examples/tools

## bench: run bench/ (pgw against sony/gobreaker v2 and failsafe-go, plus the
## distributed comparison on a local redis-server when one exists) and print
## ns/op, allocs/op and the pgw/peer ratios; then what one redis-server can
## govern for one source when it, not the client, is the limit
## (gate/redis's ScriptCapacity: calls/s, server µs and CPU per call).
bench:
	$(BENCH_GO) run ./cmd/ratios
	$(GO) test -run '^$$' -bench ScriptCapacity -benchtime 200000x -count 3 ./gate/redis/

## soak: a bounded soak on this machine, loopback only, at most 2 minutes:
## 4 worker processes × 64 goroutines on a redis-server it starts, against
## fake upstreams going healthy → 5xx storm → 429 storm → recovery → flaky;
## prints calls, outcomes, p50/p99 overhead and invariant violations, and
## fails on any. SOAK_FLAGS adds flags (-duration 120s, -redis host:port, -v).
soak:
	$(GO) run ./cmd/pgw-soak $(SOAK_FLAGS)

## soak-short: the soak's CI form: 10 s, 2 processes × 16 goroutines.
soak-short:
	$(GO) run ./cmd/pgw-soak -duration 10s -procs 2 -goroutines 16 -think 100ms

## lint: gofmt must list nothing; go vet and staticcheck must be clean in every
## module.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then \
		echo "gofmt -l lists files that need formatting:"; echo "$$unformatted"; exit 1; \
	fi
	$(GO) vet ./...
	$(BENCH_GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(BENCH_GO) run $(STATICCHECK) ./...
	$(OTEL_GO) vet ./...
	$(OTEL_GO) run $(STATICCHECK) ./...
	$(SDK_GO) vet ./...
	$(SDK_GO) run $(STATICCHECK) ./...

## cover: test with a coverage profile (kept outside the tree) and print the
## total; `go tool cover -html=$(COVER_OUT)` shows it line by line.
COVER_OUT ?= $(or $(TMPDIR),/tmp)/pgw-cover.out
cover:
	$(GO) test -race -coverprofile=$(COVER_OUT) ./...
	$(GO) tool cover -func=$(COVER_OUT) | tail -n 1

## bench-hedge: the loopback hedging experiment (bench/cmd/hedge, under a
## minute): two fake sources with a heavy-tailed time to first chunk; p50/p95/
## p99 and extra attempts without hedging, with fixed and adaptive hedging,
## with latency-aware choice, and both.
.PHONY: bench-hedge
bench-hedge:
	$(BENCH_GO) run ./cmd/hedge
