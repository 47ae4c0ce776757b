package queues

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestWorkerHeartbeatAfterStop checks that a heartbeat which reaches the
// server after the worker marked its row stopped (a maintenance tick's
// statement cut short at Stop whose query still ran later) leaves the row
// stopped, and that a stopping worker forgets its session.
func TestWorkerHeartbeatAfterStop(t *testing.T) {
	t.Parallel()
	h := workerRegistry(t, testdb.New(t))

	h.register("graceful")
	h.recordSession("graceful")
	h.beat("graceful", 0, true)
	h.beat("graceful", 1, false) // the late tick
	w := h.row("graceful")
	require.NotNil(t, w.StoppedAt, "a late heartbeat revived a worker that stopped: %+v", w)
	require.Zero(t, w.InFlight, "a late heartbeat overwrote the stopped row: %+v", w)

	// A worker once found dead and back since stops; its session is still
	// open on the server when the late tick lands.
	h.register("was-reclaimed")
	h.recordSession("was-reclaimed")
	_, err := h.pool.Exec(context.Background(), "UPDATE workers SET reclaimed_at = clock_timestamp() - interval '1 hour' WHERE id = 'was-reclaimed'")
	require.NoError(t, err)
	h.beat("was-reclaimed", 0, true)
	h.beat("was-reclaimed", 1, false)
	w = h.row("was-reclaimed")
	require.NotNil(t, w.StoppedAt, "a late heartbeat revived a once-reclaimed worker that stopped: %+v", w)
	require.Zero(t, w.InFlight, "%+v", w)

	// A stopped worker that starts again registers afresh.
	h.register("graceful")
	h.beat("graceful", 2, false)
	require.Nil(t, h.row("graceful").StoppedAt)
}

