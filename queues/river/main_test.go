package river_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// riverPool is a fresh database migrated by the console and by River's
// own migrator (testdb.RiverPool).
func riverPool(t *testing.T) *pgxpool.Pool { return testdb.RiverPool(t) }

var quiet = testdb.RiverQuiet

// The job kinds of the tests: each worker does what its name says.
type (
	okArgs struct {
		N int `json:"n"`
	}
	failArgs struct {
		Card int `json:"card"`
	}
	snoozeArgs struct{}
	panicArgs  struct{}
	slowArgs   struct{}
)

func (okArgs) Kind() string     { return "ok" }
func (failArgs) Kind() string   { return "fail" }
func (snoozeArgs) Kind() string { return "snooze" }
func (panicArgs) Kind() string  { return "panic" }
func (slowArgs) Kind() string   { return "slow" }

func (failArgs) InsertOpts() riverqueue.InsertOpts  { return riverqueue.InsertOpts{MaxAttempts: 1} }
func (panicArgs) InsertOpts() riverqueue.InsertOpts { return riverqueue.InsertOpts{MaxAttempts: 1} }

type okWorker struct {
	riverqueue.WorkerDefaults[okArgs]
}

func (okWorker) Work(context.Context, *riverqueue.Job[okArgs]) error { return nil }

type failWorker struct {
	riverqueue.WorkerDefaults[failArgs]
}

func (failWorker) Work(_ context.Context, j *riverqueue.Job[failArgs]) error {
	return fmt.Errorf("charge card %d: %w", j.Args.Card, errors.New("declined"))
}

type snoozeWorker struct {
	riverqueue.WorkerDefaults[snoozeArgs]
}

func (snoozeWorker) Work(context.Context, *riverqueue.Job[snoozeArgs]) error {
	return riverqueue.JobSnooze(time.Hour)
}

type panicWorker struct {
	riverqueue.WorkerDefaults[panicArgs]
}

func (panicWorker) Work(context.Context, *riverqueue.Job[panicArgs]) error { panic("nil map write") }

// slowWorker runs until its job is cancelled or the client stops.
type slowWorker struct {
	riverqueue.WorkerDefaults[slowArgs]
}

func (slowWorker) Work(ctx context.Context, _ *riverqueue.Job[slowArgs]) error {
	<-ctx.Done()
	return ctx.Err()
}

// riverClient is a River client working queues default and email on
// pool, stopped at cleanup.
func riverClient(t *testing.T, pool *pgxpool.Pool) *riverqueue.Client[pgx.Tx] {
	t.Helper()
	workers := riverqueue.NewWorkers()
	riverqueue.AddWorker(workers, &okWorker{})
	riverqueue.AddWorker(workers, &failWorker{})
	riverqueue.AddWorker(workers, &snoozeWorker{})
	riverqueue.AddWorker(workers, &panicWorker{})
	riverqueue.AddWorker(workers, &slowWorker{})
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{
		Queues:            map[string]riverqueue.QueueConfig{riverqueue.QueueDefault: {MaxWorkers: 5}, "email": {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
		Logger:            quiet,
		ID:                "test-client",
	})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.StopAndCancel(stop)
	})
	return c
}

// insertClient is a River client that only inserts (no queues worked).
func insertClient(t *testing.T, pool *pgxpool.Pool) *riverqueue.Client[pgx.Tx] {
	t.Helper()
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{Logger: quiet})
	require.NoError(t, err)
	return c
}

// recordQueue has River record queue in river_queue, as a client working
// it does at start, then stops that client: the queue can then be paused
// with no client fetching its jobs.
func recordQueue(t *testing.T, pool *pgxpool.Pool, queue string) {
	t.Helper()
	ctx := context.Background()
	workers := riverqueue.NewWorkers()
	riverqueue.AddWorker(workers, &okWorker{})
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{
		Queues: map[string]riverqueue.QueueConfig{queue: {MaxWorkers: 1}}, Workers: workers, Logger: quiet,
		LeaderElectionDisabled: true, // the leader the tests read is the client that works
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	testdb.Eventually(t, time.Minute, "River's client to record queue "+queue, func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_queue WHERE name = $1", queue) == 1
	})
	require.NoError(t, c.Stop(ctx))
}
