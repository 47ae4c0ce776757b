package diagnostics_test

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

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues/river"
)

// The River job kinds of these tests: each worker does what its name says.
type (
	riverOKArgs   struct{}
	riverFailArgs struct {
		Card int `json:"card"`
	}
	riverHangArgs struct{}
)

func (riverOKArgs) Kind() string   { return "ok" }
func (riverFailArgs) Kind() string { return "charge" }
func (riverHangArgs) Kind() string { return "hang" }

func (riverFailArgs) InsertOpts() riverqueue.InsertOpts { return riverqueue.InsertOpts{MaxAttempts: 1} }

type riverOKWorker struct {
	riverqueue.WorkerDefaults[riverOKArgs]
}

func (riverOKWorker) Work(context.Context, *riverqueue.Job[riverOKArgs]) error { return nil }

type riverFailWorker struct {
	riverqueue.WorkerDefaults[riverFailArgs]
}

func (riverFailWorker) Work(_ context.Context, j *riverqueue.Job[riverFailArgs]) error {
	return fmt.Errorf("charge card %d: %w", j.Args.Card, errors.New("declined"))
}

// riverHangWorker runs until its job's context ends.
type riverHangWorker struct {
	riverqueue.WorkerDefaults[riverHangArgs]
}

func (riverHangWorker) Work(ctx context.Context, _ *riverqueue.Job[riverHangArgs]) error {
	<-ctx.Done()
	return ctx.Err()
}

// startRiver starts a River client working queues default and email on
// pool (stopped at cleanup, unless the test stops it first) and waits
// until it is River's leader.
func startRiver(t *testing.T, pool *pgxpool.Pool) *riverqueue.Client[pgx.Tx] {
	t.Helper()
	workers := riverqueue.NewWorkers()
	riverqueue.AddWorker(workers, &riverOKWorker{})
	riverqueue.AddWorker(workers, &riverFailWorker{})
	riverqueue.AddWorker(workers, &riverHangWorker{})
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{
		Queues:            map[string]riverqueue.QueueConfig{riverqueue.QueueDefault: {MaxWorkers: 5}, "email": {MaxWorkers: 2}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     10 * time.Millisecond,
		Logger:            testdb.RiverQuiet,
		ID:                "diag-client",
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.StopAndCancel(stop)
	})
	testdb.Eventually(t, time.Minute, "the River client to be elected leader", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_leader WHERE leader_id = 'diag-client'") == 1
	})
	return c
}

// riverCodes are the findings of River's codes in rep.
func riverCodes(rep findings.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		switch f.Code {
		case findings.CodeRiverBacklog, findings.CodeRiverStuckRunning, findings.CodeRiverDiscardBurst,
			findings.CodeRiverNoLeader, findings.CodeRiverQueuePaused:
			out = append(out, f.Code+" "+fmt.Sprint(f.Subject))
		}
	}
	return out
}

// A River database in trouble shows each River finding with the subject
// that names what to act on: a queue nobody works (backlog), a job hung
// past the rescue threshold (stuck running, by queue and kind), a burst of
// discards (by queue, kind and error class), a paused queue, and, once the
// only client stops, no leader. Healthy, the same database has none, and a
// console whose queue source is not River reads none of it.
func TestRiverFindings(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	ctx := context.Background()
	pool := testdb.RiverPool(t)
	c := startRiver(t, pool)
	th := diagnostics.DefaultThresholds()
	th.RiverRescueAfter = 2 * time.Second
	th.DeadLetters = 5
	d := open(t, pool.Config().ConnString(), diagnostics.Config{River: true, Thresholds: &th})

	// Healthy: jobs run and complete, the client leads.
	for range 5 {
		_, err := c.Insert(ctx, riverOKArgs{}, nil)
		require.NoError(t, err)
	}
	testdb.Eventually(t, time.Minute, "the ok jobs to complete", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_job WHERE state = 'completed'") == 5
	})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	require.Empty(t, riverCodes(rep), "a healthy River database has no River finding")

	// The incident.
	for i := range 6 {
		_, err := c.Insert(ctx, riverFailArgs{Card: 4000 + i}, nil)
		require.NoError(t, err)
	}
	hung, err := c.Insert(ctx, riverHangArgs{}, nil)
	require.NoError(t, err)
	for range 3 {
		_, err := c.Insert(ctx, riverOKArgs{}, &riverqueue.InsertOpts{Queue: "reports", ScheduledAt: time.Now().Add(-10 * time.Minute)})
		require.NoError(t, err)
	}
	require.NoError(t, c.QueuePause(ctx, "email", nil))
	// River inserts a job scheduled in the past as scheduled; the leader's
	// scheduler makes it available.
	testdb.Eventually(t, time.Minute, "the charges to be discarded, the reports jobs available and the hang to run past the rescue threshold", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_job WHERE state = 'discarded'") == 6 &&
			testdb.Count(t, pool, "SELECT count(*) FROM river_job WHERE queue = 'reports' AND state = 'available'") == 3 &&
			testdb.Count(t, pool, "SELECT count(*) FROM river_job WHERE state = 'running' AND attempted_at < now() - interval '2 seconds'") == 1
	})

	rep, err = findings.Run(ctx, d)
	require.NoError(t, err)
	got := riverCodes(rep)
	class := river.ErrorClass("charge card 4000: declined", false)
	f, ok := findingFor(rep, findings.CodeRiverDiscardBurst, "error_class", class)
	require.True(t, ok, "a discard burst of class %q: %v", class, got)
	require.Equal(t, "default", f.Subject["queue"])
	require.Equal(t, "charge", f.Subject["kind"])
	require.EqualValues(t, 6, f.Subject["count"])

	f, ok = findingFor(rep, findings.CodeRiverStuckRunning, "kind", "hang")
	require.True(t, ok, "the hung job is stuck: %v", got)
	require.Equal(t, "default", f.Subject["queue"])
	require.Equal(t, []int64{hung.Job.ID}, f.Subject["job_ids"])
	require.Contains(t, f.Evidence, "rescue threshold")

	f, ok = findingFor(rep, findings.CodeRiverBacklog, "queue", "reports")
	require.True(t, ok, "queue reports, which no client works, has a backlog: %v", got)
	require.EqualValues(t, 3, f.Subject["available"])
	_, ok = findingFor(rep, findings.CodeRiverBacklog, "queue", "default")
	require.False(t, ok, "default is worked: %v", got)

	_, ok = findingFor(rep, findings.CodeRiverQueuePaused, "queue", "email")
	require.True(t, ok, "email is paused: %v", got)
	require.Empty(t, findingsWith(rep, findings.CodeRiverNoLeader), "the client leads")
	require.Equal(t, diagnostics.RunbookURL(diagnostics.RunbookRiver), f.Runbook)

	// A console reading its own engine reads none of River's tables.
	plain := open(t, pool.Config().ConnString(), diagnostics.Config{Thresholds: &th})
	rep, err = findings.Run(ctx, plain)
	require.NoError(t, err)
	require.Empty(t, riverCodes(rep), "River's findings only when the source is River")

	// The only client stops: it resigns, and nobody leads while the
	// reports jobs wait.
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, c.StopAndCancel(stop))
	testdb.Eventually(t, time.Minute, "River's leader to resign", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_leader WHERE expires_at > now()") == 0
	})
	rep, err = findings.Run(ctx, d)
	require.NoError(t, err)
	nl := findingsWith(rep, findings.CodeRiverNoLeader)
	require.Len(t, nl, 1, "%v", riverCodes(rep))
	require.Contains(t, nl[0].Subject["queues"], "reports")
}
