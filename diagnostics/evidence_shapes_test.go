package diagnostics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// An index that CREATE INDEX CONCURRENTLY is still building is invalid in
// pg_index until the build ends; it is not reported while it is being
// built. One that a failed build left behind is.
func TestInvalidIndexesSkipIndexesBeingBuilt(t *testing.T) {
	ctx, url := freshDB(t)
	writer := connect(t, url, "writer")
	builder := connect(t, url, "builder")
	d := open(t, url, diagnostics.Config{})

	// An open write transaction holds the concurrent build in its first
	// wait, after the invalid index is in the catalog.
	begin(t, writer, "INSERT INTO jobs (queue, kind) VALUES ('ix', 'k')")
	built := waitIn(builder, "CREATE INDEX CONCURRENTLY jobs_building_idx ON jobs (kind)")
	buildEnded := false
	t.Cleanup(func() {
		// On an early failure, end the build before its connection closes;
		// a test that got this far has read built already.
		if buildEnded {
			return
		}
		writer.Exec(context.Background(), "ROLLBACK")
		select {
		case <-built:
		case <-time.After(30 * time.Second):
		}
	})
	watch := connect(t, url, "watch")
	eventually(t, 15*time.Second, func() (bool, string) {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_progress_create_index AS p
			JOIN pg_class AS c ON c.oid = p.index_relid
			WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND c.relname = 'jobs_building_idx'`).Scan(&n)
		return err == nil && n > 0, fmt.Sprintf("the build of jobs_building_idx is not under way yet (%v)", err)
	})
	names := func() []string {
		res := d.InvalidIndexes(ctx)
		require.NoError(t, res.Err)
		var out []string
		for _, ix := range res.Rows {
			out = append(out, ix.Index)
		}
		return out
	}
	var inCatalog bool
	require.NoError(t, watch.QueryRow(ctx,
		"SELECT NOT indisvalid FROM pg_index WHERE indexrelid = 'jobs_building_idx'::regclass").Scan(&inCatalog))
	require.True(t, inCatalog, "the index being built is invalid in pg_index")
	require.NotContains(t, names(), "jobs_building_idx", "an index being built is not reported")
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	_, found := findingFor(rep, findings.CodeIndexInvalid, "index", "jobs_building_idx")
	require.False(t, found, "no index.invalid finding while the index is built")

	_, err = writer.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	err = <-built
	buildEnded = true
	require.NoError(t, err)

	// A unique build over duplicates fails and leaves its index invalid.
	_, err = writer.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('dup', 'k'), ('dup', 'k')")
	require.NoError(t, err)
	_, err = builder.Exec(ctx, "CREATE UNIQUE INDEX CONCURRENTLY jobs_failed_idx ON jobs (queue, kind)")
	require.Error(t, err)
	require.Contains(t, names(), "jobs_failed_idx", "a failed build's index is reported")
}

// The outbox backlog is as old as its oldest undelivered event, including
// events waiting in retry backoff: fifty events failing for half an hour
// are half an hour old, not as old as their next retry.
func TestOutboxBacklogAgeCountsRetryBackoff(t *testing.T) {
	ctx, url, db := freshPool(t)
	_, err := db.Exec(ctx, `INSERT INTO outbox_events (topic, event_type, payload, attempts, available_at, created_at)
		SELECT 't', 'e', '{}', 5, now() + interval '2 minutes', now() - interval '30 minutes'
		FROM generate_series(1, 50)`)
	require.NoError(t, err)
	o, err := queues.OutboxHealth(ctx, db, 0)
	require.NoError(t, err)
	require.EqualValues(t, 0, o.Pending, "none is ready now")
	require.EqualValues(t, 50, o.PendingLater)
	require.GreaterOrEqual(t, o.OldestPendingSeconds, 1790.0, "age from created_at")

	// Only backoff events are left, and they are the backlog.
	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f := findingsWith(rep, findings.CodeOutboxBacklog)
	require.Len(t, f, 1, "%v", codes(rep))
	require.EqualValues(t, 50, f[0].Subject["pending_later"])
	require.Contains(t, f[0].Evidence, "50 waiting in retry backoff")
}

// A lazy VACUUM has a snapshot, but the horizon ignores it: it is not
// listed as holding the xmin horizon back (and so is never offered a
// terminate). Holders carry their database.
func TestXminHorizonLeavesLazyVacuumOut(t *testing.T) {
	ctx, url := freshDB(t)
	vac := connect(t, url, "slow-vacuum")
	holder := connect(t, url, "xmin-holder")
	_, err := vac.Exec(ctx, `CREATE TABLE vac_me (id int, pad text);
		INSERT INTO vac_me SELECT g, repeat('x', 200) FROM generate_series(1, 50000) g;
		DELETE FROM vac_me`)
	require.NoError(t, err)
	begin(t, holder, "SELECT txid_current()")
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })
	_, err = vac.Exec(ctx, "SET vacuum_cost_delay = '50ms'; SET vacuum_cost_limit = 1")
	require.NoError(t, err)
	vacDone := waitIn(vac, "VACUUM vac_me")
	t.Cleanup(func() {
		vac.PgConn().CancelRequest(context.Background())
		<-vacDone
	})
	watch := connect(t, url, "watch")
	eventually(t, 15*time.Second, func() (bool, string) {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_progress_vacuum AS v
			JOIN pg_stat_activity AS a USING (pid) WHERE v.pid = $1 AND a.backend_xmin IS NOT NULL`, pidOf(vac)).Scan(&n)
		return err == nil && n == 1, "vacuum not seen with a snapshot yet"
	})

	d := open(t, url, diagnostics.Config{})
	res := d.XminHorizon(ctx)
	require.NoError(t, res.Err)
	var db string
	require.NoError(t, watch.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	sawHolder := false
	for _, h := range res.Rows {
		require.NotEqual(t, fmt.Sprint(pidOf(vac)), h.Holder, "a lazy VACUUM is no holder: %+v", res.Rows)
		if h.Holder == fmt.Sprint(pidOf(holder)) {
			sawHolder = true
			require.Equal(t, db, h.Database)
		}
	}
	require.True(t, sawHolder, "the open transaction holds the horizon: %+v", res.Rows)
}

