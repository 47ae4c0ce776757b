package actions_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// insertDead inserts n dead jobs of one queue and error class.
func insertDead(t *testing.T, pool *pgxpool.Pool, n int, queue, class string) {
	t.Helper()
	exec(t, pool, `INSERT INTO jobs (queue, kind, status, error_class, last_error, attempts, finished_at, errors)
		SELECT $1, 'email.send', 'dead', $2, $2 || ': attempt 8 failed', 8, clock_timestamp() - g * interval '1 ms',
		       jsonb_build_array(jsonb_build_object('attempt', 8, 'error', $2))
		FROM generate_series(1, $3) AS g`, queue, class, n)
}

func TestRequeueCapAndErrorClassFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{RequeueCap: 10000})
	insertDead(t, pool, 20000, "emails", "smtp.timeout")
	insertDead(t, pool, 5000, "emails", "template.missing")
	insertDead(t, pool, 30, "reports", "smtp.timeout")

	t.Run("OverCapIsRefused", func(t *testing.T) {
		all := map[string]any{"queue": "emails"}
		dry, err := r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: all, DryRun: true})
		require.NoError(t, err)
		pv := dry.Preview.(actions.RequeuePreview)
		require.EqualValues(t, 25000, pv.Count)
		require.True(t, pv.OverCap)
		require.Contains(t, pv.Warning, "cap of 10000")
		require.Len(t, pv.ErrorClasses, 2)
		require.Equal(t, actions.ErrorClassCount{ErrorClass: "smtp.timeout", Count: 20000}, pv.ErrorClasses[0])
		require.Len(t, pv.Sample, 10)

		_, err = r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: all, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, "25000 dead jobs match, more than the cap of 10000")
		require.ErrorContains(t, err, "narrow the filter")
		require.EqualValues(t, 25030, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'dead'"))
		ev := lastAudit(t, pool)
		require.Equal(t, audit.OutcomeRefused, ev.Outcome)
		require.Contains(t, ev.Error, "cap of 10000")
	})
	t.Run("OneErrorClassMovesExactlyThatClass", func(t *testing.T) {
		p := map[string]any{"queue": "emails", "error_class": "template.missing", "reset_attempts": true}
		out, err := r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: p, Reason: reason})
		require.NoError(t, err)
		res := out.Result.(actions.RequeueResult)
		require.Equal(t, 5000, res.Requeued)
		require.Len(t, res.IDs, 5000)
		require.Equal(t, 5, res.Batches, "1,000 per batch")
		require.Zero(t, res.Skipped)

		require.EqualValues(t, 5000, queryInt(t, pool,
			"SELECT count(*) FROM jobs WHERE status = 'ready' AND error_class = 'template.missing' AND attempts = 0"))
		require.EqualValues(t, 0, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'ready' AND error_class <> 'template.missing'"))
		require.EqualValues(t, 20030, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'dead'"))
		require.EqualValues(t, 5000, queryInt(t, pool,
			"SELECT count(*) FROM jobs WHERE error_class = 'template.missing' AND jsonb_array_length(errors) = 1"), "history kept")

		ev, err := audit.Get(ctx, pool, out.AuditID)
		require.NoError(t, err)
		require.Equal(t, "queue:emails error_class:template.missing", ev.Target)
		require.EqualValues(t, 5000, queryInt(t, pool,
			"SELECT jsonb_array_length(result -> 'ids') FROM audit_events WHERE id = $1", out.AuditID), "the audit records the moved ids")
		require.EqualValues(t, 5000, queryInt(t, pool, `SELECT count(*) FROM jobs j, audit_events e,
			jsonb_array_elements(e.result -> 'ids') AS moved(id) WHERE e.id = $1 AND j.id = moved.id::bigint
			AND j.error_class = 'template.missing'`, out.AuditID))
	})
	t.Run("ByIDs", func(t *testing.T) {
		rows, err := pool.Query(ctx, "SELECT id FROM jobs WHERE queue = 'reports' ORDER BY id LIMIT 3")
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		out, err := r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: map[string]any{"ids": ids}, Reason: reason})
		require.NoError(t, err)
		require.Equal(t, ids, out.Result.(actions.RequeueResult).IDs)
		require.EqualValues(t, 8, queryInt(t, pool, "SELECT attempts FROM jobs WHERE id = $1", ids[0]), "attempts kept: one more attempt")
	})
}

// TestOutboxRequeueInBatches moves more dead events than one batch holds:
// every matching event moves, in as many batches as needed, and no other.
func TestOutboxRequeueInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{RequeueBatch: 2})
	for range 5 {
		insertDeadOutbox(t, pool, "orders")
	}
	insertDeadOutbox(t, pool, "coupons")
	out, err := r.Run(ctx, operator, "outbox.requeue", actions.Request{Params: map[string]any{"topic": "orders"}, Reason: reason})
	require.NoError(t, err)
	res := out.Result.(actions.RequeueResult)
	require.Equal(t, 5, res.Requeued)
	require.Len(t, res.IDs, 5)
	require.Equal(t, 3, res.Batches, "2 + 2 + 1")
	require.EqualValues(t, 1, queryInt(t, pool, "SELECT count(*) FROM outbox_events WHERE state = 'dead'"))
}
