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