// Waiters are grouped by the exact thing they wait for: two advisory keys
// are two groups, named by their keys, not one "advisory" group.
func TestLockWaitsGroupByExactTarget(t *testing.T) {
	ctx, url := freshDB(t)
	holder := connect(t, url, "adv-holder")
	_, err := holder.Exec(ctx, "SELECT pg_advisory_lock(4242), pg_advisory_lock(4243)")
	require.NoError(t, err)
	var done []<-chan error
	for _, key := range []int{4242, 4242, 4243} {
		c := connect(t, url, "adv-waiter")
		done = append(done, waitIn(c, "SELECT pg_advisory_xact_lock($1)", key))
	}
	t.Cleanup(func() {
		holder.Exec(context.Background(), "SELECT pg_advisory_unlock_all()")
		for _, d := range done {
			<-d
		}
	})
	d := open(t, url, diagnostics.Config{})
	var byTarget map[string]int64
	eventually(t, 15*time.Second, func() (bool, string) {
		res := d.LockWaits(ctx)
		if res.Err != nil {
			return false, res.Status()
		}
		byTarget = map[string]int64{}
		for _, w := range res.Rows {
			if w.LockType == "advisory" {
				byTarget[w.Target] += w.Waiting
			}
		}
		return byTarget["advisory key 4242"] == 2 && byTarget["advisory key 4243"] == 1, fmt.Sprint(byTarget)
	})
}

// An archive command that hangs fails nothing, yet segments pile up: the
// backlog shows before any failure is recorded.
func TestArchiverBacklogBeforeAnyFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, err := pgserver.TempDir("archive-hold")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	hold := filepath.Join(dir, "hold")
	require.NoError(t, os.WriteFile(hold, nil, 0o644))
	srv := testdb.NewServer(t, withSettings(map[string]string{
		"archive_mode":    "on",
		"archive_command": "while [ -f " + hold + " ]; do sleep 0.1; done; true",
	}))
	// Let the archiver finish at cleanup, so the server stops quickly.
	t.Cleanup(func() { os.Remove(hold) })
	c := connect(t, srv.URL("postgres"), "wal-writer")
	for i := 0; i < 3; i++ {
		_, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS w (v text); INSERT INTO w VALUES ('x')")
		require.NoError(t, err)
		_, err = c.Exec(ctx, "SELECT pg_switch_wal()")
		require.NoError(t, err)
	}
	var a diagnostics.ArchiverStat
	eventually(t, 15*time.Second, func() (bool, string) {
		var err error
		a, err = diagnostics.Archiver(ctx, c)
		return err == nil && a.Backlog() >= 2, fmt.Sprintf("%+v %v", a, err)
	})
	require.False(t, a.Failing, "nothing has failed")
	require.EqualValues(t, 0, a.FailedCount)
	require.NotNil(t, a.ReadySegments)
	require.GreaterOrEqual(t, *a.ReadySegments, int64(2))

	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, "archiver.backlog=2"))
	d := open(t, srv.URL("postgres"), diagnostics.Config{Thresholds: &th})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f := findingsWith(rep, findings.CodeArchiverBacklog)
	require.Len(t, f, 1, "%v", codes(rep))
	require.Equal(t, false, f[0].Subject["failing"])
	require.Equal(t, "/runbook/rb-j", f[0].Runbook)
	require.Empty(t, findingsWith(rep, findings.CodeArchiverFailing))
}

// The backlog's age is one probe of outbox_undelivered_created_idx, however
// much published history the table holds.
func TestOutboxBacklogAgeUsesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	_, err := db.Exec(ctx, `INSERT INTO outbox_events (topic, event_type, payload, state, published_at)
		SELECT 't', 'e', '{}', 'published', now() FROM generate_series(1, 20000);
		INSERT INTO outbox_events (topic, event_type, payload) SELECT 't', 'e', '{}' FROM generate_series(1, 100);
		ANALYZE outbox_events`)
	require.NoError(t, err)
	q, ok := diagnostics.SQLFor(diagnostics.CheckOutboxHealth, 0)
	require.True(t, ok)
	rows, err := db.Query(ctx, "EXPLAIN "+q, 1000)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(plan), "outbox_undelivered_created_idx")
}
