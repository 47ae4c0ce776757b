package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
)

// TestExpectVersion: an execution that names the preview it confirms runs
// only while the state is the one that preview saw; otherwise it changes
// nothing, is audited as refused, and returns the new preview.
func TestExpectVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	t.Run("QueuePausedMeanwhile", func(t *testing.T) {
		dry, err := r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, "Pause queue `emails`: paused; 0 jobs in flight on 0 live workers", dry.Summary)
		require.NotEmpty(t, dry.Version)

		_, err = r.Run(ctx, admin, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
		require.NoError(t, err)
		before := auditCount(t, pool)
		out, err := r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason,
			ExpectVersion: dry.Version})
		require.ErrorIs(t, err, actions.ErrStale)
		require.ErrorIs(t, err, actions.ErrGuard, "a stale preview is a guard refusal (409)")
		require.Nil(t, out.Result)
		require.NotEqual(t, dry.Version, out.Version)
		require.Contains(t, out.Summary, "no change: it is already paused", "the refusal carries the new preview")
		require.Equal(t, before+1, auditCount(t, pool))
		require.Equal(t, "refused", string(lastAudit(t, pool).Outcome))
	})
	t.Run("SameStateRuns", func(t *testing.T) {
		id := insertJob(t, pool, "same", "dead", "smtp.timeout")
		dry, err := r.Run(ctx, operator, "job.retry_now", actions.Request{Params: map[string]any{"id": id}, DryRun: true})
		require.NoError(t, err)
		out, err := r.Run(ctx, operator, "job.retry_now", actions.Request{Params: map[string]any{"id": id}, Reason: reason,
			ExpectVersion: dry.Version})
		require.NoError(t, err)
		require.Equal(t, dry.Version, out.Version)
		require.Equal(t, "ready", queryText(t, pool, "SELECT status FROM jobs WHERE id = $1", id))
		require.Contains(t, out.ResultSummary, "is now ready")
	})
	t.Run("GoneMeanwhile", func(t *testing.T) {
		id := insertJob(t, pool, "gone", "dead", "smtp.timeout")
		dry, err := r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: map[string]any{"queue": "gone"}, DryRun: true})
		require.NoError(t, err)
		exec(t, pool, "UPDATE jobs SET status = 'ready', finished_at = NULL WHERE id = $1", id)
		_, err = r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: map[string]any{"queue": "gone"}, Reason: reason,
			ExpectVersion: dry.Version})
		require.ErrorIs(t, err, actions.ErrStale, "what was previewed is gone")
		require.ErrorIs(t, err, actions.ErrNotFound)
	})
	t.Run("MovingCountsAreNotState", func(t *testing.T) {
		// The outbox backlog moves on its own; the preview shows it, but a
		// change of it alone does not void the relay's preview.
		a, err := r.Run(ctx, operator, "relay.pause", actions.Request{DryRun: true})
		require.NoError(t, err)
		insertDeadOutbox(t, pool, "orders")
		b, err := r.Run(ctx, operator, "relay.pause", actions.Request{DryRun: true})
		require.NoError(t, err)
		require.NotEqual(t, a.Summary, b.Summary, "the backlog shown moved")
		require.Equal(t, a.Version, b.Version)
	})
}

// TestBulkJobActions: jobs.retry_now and jobs.cancel change the selected
// jobs they apply to, leave the others alone and say so, and change all or
// nothing.
func TestBulkJobActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	dead1, dead2 := insertJob(t, pool, "bulk", "dead", "smtp.timeout"), insertJob(t, pool, "bulk", "dead", "smtp.timeout")
	done := insertJob(t, pool, "bulk", "done", "")
	params := map[string]any{"ids": []int64{dead1, dead2, done}}
	dry, err := r.Run(ctx, operator, "jobs.retry_now", actions.Request{Params: params, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, "Retry 2 jobs in queue `bulk`: each becomes ready and due now, keeping its history; 1 selected job is left alone", dry.Summary)
	p := dry.Preview.(actions.BulkJobPreview)
	require.Equal(t, 2, p.Count)
	require.Equal(t, []actions.SkippedJob{{ID: done, Reason: "is done; this action applies to ready or dead jobs"}}, p.Skipped)

	out, err := r.Run(ctx, operator, "jobs.retry_now", actions.Request{Params: params, Reason: reason, ExpectVersion: dry.Version})
	require.NoError(t, err)
	require.Equal(t, "2 jobs are now ready", out.ResultSummary)
	require.EqualValues(t, 2, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'ready'", []int64{dead1, dead2}))
	require.Equal(t, "done", queryText(t, pool, "SELECT status FROM jobs WHERE id = $1", done))

	_, err = r.Run(ctx, operator, "jobs.cancel", actions.Request{Params: map[string]any{"ids": []int64{done}}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrInvalid, "nothing selected applies")
}
