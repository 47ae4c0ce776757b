package migrations_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// Migration 017 carries the run times the long-running-jobs check reads
// over from the done jobs already there: for each kind, the latest 200 by
// finished_at (jobs that never started have none), then drops the index it
// read them from.
func TestKindRunTimesCarriedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.Connect(t, testdb.EmptyURL(t), "migrate")
	require.NoError(t, migrations.UpTo(ctx, conn, 16))

	// Kind a: 250 done jobs, job g ran g seconds and finished g minutes
	// ago, so the latest 200 are those that ran 1 to 200 seconds. Kind b:
	// three done jobs and one that never started.
	_, err := conn.Exec(ctx, `
		INSERT INTO jobs (queue, kind, status, started_at, finished_at)
		SELECT 'q', 'a', 'done', now() - g * interval '1 minute' - g * interval '1 second', now() - g * interval '1 minute'
		FROM generate_series(1, 250) AS g;
		INSERT INTO jobs (queue, kind, status, started_at, finished_at)
		SELECT 'q', 'b', 'done', now() - interval '5 seconds', now() FROM generate_series(1, 3);
		INSERT INTO jobs (queue, kind, status, finished_at) VALUES ('q', 'b', 'done', now());
		INSERT INTO jobs (queue, kind, status) VALUES ('q', 'c', 'ready')`)
	require.NoError(t, err)
	require.NoError(t, migrations.UpTo(ctx, conn, 17))

	type kindRuns struct {
		Kind        string
		N           int
		Least, Most float64
	}
	rows, err := conn.Query(ctx, `SELECT kind, count(*)::int, min(s), max(s)
		FROM job_kind_runs, unnest(seconds) AS s GROUP BY kind ORDER BY kind`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[kindRuns])
	require.NoError(t, err)
	require.Equal(t, []kindRuns{{"a", 200, 1, 200}, {"b", 3, 5, 5}}, got)

	var index *string
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('jobs_done_kind_idx')::text`).Scan(&index))
	require.Nil(t, index, "the done jobs' kind index is dropped")
}

// A migration that needs a lock an application session holds waits at most
// its lock timeout, is rolled back whole and tried again; when every try
// times out, the error names the session holding the lock and the schema
// stays where it was. Once the session ends, the same call applies it.
func TestMigrationLockWaitIsBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := testdb.EmptyURL(t)
	conn := testdb.Connect(t, url, "migrate")
	require.NoError(t, migrations.UpTo(ctx, conn, 16))

	// A report left open in a transaction: it holds ACCESS SHARE on jobs,
	// which 017's DROP INDEX must wait for.
	report := testdb.Connect(t, url, "nightly-report")
	tx, err := report.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)

	o := migrations.Options{LockTimeout: 200 * time.Millisecond, Attempts: 2, Pause: 50 * time.Millisecond}
	st, err := migrations.UpWith(ctx, conn, o)
	t.Log(err)
	require.ErrorIs(t, err, migrations.ErrLockTimeout)
	require.Contains(t, err.Error(), "017_job_kind_runs.sql waited 200ms for a lock and gave up, 2 times")
	require.Contains(t, err.Error(), "the schema stays at version 16")
	require.Contains(t, err.Error(), fmt.Sprintf("pid %d (application \"nightly-report\"", report.PgConn().PID()))
	require.Contains(t, err.Error(), "idle in transaction")
	require.Equal(t, int32(16), st.Current)
	var kindRuns *string
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('job_kind_runs')::text`).Scan(&kindRuns))
	require.Nil(t, kindRuns, "the timed-out migration left nothing behind")

	require.NoError(t, tx.Commit(ctx))
	st, err = migrations.UpWith(ctx, conn, o)
	require.NoError(t, err)
	require.True(t, st.UpToDate(), "%+v", st)
}
