package testdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Connect opens a session on url named app (its application_name), closed
// at cleanup. Tests stage with it the sessions a diagnostic or an action
// must recognise: a lock holder, a waiter, a worker running a job.
func Connect(t testing.TB, url, app string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	cfg.RuntimeParams["application_name"] = app
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect as %q: %v", app, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// HoldLock takes an ACCESS EXCLUSIVE lock on table in a transaction of a
// session of its own (application_name "<table>-lock-holder") and returns
// the function that releases it (rolls back); the session closes at
// cleanup. Tests use it to stop a process at the step that needs table.
func HoldLock(t testing.TB, url, table string) (release func()) {
	t.Helper()
	conn := Connect(t, url, table+"-lock-holder")
	if _, err := conn.Exec(context.Background(), "BEGIN; LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatalf("lock %s: %v", table, err)
	}
	return func() {
		if _, err := conn.Exec(context.Background(), "ROLLBACK"); err != nil {
			t.Errorf("release the lock on %s: %v", table, err)
		}
	}
}

// WaitOnLock leaves a session named app (a job's tag, say) waiting for
// table, which a HoldLock session holds, until the test ends, and returns
// the waiter's pid. The caller waits for it to show as waiting
// (WaitBackend) before it looks.
func WaitOnLock(t testing.TB, url, table, app string) int32 {
	t.Helper()
	release := HoldLock(t, url, table)
	waiter := Connect(t, url, app)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = waiter.Exec(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize())
	}()
	t.Cleanup(func() {
		release()
		<-done
	})
	return int32(waiter.PgConn().PID())
}

// WaitBackend waits until exactly one backend named app in on's database
// matches cond, a boolean SQL expression over pg_stat_activity such as
// "wait_event_type = 'Lock'", asking through on: a pool or a session of the
// test's database outside a transaction (a transaction reads
// pg_stat_activity once). Only on's database counts: tests running beside
// it on the same server use the same names ("migrate", "billing"), and a
// backend of theirs would be taken for this test's, or make two. It fails
// the test when that has not happened within 30s.
func WaitBackend(t testing.TB, on interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, app, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := on.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND ("+cond+")", app).Scan(&n)
		if err != nil {
			t.Fatalf("look for backend %q: %v", app, err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %q did not reach %s within 30s", app, cond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SetDatabaseDefault makes every new session of url's database start with
// setting name at value (ALTER DATABASE … SET), as a DBA's default for the
// database would; sessions open already keep what they have.
func SetDatabaseDefault(t testing.TB, url, name, value string) {
	t.Helper()
	ctx := context.Background()
	conn := Connect(t, url, "testdb-setup")
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatalf("read the test database's name: %v", err)
	}
	sql := "ALTER DATABASE " + pgx.Identifier{db}.Sanitize() + " SET " + pgx.Identifier{name}.Sanitize() +
		" = '" + strings.ReplaceAll(value, "'", "''") + "'"
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("set %s = %s on the test database: %v", name, value, err)
	}
}
