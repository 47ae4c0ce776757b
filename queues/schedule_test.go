package queues

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestScheduleNextRuns(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"0 * * * *", []string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"}},
		{"@daily", []string{"2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z"}},
		{"*/15 9-17 * * MON-FRI", []string{"2026-03-02T09:00:00Z", "2026-03-02T09:15:00Z"}},
		{"@every 1s", []string{"2026-03-01T10:30:01Z", "2026-03-01T10:30:02Z"}},
		{"30 * * * * *", []string{"2026-03-01T10:30:30Z", "2026-03-01T10:31:30Z"}},
	} {
		got, err := NextRuns(tc.spec, from, 2)
		require.NoError(t, err, tc.spec)
		var s []string
		for _, g := range got {
			s = append(s, g.Format(time.RFC3339))
		}
		require.Equal(t, tc.want, s, tc.spec)
	}
	for _, bad := range []string{"", "* * *", "61 * * * *", "@sometimes", "a b c d e"} {
		_, err := NextRuns(bad, from, 1)
		require.ErrorIs(t, err, ErrInvalidSpec, bad)
	}
}

func FuzzScheduleParseSpec(f *testing.F) {
	for _, s := range []string{"0 * * * *", "@daily", "@every 1s", "*/5 * * * * *", "CRON_TZ=Europe/Paris 0 9 * * *", "0 0 30 2 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		runs, err := NextRuns(spec, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3)
		if err != nil {
			return
		}
		for i := 1; i < len(runs); i++ {
			if !runs[i].After(runs[i-1]) {
				t.Fatalf("%q: runs not increasing: %v", spec, runs)
			}
		}
	})
}

func TestScheduleCRUD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	s, err := ScheduleCreate(ctx, tx, ScheduleParams{Name: "nightly-archive", Spec: "@daily", Kind: KindArchiveJobs,
		Payload: map[string]string{"retention": "168h"}, By: "alice"})
	require.NoError(t, err)
	require.True(t, s.Enabled)
	require.Equal(t, "maintenance", s.Queue)
	require.NotNil(t, s.NextRunAt)
	require.Equal(t, 0, s.NextRunAt.Hour())

	_, err = ScheduleCreate(ctx, tx, ScheduleParams{Name: "bad", Spec: "every day", Kind: "noop"})
	require.ErrorIs(t, err, ErrInvalidSpec)

	s, err = ScheduleUpdate(ctx, tx, ScheduleParams{Name: "nightly-archive", Spec: "0 3 * * *", Kind: KindArchiveJobs, Disabled: true, By: "bob"})
	require.NoError(t, err)
	require.False(t, s.Enabled)
	require.Equal(t, 3, s.NextRunAt.Hour())
	require.Equal(t, "bob", *s.UpdatedBy)

	got, err := ScheduleGet(ctx, tx, "nightly-archive")
	require.NoError(t, err)
	require.Equal(t, "0 3 * * *", got.Spec)
	_, err = ScheduleGet(ctx, tx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = ScheduleUpdate(ctx, tx, ScheduleParams{Name: "nope", Spec: "@daily", Kind: "noop"})
	require.ErrorIs(t, err, ErrNotFound)
	list, err := ScheduleList(ctx, tx)
	require.NoError(t, err)
	require.Len(t, list, 1)
}

// schedChildDB names the database a scheduler child process runs against;
// the child's application_name (in that URL) is how the parent tells the
// children's sessions apart in pg_stat_activity and pg_locks.
const schedChildDB = "SCHEDULER_CHILD_DB"

// TestSchedulerChild is not a test of its own: run by
// TestSchedulerThreeProcessesLeaderKilled as a child process, it runs one
// scheduler until it is killed, its stdin closes (the parent died) or two
// minutes pass.
func TestSchedulerChild(t *testing.T) {
	dbURL := os.Getenv(schedChildDB)
	if dbURL == "" {
		return
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	s, err := NewScheduler(pool, SchedulerConfig{ID: os.Getenv("SCHEDULER_CHILD_ID"), Interval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	stdinClosed := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stdinClosed) }()
	select {
	case <-stdinClosed:
	case <-time.After(2 * time.Minute):
	}
	s.Stop()
	os.Exit(0)
}

// schedChild is a scheduler running in a child process.
type schedChild struct {
	app string
	cmd *exec.Cmd
	out *bytes.Buffer
}

func startSchedChild(t *testing.T, dbURL, app string) *schedChild {
	t.Helper()
	testdb.SkipShort(t, "scheduler processes of their own")
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	c := &schedChild{app: app, out: &bytes.Buffer{}}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestSchedulerChild$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), schedChildDB+"="+u.String(), "SCHEDULER_CHILD_ID="+app)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	stdin, err := c.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		c.kill()
		if t.Failed() {
			t.Logf("output of scheduler %s:\n%s", app, c.out)
		}
	})
	return c
}

