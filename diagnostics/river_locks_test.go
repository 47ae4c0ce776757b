package diagnostics_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

type riverLockArgs struct{}

func (riverLockArgs) Kind() string { return "lock" }

// riverLockWorker updates account 1 in a transaction of its own, tagged
// with its job as docs/river.md says ("river job=<id>"), and holds it
// until the job's context ends.
type riverLockWorker struct {
	riverqueue.WorkerDefaults[riverLockArgs]
	pool *pgxpool.Pool
}

func (w riverLockWorker) Work(ctx context.Context, j *riverqueue.Job[riverLockArgs]) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT set_config('application_name', 'river job=' || $1::bigint, true)", j.ID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "UPDATE accounts SET n = n + 1 WHERE id = 1"); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// A River job whose session is tagged is named in the lock findings: the
// job holding the row a second job waits for is the root blocker's
// river_job_id, and the waiting job is listed behind it.
func TestLockFindingNamesRiverJobs(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	ctx := context.Background()
	pool := testdb.RiverPool(t)
	_, err := pool.Exec(ctx, "CREATE TABLE accounts (id int PRIMARY KEY, n int); INSERT INTO accounts VALUES (1, 0)")
	require.NoError(t, err)
	workers := riverqueue.NewWorkers()
	riverqueue.AddWorker(workers, &riverLockWorker{pool: pool})
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{
		Queues: map[string]riverqueue.QueueConfig{riverqueue.QueueDefault: {MaxWorkers: 2}}, Workers: workers,
		FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond, Logger: testdb.RiverQuiet,
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.StopAndCancel(stop)
	})
	first, err := c.Insert(ctx, riverLockArgs{}, nil)
	require.NoError(t, err)
	testdb.Eventually(t, time.Minute, "the first job to hold the row", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'river job=' || $1::bigint AND state = 'idle in transaction'", first.Job.ID) == 1
	})
	second, err := c.Insert(ctx, riverLockArgs{}, nil)
	require.NoError(t, err)
	testdb.Eventually(t, time.Minute, "the second job to wait for the row", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'river job=' || $1::bigint AND wait_event_type = 'Lock'", second.Job.ID) == 1
	})

	d := open(t, pool.Config().ConnString(), diagnostics.Config{River: true, Thresholds: lowThresholds()})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeRootBlocker, "river_job_id", first.Job.ID)
	require.True(t, ok, "the root blocker names the River job holding the row: %v", codes(rep))
	require.Equal(t, []int64{second.Job.ID}, f.Subject["river_jobs_waiting"])
	require.Contains(t, f.Evidence, "the root runs River job")
}
