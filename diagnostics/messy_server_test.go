package diagnostics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// Every check answers on a server in the states where catalog views return
// NULL: a walsender of a streaming standby and a logical walsender, a
// logical slot and a physical slot that never reserved WAL, background,
// autovacuum and parallel workers, an idle-in-transaction session, a lock
// chain rooted in a session and one rooted in a prepared transaction, a
// reader without pg_read_all_stats (other roles' rows are mostly NULL to
// it), and a prepared transaction (with a session) in a database created
// after a findings round's snapshot began, so the round cannot resolve its
// database. Each check is named in the failure.
func TestEveryCheckAnswersOnAMessyServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, map[string]string{"autovacuum_naptime": "1s"})
	standby := testdb.Standby(t, primary, nil, "messy-standby")
	url := primary.URL("postgres")
	admin := connect(t, url, "messy-admin")
	for _, q := range []string{
		`CREATE EXTENSION pg_stat_statements`,
		`CREATE TABLE chain (id int PRIMARY KEY, n int)`,
		`INSERT INTO chain VALUES (1, 0), (2, 0)`,
		`CREATE TABLE copied (id int)`,
		`CREATE TABLE big AS SELECT g AS id FROM generate_series(1, 100000) AS g`,
		// A vacuum throttled to a page every 100ms keeps an autovacuum
		// worker busy on this table for as long as the test runs.
		`CREATE TABLE churn (id int, pad text) WITH (autovacuum_vacuum_cost_delay = 100,
			autovacuum_vacuum_cost_limit = 1, autovacuum_vacuum_threshold = 0,
			autovacuum_vacuum_scale_factor = 0, autovacuum_analyze_threshold = 0,
			autovacuum_analyze_scale_factor = 0)`,
		`INSERT INTO churn SELECT g, repeat('x', 200) FROM generate_series(1, 50000) AS g`,
		`DELETE FROM churn WHERE id % 2 = 0`,
		`SELECT pg_create_logical_replication_slot('messy_logical', 'pgoutput')`,
		`SELECT pg_create_physical_replication_slot('messy_unreserved')`,
		`CREATE ROLE messy_reader LOGIN`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA public TO messy_reader`,
		`INSERT INTO jobs (queue, kind) VALUES ('messy', 'k')`,
	} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	// A logical walsender: a replication connection to a database, idle.
	rc, err := pgconn.ParseConfig(url + "&replication=database&application_name=messy-walsender")
	require.NoError(t, err)
	walsender, err := pgconn.ConnectConfig(ctx, rc)
	require.NoError(t, err)
	t.Cleanup(func() { walsender.Close(context.Background()) })

	// A lock chain: the idle-in-transaction holder, a waiter on its row, a
	// waiter on the table behind both.
	holder := connect(t, url, "messy-holder")
	_, err = holder.Exec(ctx, "BEGIN; UPDATE chain SET n = n + 1 WHERE id = 1")
	require.NoError(t, err)
	blocked(t, connect(t, url, "messy-row-waiter"), "UPDATE chain SET n = n + 1 WHERE id = 1")
	testdb.WaitBackend(t, admin, "messy-row-waiter", "wait_event_type = 'Lock'")
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })
	// A chain rooted in a prepared transaction (pid 0 to pg_blocking_pids).
	preparer := connect(t, url, "messy-preparer")
	_, err = preparer.Exec(ctx, "BEGIN; UPDATE chain SET n = n + 1 WHERE id = 2; PREPARE TRANSACTION 'messy-root'")
	require.NoError(t, err)
	blocked(t, connect(t, url, "messy-prepared-waiter"), "UPDATE chain SET n = n + 1 WHERE id = 2")
	t.Cleanup(func() { admin.Exec(context.Background(), "ROLLBACK PREPARED 'messy-root'") })
	testdb.WaitBackend(t, admin, "messy-prepared-waiter", "wait_event_type = 'Lock'")
	// Last, as every later lock on the table queues behind it.
	blocked(t, connect(t, url, "messy-table-waiter"), "BEGIN; LOCK TABLE chain IN ACCESS EXCLUSIVE MODE")

	// A parallel query whose workers stay up: every row sleeps.
	parallel := connect(t, url, "messy-parallel")
	_, err = parallel.Exec(ctx, `SET max_parallel_workers_per_gather = 2; SET parallel_setup_cost = 0;
		SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET parallel_leader_participation = off`)
	require.NoError(t, err)
	blocked(t, parallel, "SELECT count(*) FROM big WHERE pg_sleep(0.01) IS NOT NULL")

	// A COPY that stays open, whose counters other roles see as NULL.
	copier := connect(t, url, "messy-copier")
	pr, pw := io.Pipe()
	copyDone := make(chan struct{})
	go func() {
		defer close(copyDone)
		copier.PgConn().CopyFrom(context.Background(), pr, "COPY copied FROM STDIN")
	}()
	t.Cleanup(func() {
		pw.CloseWithError(errors.New("the test ended"))
		<-copyDone
	})
	_, err = pw.Write([]byte(strings.Repeat("1\n", 100)))
	require.NoError(t, err)

	for _, bt := range []string{"parallel worker", "autovacuum worker", "walsender", "logical replication launcher"} {
		testdb.Eventually(t, time.Minute, "a backend of type "+bt, func() bool {
			return testdb.Count(t, admin, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = $1", bt) > 0
		})
	}
	testdb.WaitBackend(t, admin, "messy-table-waiter", "wait_event_type = 'Lock'")
	testdb.Eventually(t, time.Minute, "the COPY's progress", func() bool {
		return testdb.Count(t, admin, "SELECT count(*) FROM pg_stat_progress_copy") > 0
	})

	t.Run("EveryCheckAsEachRole", func(t *testing.T) {
		for _, as := range []string{"superuser", "messy_reader"} {
			u := url
			if as != "superuser" {
				u = testdb.AsUser(t, url, as)
			}
			d := open(t, u, diagnostics.Config{StandbyURLs: []string{standby.URL("postgres")}})
			info, err := d.ServerInfo(ctx)
			require.NoError(t, err)
			ran := map[string]bool{}
			var failed []string
			for _, r := range d.RunCatalog(ctx) {
				name, _, _ := strings.Cut(r.Name, " ")
				ran[name] = true
				if r.Name == diagnostics.CheckIOStats && info.VersionNum < 160000 && errors.Is(r.Err, diagnostics.ErrUnsupported) {
					continue
				}
				if r.Err != nil {
					failed = append(failed, fmt.Sprintf("%s: %s", r.Name, r.Status()))
				}
			}
			require.Empty(t, failed, "checks that failed as %s", as)
			for _, name := range diagnostics.QueryNames() {
				require.True(t, ran[name], "%s ran as %s", name, as)
			}
			r := d.Round(ctx)
			require.Empty(t, unavailable(r), "checks that failed in a round as %s", as)
			requireNoUnavailable(t, r)
		}
	})

	t.Run("RoundWithUnresolvableDatabase", func(t *testing.T) {
		d := open(t, url, diagnostics.Config{
			StandbyURLs:      []string{standby.URL("postgres")},
			StatementTimeout: time.Minute, LockTimeout: time.Minute, Budget: 2 * time.Minute,
		})
		// The round's snapshot is taken by its first check; it then waits
		// for the queue table, and the database is created meanwhile. A
		// transaction of the test's own takes its snapshot then too, for
		// the blocking tree, which a round reads before the queue table.
		release := testdb.HoldLock(t, url, "jobs")
		rounds := make(chan diagnostics.Round, 1)
		go func() { rounds <- d.Round(ctx) }()
		testdb.WaitBackend(t, admin, diagnostics.ApplicationName, "wait_event_type = 'Lock'")
		stale, err := connect(t, url, "messy-stale-reader").BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		require.NoError(t, err)
		_, err = stale.Exec(ctx, "SELECT 1") // takes the snapshot
		require.NoError(t, err)

		late := lateDatabase(t, admin, url, "messy_late")
		lateConn := connect(t, late, "messy-late-session")
		_, err = lateConn.Exec(ctx, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)")
		require.NoError(t, err)
		_, err = lateConn.Exec(ctx, "BEGIN; UPDATE t SET id = 2; PREPARE TRANSACTION 'messy-late'")
		require.NoError(t, err)
		t.Cleanup(func() { lateConn.Exec(context.Background(), "ROLLBACK PREPARED 'messy-late'") })
		_, err = lateConn.Exec(ctx, "BEGIN; INSERT INTO t VALUES (3)")
		require.NoError(t, err)
		t.Cleanup(func() { lateConn.Exec(context.Background(), "ROLLBACK") })
		blocked(t, connect(t, late, "messy-late-waiter"), "UPDATE t SET id = 4")
		testdb.WaitBackend(t, connect(t, late, "messy-late-watch"), "messy-late-waiter", "wait_event_type = 'Lock'")

		tree, err := diagnostics.BlockingTree(ctx, stale)
		require.NoError(t, err, diagnostics.CheckBlockingTree)
		i := slices.IndexFunc(tree, func(n diagnostics.BlockingNode) bool { return n.GID == "messy-late" })
		require.GreaterOrEqual(t, i, 0, "the blocking tree has the late prepared transaction: %+v", tree)
		require.Empty(t, tree[i].Database, "its database was created after the snapshot")
		release()

		r := <-rounds
		require.Empty(t, unavailable(r), "checks that failed in the round")
		var lateXact *diagnostics.PreparedXact
		for i, p := range r.Prepared {
			if p.GID == "messy-late" {
				lateXact = &r.Prepared[i]
			}
		}
		require.NotNil(t, lateXact, "the round saw the late prepared transaction: %+v", r.Prepared)
		require.Empty(t, lateXact.Database, "its database was created after the round's snapshot")
		fs := requireNoUnavailable(t, r)
		f, ok := findingFor(findings.Report{Findings: fs}, findings.CodePreparedXactOld, "gid", "messy-late")
		require.True(t, ok, "%v", fs)
		require.Contains(t, f.Evidence, "in (unknown database) by")
	})
}

// unavailable lists the checks that failed in r, with why.
func unavailable(r diagnostics.Round) []string {
	var out []string
	for _, u := range r.Unavailable {
		out = append(out, fmt.Sprintf("%s: %s", u.Check, u.Status))
	}
	return out
}

// requireNoUnavailable evaluates r with thresholds that fire on anything and
// returns its findings, none of which may say a check could not run.
func requireNoUnavailable(t *testing.T, r diagnostics.Round) []findings.Finding {
	t.Helper()
	fs := findings.Evaluate(r, *lowThresholds())
	for _, f := range fs {
		require.NotEqual(t, findings.CodeUnavailable, f.Code, "%+v", f)
	}
	return fs
}

// blocked runs sql on conn in the background, where it waits (on a lock, or
// on itself) until the test ends: a cleanup cancels it and waits for it to
// return before the connection closes.
func blocked(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn.Exec(ctx, sql)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// lateDatabase creates database name on the server of url through admin and
// returns its URL; the server is the test's own, so it is not dropped.
func lateDatabase(t *testing.T, admin *pgx.Conn, url, name string) string {
	t.Helper()
	_, err := admin.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	u.Path = "/" + name
	return u.String()
}
