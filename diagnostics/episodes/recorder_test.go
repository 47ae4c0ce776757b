package episodes_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
	"github.com/pgconsole/console/queues"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// lookEvery is the recorders' interval in these tests: short, so an end is
// seen well within the second the tests allow on a busy machine.
const lookEvery = 100 * time.Millisecond

// startRecorder starts a recorder named name on url, stopped at cleanup.
func startRecorder(t *testing.T, url, name string) *episodes.Recorder {
	t.Helper()
	r, err := episodes.New(episodes.Config{URL: url, Interval: lookEvery, Name: name, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Stop)
	testdb.Eventually(t, 30*time.Second, name+" decides whether it records", func() bool { return r.Status().Reason != "" })
	return r
}

// holdWait makes waiter wait on the row lock holder takes, for about hold,
// then releases it and returns when waiter has its lock, with the moment
// the waiter began and the moment the lock was released.
func holdWait(t *testing.T, pool interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, holder, waiter *pgx.Conn, waiterApp string, hold time.Duration) (began, released time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := holder.Exec(ctx, "BEGIN; SELECT * FROM accounts WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	began = time.Now()
	go func() {
		_, err := waiter.Exec(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
		done <- err
	}()
	testdb.WaitBackend(t, pool, waiterApp, "wait_event_type = 'Lock' AND datname = current_database()")
	time.Sleep(hold) // the wait itself: the thing recorded
	released = time.Now()
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not get its lock within 30s of the release")
	}
	return began, released
}

// accountsDB is a fresh database with one row to fight over.
func accountsDB(t *testing.T) string {
	t.Helper()
	url := testdb.URL(t)
	conn := testdb.Connect(t, url, "setup")
	_, err := conn.Exec(context.Background(), "CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL); INSERT INTO accounts VALUES (1, 0)")
	require.NoError(t, err)
	return url
}

// closedEpisodes lists every episode, waiting until want of them are
// closed.
func closedEpisodes(t *testing.T, url string, want int) []episodes.Episode {
	t.Helper()
	pool := testdb.Pool(t, url)
	var eps []episodes.Episode
	testdb.Eventually(t, 30*time.Second, fmt.Sprintf("%d closed episodes", want), func() bool {
		var err error
		eps, err = episodes.List(context.Background(), pool, episodes.ListParams{Since: time.Now().Add(-time.Hour)})
		require.NoError(t, err)
		closed := 0
		for _, e := range eps {
			if e.End != nil {
				closed++
			}
		}
		return closed >= want
	})
	return eps
}

func within(t *testing.T, what string, want, got time.Time, tol time.Duration) {
	t.Helper()
	d := got.Sub(want)
	require.Truef(t, d > -tol && d < tol, "%s: %s, want %s within %s (off by %s)", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano), tol, d)
}

// A two-second wait, shorter than the flight recorder's interval, is one
// episode: its root, start and end within a second, seen to its end.
func TestShortWaitIsOneEpisode(t *testing.T) {
	t.Parallel()
	url := accountsDB(t)
	startRecorder(t, url, "rec")
	holder := testdb.Connect(t, url, "batch-import")
	waiter := testdb.Connect(t, url, "billing")
	var holderPID int32
	require.NoError(t, holder.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&holderPID))

	began, released := holdWait(t, testdb.Pool(t, url), holder, waiter, "billing", 2*time.Second)

	eps := closedEpisodes(t, url, 1)
	require.Equal(t, 1, len(eps), "one wait, one episode")
	e := eps[0]
	require.Equal(t, holderPID, e.RootPID)
	require.Equal(t, "batch-import", e.RootApplication)
	require.Contains(t, e.RootQuery, "FOR UPDATE")
	within(t, "start", began, e.Start, time.Second)
	within(t, "end", released, *e.End, time.Second)
	require.True(t, e.EndSeen)
	require.Equal(t, []string{"accounts"}, e.Tables)
	require.Equal(t, 1, e.PeakWaiting)
	require.InDelta(t, 2.0, e.Duration().Seconds(), 1.0)
	roles := map[string]string{}
	for _, p := range e.Participants {
		roles[p.Application] = p.Role
	}
	require.Equal(t, map[string]string{"batch-import": "root", "billing": "waiter"}, roles)
	require.NotEmpty(t, e.Participants[0].Held, "what the root held")
	require.Contains(t, e.Participants[0].Held[0], "accounts")
}