// kill sends SIGKILL (no deferred cleanup, no graceful release: the
// process and its sockets simply vanish) and reaps the process.
func (c *schedChild) kill() error {
	if c.cmd.ProcessState != nil {
		return nil
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	return c.cmd.Wait()
}

// Three schedulers in three processes share one schedule that fires every
// second. The leader is SIGKILLed in the middle of a tick (its enqueue
// written but not committed, the leader lock still held); a follower takes
// over and every tick is enqueued exactly once, with no gap. Enqueues are
// counted by a trigger that logs every insert the scheduler attempts, so a
// second enqueue of a tick is seen even when the dedupe index would have
// swallowed it.
func TestSchedulerThreeProcessesLeaderKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	pool := testdb.Pool(t, dbURL)
	everySecondLogged(t, pool)

	children := map[string]*schedChild{}
	for _, app := range []string{"sched-a", "sched-b", "sched-c"} {
		children[app] = startSchedChild(t, dbURL, app)
	}
	// leader reads who holds the leader lock in this database, from pg_locks.
	key := int64(0x7363686564756c65)
	leader := func() string {
		rows, err := pool.Query(ctx, `
			SELECT a.application_name
			FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND l.classid::bigint = $1 AND l.objid::bigint = $2`, key>>32, key&0xffffffff)
		require.NoError(t, err)
		apps, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.LessOrEqual(t, len(apps), 1, "two sessions hold the leader lock: %v", apps)
		if len(apps) == 0 {
			return ""
		}
		return apps[0]
	}
	enqueuedBy := func(app string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM test_enqueue_log WHERE app LIKE $1", app).Scan(&n))
		return n
	}
	var first string
	testdb.Eventually(t, 20*time.Second, "a scheduler process to hold the leader lock", func() bool { first = leader(); return first != "" })
	require.Contains(t, children, first)
	testdb.Eventually(t, 20*time.Second, "three ticks", func() bool { return enqueuedBy("%") >= 3 })

	// Hold the leader in the middle of its next tick: with jobs locked
	// against writes, its enqueue waits inside the tick transaction.
	block, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer block.Rollback(ctx)
	_, err = block.Exec(ctx, "LOCK TABLE jobs IN SHARE MODE")
	require.NoError(t, err)
	testdb.Eventually(t, 20*time.Second, "the leader's enqueue waiting inside its tick", func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND state = 'active' AND wait_event_type = 'Lock'`, first).Scan(&n))
		return n == 1
	})
	require.Equal(t, first, leader(), "the leader lost its lock before it was killed")
	var inflight time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT next_run_at FROM schedules WHERE name = 'every-second'").Scan(&inflight))
	err = children[first].kill()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, "signal: killed", exit.Error())
	// The orphaned backend finishes its insert once the table is free, then
	// finds its client gone and rolls the tick back.
	require.NoError(t, block.Rollback(ctx))

	var second string
	testdb.Eventually(t, 20*time.Second, "another process to take the leader lock", func() bool {
		second = leader()
		return second != "" && second != first
	})
	testdb.Eventually(t, 20*time.Second, "five ticks from the new leader", func() bool { return enqueuedBy(second) >= 5 })
	for _, c := range children {
		c.kill()
	}

	times, byApp := ticksOnce(t, pool)
	require.Equal(t, second, byApp[ScheduleDedupeKey("every-second", inflight)],
		"the tick the killed leader held was enqueued by its successor")
	s, err := ScheduleGet(ctx, pool, "every-second")
	require.NoError(t, err)
	require.Equal(t, times[len(times)-1], s.LastRunAt.UTC())
	require.Equal(t, times[len(times)-1].Add(time.Second), s.NextRunAt.UTC())
}

// everySecondLogged creates the every-second schedule (kind noop, queue
// ticks) and makes every job insert log its dedupe key and the inserting
// session's application_name in test_enqueue_log. A BEFORE trigger runs for
// every row an INSERT proposes, before ON CONFLICT looks at the dedupe
// index; the log row commits or rolls back with the scheduler's own
// transaction.
func everySecondLogged(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		CREATE TABLE test_enqueue_log (
			dedupe_key text NOT NULL,
			app        text NOT NULL,
			at         timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE FUNCTION test_log_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO test_enqueue_log (dedupe_key, app)
			VALUES (NEW.dedupe_key, current_setting('application_name'));
			RETURN NEW;
		END $$;
		CREATE TRIGGER test_log_enqueue BEFORE INSERT ON jobs
			FOR EACH ROW EXECUTE FUNCTION test_log_enqueue()`)
	require.NoError(t, err)
	_, err = ScheduleCreate(ctx, pool, ScheduleParams{Name: "every-second", Spec: "@every 1s", Kind: "noop", Queue: "ticks"})
	require.NoError(t, err)
}

// ticksOnce reads test_enqueue_log (see everySecondLogged) once the
// schedulers stopped: it fails when a tick was enqueued more than once, a
// logged enqueue is not a job, or two ticks are not a second apart, and
// returns the ticks in order and who enqueued each, by dedupe key.
func ticksOnce(t *testing.T, pool *pgxpool.Pool) (times []time.Time, byApp map[string]string) {
	t.Helper()
	ctx := context.Background()
	type logged struct {
		Key  string `db:"dedupe_key"`
		Apps string `db:"apps"`
		N    int    `db:"n"`
	}
	rows, err := pool.Query(ctx, `SELECT dedupe_key, string_agg(app, ',' ORDER BY at) AS apps, count(*)::int AS n
		FROM test_enqueue_log GROUP BY dedupe_key ORDER BY dedupe_key`)
	require.NoError(t, err)
	log, err := pgx.CollectRows(rows, pgx.RowToStructByName[logged])
	require.NoError(t, err)
	byApp = map[string]string{}
	for _, l := range log {
		require.Equal(t, 1, l.N, "tick %s enqueued %d times (by %s)", l.Key, l.N, l.Apps)
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(l.Key, "schedule:every-second:"))
		require.NoError(t, err)
		times = append(times, ts)
		byApp[l.Key] = l.Apps
	}
	var jobs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'ticks'").Scan(&jobs))
	require.Equal(t, len(log), jobs, "every logged enqueue is a job")
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		require.Equal(t, time.Second, times[i].Sub(times[i-1]), "gap or overlap between ticks %s and %s", times[i-1], times[i])
	}
	return times, byApp
}
