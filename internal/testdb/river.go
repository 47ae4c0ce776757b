package testdb

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// RiverPool is a fresh database migrated by the console and by River's own
// migrator (rivermigrate), as a team running both would have it, with a
// pool of up to 12 connections closed at cleanup: a River client holds
// connections of its own (LISTEN, the elector, the completer), and a pool
// of a few would starve it on a busy machine.
func RiverPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u, err := url.Parse(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", "12")
	u.RawQuery = q.Encode()
	pool := Pool(t, u.String())
	RiverMigrate(t, pool)
	return pool
}

// RiverMigrate migrates River's schema on pool's database with River's
// own migrator.
func RiverMigrate(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: RiverQuiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatalf("migrate River's schema: %v", err)
	}
}

// RiverQuiet is a logger for River's clients and migrator in tests: it
// drops what they log.
var RiverQuiet = slog.New(slog.NewTextHandler(io.Discard, nil))
