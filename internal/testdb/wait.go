package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Eventually polls cond every 10ms until it holds, and fails the test
// naming what it waited for when within passes first. Tests wait on the
// state they need with it instead of sleeping a guessed time.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		<-tick.C
	}
}

// Count runs query, which returns one integer (a count(*)), on db and
// returns it; a failed query fails the test.
func Count(t testing.TB, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("count with %q: %v", query, err)
	}
	return n
}
