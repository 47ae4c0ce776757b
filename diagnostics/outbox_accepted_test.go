package diagnostics_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues"
)

// The relay crash window "published to the broker, not marked": a real
// relay publishes three events, the broker accepts them, the relay records
// the acceptance, and its mark fails (the server refuses the update, as a
// full disk or a dropped connection would). The outbox backlog finding and
// the outbox panel name those events, which will be delivered again.
func TestOutboxAcceptedButNotMarkedIsEvidence(t *testing.T) {
	ctx, url, pool := freshPool(t)
	rows, err := pool.Query(ctx, `INSERT INTO outbox_events (topic, event_type, payload)
		SELECT 'orders', 'created', '{}' FROM generate_series(1, 3) RETURNING id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `CREATE FUNCTION refuse_mark() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'staged: the mark cannot be written'; END $$;
		CREATE TRIGGER refuse_mark BEFORE UPDATE ON outbox_events
		FOR EACH ROW WHEN (NEW.state = 'published') EXECUTE FUNCTION refuse_mark()`)
	require.NoError(t, err)

	var accepted atomic.Int64
	relay, err := queues.NewRelay(pool, queues.RelayConfig{
		Publisher: queues.PublisherFunc(func(context.Context, *queues.OutboxMessage) error {
			accepted.Add(1)
			return nil
		}),
		ID: "relay-mark-fails", LeaseDuration: time.Minute, PollInterval: 50 * time.Millisecond, DisableListen: true,
	})
	require.NoError(t, err)
	require.NoError(t, relay.Start(ctx))
	eventually(t, 20*time.Second, func() (bool, string) {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_events WHERE accepted_at IS NOT NULL").Scan(&n))
		return n == len(ids), fmt.Sprintf("%d of %d accepted (broker saw %d)", n, len(ids), accepted.Load())
	})
	relay.Stop()

	th := diagnostics.DefaultThresholds()
	th.OutboxBacklogPending = 1
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	f, _ := onlyFinding(t, d, findings.CodeOutboxBacklog, "one queue's backlog")
	require.EqualValues(t, 3, f.Subject["accepted_unmarked"])
	require.EqualValues(t, 3, f.Subject["inflight"], "in flight under the dead relay's lease")
	require.Equal(t, ids, f.Subject["accepted_unmarked_ids"])
	idText := fmt.Sprintf("%d, %d, %d", ids[0], ids[1], ids[2])
	require.Contains(t, f.Evidence, "3 accepted by the broker but not marked published")
	require.Contains(t, f.Evidence, "ids "+idText+")")

	panel := d.OutboxHealth(ctx)
	require.NoError(t, panel.Err)
	require.Len(t, panel.Rows, 1)
	o := panel.Rows[0]
	require.EqualValues(t, 3, o.AcceptedUnmarked)
	require.Equal(t, ids, o.AcceptedUnmarkedIDs)
	require.NotNil(t, o.OldestAcceptedAt)

	// The probe's predicate matches the partial index (which holds only
	// these events), so it never walks the backlog.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "SET LOCAL enable_seqscan = off")
	require.NoError(t, err)
	prows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) SELECT id FROM outbox_events WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL ORDER BY accepted_at, id LIMIT 10")
	require.NoError(t, err)
	lines, err := pgx.CollectRows(prows, pgx.RowTo[string])
	require.NoError(t, err)
	plan := strings.Join(lines, "\n")
	require.Contains(t, plan, "outbox_accepted_unmarked_idx", plan)
}
