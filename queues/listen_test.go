package queues

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/testdb"
)

// TestNextListenRetry: sessions that end early back off to the longest
// wait; a session that stayed up long enough starts the backoff over.
func TestNextListenRetry(t *testing.T) {
	t.Parallel()
	const stable = 10 * time.Second
	for _, tc := range []struct {
		name        string
		prev        time.Duration
		established bool
		up          time.Duration
		want        time.Duration
	}{
		{"FirstFailedConnect", 0, false, 0, listenRetryMin},
		{"FirstShortSession", 0, true, time.Second, listenRetryMin},
		{"FailedConnectDoubles", 400 * time.Millisecond, false, 0, 800 * time.Millisecond},
		{"ShortSessionDoubles", 400 * time.Millisecond, true, stable - 1, 800 * time.Millisecond},
		{"Capped", listenRetryMax, false, 0, listenRetryMax},
		{"LastedSessionResets", listenRetryMax, true, stable, listenRetryMin},
		{"LongSessionResets", listenRetryMax, true, time.Hour, listenRetryMin},
		// up is meaningless for a session never established.
		{"FailedConnectNeverResets", listenRetryMax, false, time.Hour, listenRetryMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, nextListenRetry(tc.prev, tc.established, tc.up, stable))
		})
	}
}

// TestListenerBackoffResetsAfterSession kills the worker's LISTEN session
// several times, each time after it came back. With every established
// session counting as lasted, each reconnect waits the shortest delay
// again: the listener does not keep the backoff of earlier losses.
func TestListenerBackoffResetsAfterSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var logs logbuf.Buffer
	cfg := testConfig(map[string]QueueConfig{"l": {Concurrency: 1}})
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	startClient(t, pool, cfg, func(c *Client) { c.listenStable = 0 })

	backend := func() int {
		var pid *int
		require.NoError(t, pool.QueryRow(ctx, "SELECT backend_pid FROM workers").Scan(&pid))
		if pid == nil {
			return 0
		}
		return *pid
	}
	testdb.Eventually(t, 10*time.Second, "the listener's session recorded", func() bool { return backend() != 0 })
	const kills = 4
	for range kills {
		pid := backend()
		var ok bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ok))
		require.True(t, ok)
		testdb.Eventually(t, 30*time.Second, "a new listener session", func() bool {
			p := backend()
			return p != 0 && p != pid
		})
	}

	var waits []time.Duration
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line struct {
			Msg     string
			RetryIn time.Duration `json:"retry_in"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Msg == "listener lost; polling continues" {
			waits = append(waits, line.RetryIn)
		}
	}
	want := make([]time.Duration, kills)
	for i := range want {
		want[i] = listenRetryMin
	}
	require.Equal(t, want, waits)
}

// TestWronglyReclaimedWorkerComesBack: another process takes this live
// worker for dead (its row stopped and reclaimed, the session it recorded
// gone from the server, as after a network cut the server noticed first)
// while the worker's own listener never noticed. Its next heartbeat is
// refused; the worker then opens a new session, which records itself, and
// the heartbeat after brings the row back to life, naming a session that
// exists. Without the new session the row would stay stopped.
func TestWronglyReclaimedWorkerComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	startClient(t, pool, testConfig(map[string]QueueConfig{"w": {Concurrency: 1}}), nil)
	waitListening(t, pool)
	var first int32
	var firstStart time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT backend_pid, backend_started_at FROM workers").Scan(&first, &firstStart))
	sessionExists := func(pid int32, start time.Time) bool {
		var ok bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND backend_start = $2)",
			pid, start).Scan(&ok))
		return ok
	}
	require.True(t, sessionExists(first, firstStart), "the listener's session is the one its row names")

	// What WorkerDeadMark writes, with the recorded session one the
	// server no longer has (a backend start before any real one).
	_, err := pool.Exec(ctx, `UPDATE workers SET stopped_at = clock_timestamp(), reclaimed_at = clock_timestamp(),
		backend_started_at = pg_postmaster_start_time() + interval '1 microsecond', backend_pid = 2147483647`)
	require.NoError(t, err)

	testdb.Eventually(t, 30*time.Second, "the row alive again, naming a live session", func() bool {
		var alive bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT w.stopped_at IS NULL AND EXISTS (
			SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.backend_pid AND a.backend_start = w.backend_started_at)
			FROM workers AS w`).Scan(&alive))
		return alive
	})
	var now int32
	require.NoError(t, pool.QueryRow(ctx, "SELECT backend_pid FROM workers").Scan(&now))
	require.NotEqual(t, first, now, "a new session was opened")
	// The worker closes the old session before it opens the new one, but a
	// backend leaves pg_stat_activity only once its process has exited,
	// which the server does on its own time after the client hangs up.
	testdb.Eventually(t, 10*time.Second, "the old listener session closed", func() bool { return !sessionExists(first, firstStart) })
}