// Waits of one to three seconds in a row, by the same sessions on the same
// row, are separate episodes, each with its own length.
func TestWaitsInARowAreSeparateEpisodes(t *testing.T) {
	testdb.SkipShort(t, "three lock waits of 1-3 s")
	t.Parallel()
	url := accountsDB(t)
	startRecorder(t, url, "rec")
	holder := testdb.Connect(t, url, "batch-import")
	waiter := testdb.Connect(t, url, "billing")
	pool := testdb.Pool(t, url)
	holds := []time.Duration{time.Second, 3 * time.Second, 1500 * time.Millisecond}
	for _, h := range holds {
		holdWait(t, pool, holder, waiter, "billing", h)
	}
	eps := closedEpisodes(t, url, len(holds))
	require.Equal(t, len(holds), len(eps), "one episode per wait")
	// List sorts by impact: the longest first.
	require.InDelta(t, 3.0, eps[0].Duration().Seconds(), 1.0)
	for _, e := range eps {
		require.True(t, e.EndSeen)
		require.Equal(t, "batch-import", e.RootApplication)
	}
}

// A recorder that loses its session mid-episode (a crash, a restart) takes
// the lock again and closes the episode it had open as not seen to its
// end; the wait, still going, is a new episode.
func TestRestartedRecorderClosesOpenEpisodeAsNotSeen(t *testing.T) {
	t.Parallel()
	url := accountsDB(t)
	rec := startRecorder(t, url, "rec")
	ctx := context.Background()
	holder := testdb.Connect(t, url, "batch-import")
	waiter := testdb.Connect(t, url, "billing")
	pool := testdb.Pool(t, url)
	_, err := holder.Exec(ctx, "BEGIN; SELECT * FROM accounts WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
		done <- err
	}()
	testdb.WaitBackend(t, pool, "billing", "wait_event_type = 'Lock' AND datname = current_database()")
	testdb.Eventually(t, 30*time.Second, "the episode is recorded open", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM lock_episodes WHERE end_at IS NULL") == 1
	})

	// The recorder's session ends as in a crash: nothing is closed by it.
	_, err = pool.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", episodes.ApplicationName)
	require.NoError(t, err)
	testdb.Eventually(t, 30*time.Second, "the first episode is closed, end not seen", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM lock_episodes WHERE end_at IS NOT NULL AND NOT end_seen AND end_at = last_seen_at") == 1
	})
	testdb.Eventually(t, 30*time.Second, "the wait goes on as a new episode", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM lock_episodes WHERE end_at IS NULL") == 1
	})
	require.True(t, rec.Status().Leader)
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-done)
	eps := closedEpisodes(t, url, 2)
	seen := map[bool]int{}
	for _, e := range eps {
		seen[e.EndSeen]++
	}
	require.Equal(t, map[bool]int{false: 1, true: 1}, seen)
}

// Two consoles on one database: one records, the other says who does, and
// the wait is recorded once.
func TestOnlyOneOfTwoRecordersRecords(t *testing.T) {
	t.Parallel()
	url := accountsDB(t)
	a := startRecorder(t, url, "console-a")
	b := startRecorder(t, url, "console-b")
	testdb.Eventually(t, 30*time.Second, "one leader", func() bool { return a.Status().Leader != b.Status().Leader })
	leader, follower := a, b
	name := "console-a"
	if b.Status().Leader {
		leader, follower, name = b, a, "console-b"
	}
	require.True(t, follower.Status().On)
	require.Contains(t, follower.Status().Reason, "another console")
	require.Contains(t, leader.Status().Reason, "this console")

	holdWait(t, testdb.Pool(t, url), testdb.Connect(t, url, "batch-import"), testdb.Connect(t, url, "billing"), "billing", time.Second)
	eps := closedEpisodes(t, url, 1)
	require.Equal(t, 1, len(eps), "recorded once")
	require.Equal(t, name, eps[0].RecordedBy)
}