// TestWorkerHeartbeatAfterReclaim: a worker found dead (heartbeat stale,
// recorded session gone) and reclaimed stays stopped when a heartbeat it
// sent before dying reaches the server late, and its reclaimed job stays
// fenced. A worker that was only taken for dead comes back with its next
// heartbeat once it has recorded a new session.
func TestWorkerHeartbeatAfterReclaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	h := workerRegistry(t, pool)

	h.register("found-dead")
	session := h.recordSession("found-dead")
	j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "q", Kind: "k"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE jobs SET status = 'running', lease_owner = 'found-dead', lease_until = now() + interval '1 hour',
		lease_generation = lease_generation + 1, attempts = 1 WHERE id = $1`, j.ID)
	require.NoError(t, err)
	gen := h.generation(j.ID)
	h.beat("found-dead", 1, false)
	_, err = pool.Exec(ctx, "UPDATE workers SET last_seen_at = clock_timestamp() - interval '1 minute' WHERE id = 'found-dead'")
	require.NoError(t, err)
	require.NoError(t, session.Close(ctx))
	testdb.Eventually(t, 30*time.Second, "the dead worker found and its job reclaimed", func() bool {
		res, err := JobReclaimDead(ctx, pool, time.Second, 20)
		require.NoError(t, err)
		return len(res.Workers) == 1
	})
	dead := h.row("found-dead")
	require.NotNil(t, dead.StoppedAt)
	require.NotNil(t, dead.ReclaimedAt)

	h.beat("found-dead", 2, false) // sent before the process died, run late
	w := h.row("found-dead")
	require.NotNil(t, w.StoppedAt, "a late heartbeat revived a worker found dead: %+v", w)
	require.False(t, w.Alive, "%+v", w)
	require.Equal(t, dead.LastSeenAt, w.LastSeenAt, "a late heartbeat made a dead worker look seen: %+v", w)
	require.Equal(t, dead.InFlight, w.InFlight, "a late heartbeat overwrote the dead worker's row: %+v", w)
	require.ErrorIs(t, JobAck(ctx, pool, j.ID, "found-dead", gen), ErrLeaseLost, "the reclaimed job stays fenced")

	// The worker was alive after all: its listener reconnects and records
	// a new session, and its next heartbeat brings the row back.
	h.recordSession("found-dead")
	h.beat("found-dead", 0, false)
	w = h.row("found-dead")
	require.Nil(t, w.StoppedAt, "a worker found dead that has a live session again is live: %+v", w)
	require.True(t, w.Alive, "%+v", w)
	require.NotNil(t, w.ReclaimedAt, "the reclaim stays on record")
	require.ErrorIs(t, JobAck(ctx, pool, j.ID, "found-dead", gen), ErrLeaseLost, "the reclaimed job stays fenced")
}

// TestWorkerMarkedDeadOnSecondLook: a worker is marked dead only when it
// looks dead twice, on the same server. One whose session is back by the
// second look (as a live worker's is when the first look was taken while
// a shutting-down server ended sessions one by one) keeps its row and
// leases; once it looks dead both times it is marked.
func TestWorkerMarkedDeadOnSecondLook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	h := workerRegistry(t, pool)
	h.register("flicker")
	session := h.recordSession("flicker")
	_, err := pool.Exec(ctx, "UPDATE workers SET last_seen_at = clock_timestamp() - interval '1 minute' WHERE id = 'flicker'")
	require.NoError(t, err)
	require.NoError(t, session.Close(ctx))

	var back *pgx.Conn
	testdb.Eventually(t, 30*time.Second, "the worker looked dead once", func() bool {
		res, err := reclaimDeadWorkers(ctx, pool, time.Second, 20, func(context.Context) error {
			back = h.recordSession("flicker")
			return nil
		})
		require.NoError(t, err)
		require.Empty(t, res.Workers, "marked dead on one look: its session was back by the second")
		return back != nil
	})
	w := h.row("flicker")
	require.Nil(t, w.ReclaimedAt, "%+v", w)
	require.Nil(t, w.StoppedAt, "%+v", w)

	require.NoError(t, back.Close(ctx))
	testdb.Eventually(t, 30*time.Second, "the worker found dead on two looks", func() bool {
		res, err := JobReclaimDead(ctx, pool, time.Second, 20)
		require.NoError(t, err)
		return slices.Equal(res.Workers, []string{"flicker"})
	})
	require.NotNil(t, h.row("flicker").ReclaimedAt)
}

// TestWorkerRowDeletedIsPutBack: a live worker whose workers row is
// deleted by hand puts it back at its next heartbeat, records its session
// in it again, and heartbeats into it, rather than asking for a new
// session every ten seconds for as long as it runs.
func TestWorkerRowDeletedIsPutBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	c := startClient(t, pool, testConfig(map[string]QueueConfig{"q": {Concurrency: 3}}), nil)
	h := workerRegistry(t, pool)
	testdb.Eventually(t, 20*time.Second, "the worker's session recorded", func() bool {
		return h.row(c.ID()).BackendPID != nil
	})
	tag, err := pool.Exec(ctx, "DELETE FROM workers WHERE id = $1", c.ID())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	deleted := time.Now()
	testdb.Eventually(t, 20*time.Second, "the row put back, with its session and a heartbeat", func() bool {
		ws, err := WorkerList(ctx, pool, 0)
		require.NoError(t, err)
		for _, w := range ws {
			if w.ID == c.ID() {
				return w.BackendPID != nil && w.StoppedAt == nil && w.LastSeenAt.After(deleted) && w.Concurrency == 3
			}
		}
		return false
	})
}

// registryHelper drives workers rows with the engine's own statements.
type registryHelper struct {
	t    *testing.T
	pool *pgxpool.Pool
}

func workerRegistry(t *testing.T, pool *pgxpool.Pool) registryHelper {
	return registryHelper{t: t, pool: pool}
}

func (h registryHelper) register(id string) {
	_, err := h.pool.Exec(context.Background(), sqlText("worker_register"), id, "h", 1, []string{"q"}, 4, "v", 1000)
	require.NoError(h.t, err)
}

// beat runs a heartbeat as the worker's maintenance loop (or its Stop,
// with stopped) sends it.
func (h registryHelper) beat(id string, inFlight int, stopped bool) {
	_, err := h.pool.Exec(context.Background(), sqlText("worker_heartbeat"), id, inFlight, map[string]int{"q": inFlight}, stopped, 4, "[]")
	require.NoError(h.t, err)
}

// recordSession opens a connection that records itself as the worker's
// long-lived session, as the worker's listener does; it is closed at
// cleanup.
func (h registryHelper) recordSession(id string) *pgx.Conn {
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, h.pool.Config().ConnConfig.Copy())
	require.NoError(h.t, err)
	h.t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, sqlText("worker_session_record"), id)
	require.NoError(h.t, err)
	return conn
}

func (h registryHelper) row(id string) Worker {
	ws, err := WorkerList(context.Background(), h.pool, 0)
	require.NoError(h.t, err)
	for _, w := range ws {
		if w.ID == id {
			return w
		}
	}
	h.t.Fatalf("worker %s is not in the registry", id)
	return Worker{}
}

func (h registryHelper) generation(id int64) int64 {
	var gen int64
	require.NoError(h.t, h.pool.QueryRow(context.Background(), "SELECT lease_generation FROM jobs WHERE id = $1", id).Scan(&gen))
	return gen
}
