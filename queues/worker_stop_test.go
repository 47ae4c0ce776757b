package queues

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestWorkerHeartbeatAfterStop checks that a heartbeat which reaches the
// server after the worker marked its row stopped (a maintenance tick's
// statement cut short at Stop whose query still ran later) leaves the row
// stopped, while a worker wrongly found dead is revived by its next
// heartbeat.
func TestWorkerHeartbeatAfterStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	register := func(id string) {
		_, err := pool.Exec(ctx, sqlText("worker_register"), id, "h", 1, []string{"q"}, 4, "v", 1000)
		require.NoError(t, err)
	}
	beat := func(id string, inFlight int, stopped bool) {
		_, err := pool.Exec(ctx, sqlText("worker_heartbeat"), id, inFlight, map[string]int{"q": inFlight}, stopped, 4, "[]")
		require.NoError(t, err)
	}
	row := func(id string) Worker {
		ws, err := WorkerList(ctx, pool)
		require.NoError(t, err)
		for _, w := range ws {
			if w.ID == id {
				return w
			}
		}
		t.Fatalf("worker %s is not in the registry", id)
		return Worker{}
	}

	register("graceful")
	beat("graceful", 0, true)
	beat("graceful", 1, false) // the late tick
	w := row("graceful")
	require.NotNil(t, w.StoppedAt, "a late heartbeat revived a worker that stopped: %+v", w)
	require.Zero(t, w.InFlight, "a late heartbeat overwrote the stopped row: %+v", w)

	register("found-dead")
	_, err := pool.Exec(ctx, `UPDATE workers SET stopped_at = clock_timestamp(), reclaimed_at = clock_timestamp(),
		last_seen_at = clock_timestamp() - interval '1 minute' WHERE id = 'found-dead'`)
	require.NoError(t, err)
	beat("found-dead", 1, false)
	w = row("found-dead")
	require.Nil(t, w.StoppedAt, "a worker found dead that heartbeats again is live: %+v", w)
	require.WithinDuration(t, time.Now(), w.LastSeenAt, time.Minute)

	// A stopped worker that starts again registers afresh.
	register("graceful")
	beat("graceful", 2, false)
	require.Nil(t, row("graceful").StoppedAt)
}