// An application whose transactions hold up the engine's job claims again
// and again is named, with its statement.
func TestRepeatBlockerOfClaims(t *testing.T) {
	testdb.SkipShort(t, "three blocked job claims")
	t.Parallel()
	url := testdb.URL(t)
	startRecorder(t, url, "rec")
	ctx := context.Background()
	pool := testdb.Pool(t, url)
	holder := testdb.Connect(t, url, "nightly-report")
	claimer := testdb.Connect(t, url, queues.ApplicationName)
	for range 3 {
		_, err := holder.Exec(ctx, "BEGIN; LOCK TABLE jobs IN SHARE MODE")
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := queues.JobClaim(ctx, claimer, queues.JobClaimParams{Queue: "default", Limit: 1, Owner: "w1", Lease: time.Minute})
			done <- err
		}()
		testdb.WaitBackend(t, pool, queues.ApplicationName, "wait_event_type = 'Lock' AND datname = current_database()")
		time.Sleep(time.Second)
		_, err = holder.Exec(ctx, "ROLLBACK")
		require.NoError(t, err)
		require.NoError(t, <-done)
	}
	closedEpisodes(t, url, 3)
	got, err := episodes.RepeatBlockers(ctx, pool, time.Now().Add(-time.Hour), 3)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "nightly-report", got[0].RootApplication)
	require.Equal(t, 3, got[0].Episodes)
	require.Equal(t, 3, got[0].ClaimsDelayed)
	require.Equal(t, []string{"BEGIN; LOCK TABLE jobs IN SHARE MODE"}, got[0].Statements)
	require.Contains(t, got[0].Sentence("last hour"), `"nightly-report" blocked the job claims 3 times`)
}

// TestCostAtRest measures what the recorder costs while nothing waits: one
// statement a look, read from pg_stat_statements over ten seconds.
func TestCostAtRest(t *testing.T) {
	testdb.SkipShort(t, "ten seconds of looks")
	t.Parallel()
	url := testdb.URL(t)
	ctx := context.Background()
	pool := testdb.Pool(t, url)
	_, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	require.NoError(t, err)
	r, err := episodes.New(episodes.Config{URL: url, Interval: time.Second, Name: "rest"})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	testdb.Eventually(t, 30*time.Second, "recording", func() bool { return r.Status().Leader })
	const window = 10 * time.Second
	time.Sleep(window) // the measured stretch of looks
	r.Stop()
	var calls int
	var ms float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int, coalesce(sum(total_exec_time), 0)
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query LIKE '%FROM pg_stat_get_activity(%'`).Scan(&calls, &ms))
	t.Logf("at rest: %d probes in %s: %.2f statements/s, %.3f ms/s of server time (%.3f ms each)",
		calls, window, float64(calls)/window.Seconds(), ms/window.Seconds(), ms/float64(max(calls, 1)))
	require.GreaterOrEqual(t, calls, 3, "the recorder looks about every second")
	require.Less(t, ms/float64(max(calls, 1)), 100.0, "a look while nothing waits is a trivial statement")
}

// On a standby nothing is recorded (it could not be written), the lock is
// given back, and Status says where the episodes are recorded instead.
func TestRecorderStandsDownOnAStandby(t *testing.T) {
	testdb.AdminURL(t) // the shared server first: its base folder is made without a lock
	primary := testdb.NewServer(t, nil)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	conn.Close(ctx)
	standby := testdb.Standby(t, primary, nil, "episodes-standby")

	r := startRecorder(t, standby.URL("postgres"), "on-standby")
	st := r.Status()
	require.False(t, st.On)
	require.False(t, st.Leader)
	require.Contains(t, st.Reason, "standby")
	held := testdb.Count(t, testdb.Pool(t, standby.URL("postgres")),
		"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
	require.Zero(t, held, "the recorder's lock is given back on a standby")
}
