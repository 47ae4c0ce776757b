package queues_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestJobsWaitingOnLocksOnlyThisDatabase: two databases on one server each
// run the engine, and a job of each waits on a lock. Each database's list
// names its own job only: a job id is a row of this database's jobs, and
// another database's job 7 is not this one's.
func TestJobsWaitingOnLocksOnlyThisDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, other := testdb.New(t), testdb.New(t)
	waitAsJob(t, here, "console-worker job=424242")
	waitAsJob(t, other, "console-worker job=777")

	jobs, err := queues.JobsWaitingOnLocks(ctx, here)
	require.NoError(t, err)
	var ids []int64
	for _, j := range jobs {
		ids = append(ids, j.JobID)
	}
	require.Equal(t, []int64{424242}, ids, "another database's waiting job was listed as this database's")
}

// waitAsJob leaves a session named app waiting on a table lock in pool's
// database until the test ends.
func waitAsJob(t *testing.T, pool *pgxpool.Pool, app string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), "CREATE TABLE lock_target (x int)")
	require.NoError(t, err)
	testdb.WaitOnLock(t, pool.Config().ConnString(), "lock_target", app)
	testdb.WaitBackend(t, pool, app, "wait_event_type = 'Lock'")
}
