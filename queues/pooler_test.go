package queues

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// pooledPool opens an engine pool named app on url, a database reached
// through a pooler in transaction mode, closed at cleanup.
func pooledPool(t *testing.T, url, app string) *pgxpool.Pool {
	t.Helper()
	cfg, err := PoolConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	ForTransactionPooler(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// TestJobsRunOnceThroughTransactionPooler: two workers reach the database
// only through PgBouncer in transaction mode. Every job's effect, written on
// its JobConn, lands exactly once and under the job's tag, and no server
// session keeps the tag once the jobs are done (a session-level name would
// stay on the server session the pooler lends to the next client).
func TestJobsRunOnceThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	through := testdb.PgBouncer(t, dbURL)
	direct := testdb.Pool(t, dbURL)
	_, err := direct.Exec(ctx, "CREATE TABLE job_effects (job_id bigint NOT NULL, worker text NOT NULL, app text NOT NULL)")
	require.NoError(t, err)

	const jobs = 120
	var clients []*Client
	for _, name := range []string{"pooled-a", "pooled-b"} {
		c, err := NewClient(pooledPool(t, through, ApplicationName), ClientConfig{
			Queues:            map[string]QueueConfig{"pooled": {Concurrency: 3}},
			ID:                name,
			PollInterval:      50 * time.Millisecond,
			TransactionPooler: true,
		})
		require.NoError(t, err)
		c.Handle("effect", func(ctx context.Context, j *Job) error {
			conn, err := JobConn(ctx)
			if err != nil {
				return err
			}
			_, err = conn.Exec(ctx, "INSERT INTO job_effects VALUES ($1, $2, current_setting('application_name'))", j.ID, name)
			return err
		})
		clients = append(clients, c)
	}
	params := make([]EnqueueParams, jobs)
	for i := range params {
		params[i] = EnqueueParams{Queue: "pooled", Kind: "effect"}
	}
	ids, err := clients[0].EnqueueMany(ctx, params)
	require.NoError(t, err)
	require.Len(t, ids, jobs)
	for _, c := range clients {
		require.NoError(t, c.Start(ctx))
		t.Cleanup(func() { c.Stop(context.Background()) })
	}
	testdb.Eventually(t, 60*time.Second, "every job done", func() bool {
		return testdb.Count(t, direct, "SELECT count(*) FROM jobs WHERE queue = 'pooled' AND status = 'done'") == jobs
	})
	for _, c := range clients {
		require.NoError(t, c.Stop(ctx))
	}

	type effect struct {
		JobID  int64  `db:"job_id"`
		Times  int    `db:"times"`
		Apps   string `db:"apps"`
		Worker string `db:"worker"`
	}
	rows, err := direct.Query(ctx, `SELECT job_id, count(*)::int AS times, string_agg(app, ',') AS apps, min(worker) AS worker
		FROM job_effects GROUP BY job_id ORDER BY job_id`)
	require.NoError(t, err)
	effects, err := pgx.CollectRows(rows, pgx.RowToStructByName[effect])
	require.NoError(t, err)
	require.Len(t, effects, jobs, "every job has its effect")
	byWorker := map[string]int{}
	for _, e := range effects {
		require.Equal(t, 1, e.Times, "job %d ran its effect %d times", e.JobID, e.Times)
		require.Equal(t, fmt.Sprintf("console-worker job=%d", e.JobID), e.Apps, "job %d's statement ran untagged", e.JobID)
		byWorker[e.Worker]++
	}
	require.Len(t, byWorker, 2, "both workers ran jobs: %v", byWorker)
	require.Zero(t, testdb.Count(t, direct, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name LIKE 'console-worker job=%'`),
		"a server session kept a job's tag after the job")
}

// TestSchedulerTicksOnceThroughTransactionPooler: two schedulers reach the
// database only through PgBouncer in transaction mode, with no direct
// session: every tick of an every-second schedule is enqueued exactly once,
// with no gap, and no advisory lock outlives the schedulers (a session lock
// taken through the pooler would stay on a server session it lends to
// others, held forever).
func TestSchedulerTicksOnceThroughTransactionPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	through := testdb.PgBouncer(t, dbURL)
	direct := testdb.Pool(t, dbURL)
	everySecondLogged(t, direct)

	var scheds []*Scheduler
	for _, app := range []string{"sched-a", "sched-b"} {
		s, err := NewScheduler(pooledPool(t, through, app), SchedulerConfig{ID: app, Interval: 100 * time.Millisecond, TransactionPooler: true})
		require.NoError(t, err)
		require.NoError(t, s.Start(ctx))
		t.Cleanup(s.Stop)
		scheds = append(scheds, s)
	}
	testdb.Eventually(t, 30*time.Second, "five ticks enqueued", func() bool {
		return testdb.Count(t, direct, "SELECT count(DISTINCT dedupe_key) FROM test_enqueue_log") >= 5
	})
	for _, s := range scheds {
		s.Stop()
	}

	ticksOnce(t, direct)
	// A tick cut short by Stop ends its transaction on the pooler's server
	// session, or PgBouncer closes that session (whose backend then exits
	// a moment later): either way the lock goes within seconds.
	key := int64(0x7363686564756c65)
	testdb.Eventually(t, 10*time.Second, "the scheduler's advisory lock gone once the schedulers stopped", func() bool {
		return testdb.Count(t, direct, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND classid::bigint = $1 AND objid::bigint = $2
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, key>>32, key&0xffffffff) == 0
	})
}

// TestDirectSessionBesideTransactionPooler: behind a transaction pooler
// with a direct session, the worker LISTENs on it (a job enqueued through
// the pooler wakes it long before its one-minute poll) and records it as
// its proof of life, and the scheduler's leader lock is a session lock on
// it, gone when the scheduler stops.
func TestDirectSessionBesideTransactionPooler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	through := testdb.PgBouncer(t, dbURL)
	direct := testdb.Pool(t, dbURL)
	dcfg, err := PoolConfig(dbURL)
	require.NoError(t, err)

	pool := pooledPool(t, through, ApplicationName)
	c, err := NewClient(pool, ClientConfig{
		Queues:            map[string]QueueConfig{"woken": {Concurrency: 1}},
		ID:                "direct-listener",
		PollInterval:      time.Minute,
		TransactionPooler: true,
		SessionConnConfig: dcfg.ConnConfig,
	})
	require.NoError(t, err)
	registerTestKinds(c)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { c.Stop(context.Background()) })
	testdb.Eventually(t, 20*time.Second, "the worker's direct session recorded", func() bool {
		return testdb.Count(t, direct, `SELECT count(*) FROM workers w JOIN pg_stat_activity a ON a.pid = w.backend_pid
			WHERE w.id = 'direct-listener' AND a.backend_start = w.backend_started_at`) == 1
	})
	_, err = c.Enqueue(ctx, EnqueueParams{Queue: "woken", Kind: "noop"})
	require.NoError(t, err)
	testdb.Eventually(t, 20*time.Second, "the job woken by NOTIFY on the direct session", func() bool {
		return testdb.Count(t, direct, "SELECT count(*) FROM jobs WHERE queue = 'woken' AND status = 'done'") == 1
	})

	s, err := NewScheduler(pool, SchedulerConfig{ID: "direct-leader", Interval: 100 * time.Millisecond,
		TransactionPooler: true, SessionConnConfig: dcfg.ConnConfig})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	t.Cleanup(s.Stop)
	key := int64(0x7363686564756c65)
	held := func() int {
		return testdb.Count(t, direct, `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND classid::bigint = $1 AND objid::bigint = $2 AND pid = $3`,
			key>>32, key&0xffffffff, int32(s.pid.Load()))
	}
	testdb.Eventually(t, 20*time.Second, "the leader lock held on the direct session", func() bool { return s.IsLeader() && held() == 1 })
	s.Stop()
	testdb.Eventually(t, 20*time.Second, "the leader lock gone with the scheduler", func() bool { return held() == 0 })
}
