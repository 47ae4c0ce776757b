package actions_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// requeueCase is one requeue action, for the guards both keep.
type requeueCase struct {
	name, action string
	// param names the filter the test requeues by (a queue, a topic).
	param string
	// insert adds one dead row matching target.
	insert func(t *testing.T, pool *pgxpool.Pool, target string)
	// dead counts the dead rows matching target.
	dead string
	// what is the rows' name in the action's messages; target the audit
	// target of a requeue of target; advice what the cap's refusal asks.
	what, advice string
	target       func(target string) string
}

func requeueCases() []requeueCase {
	return []requeueCase{{
		name: "DeadJobs", action: "deadletters.requeue", param: "queue",
		insert: func(t *testing.T, pool *pgxpool.Pool, queue string) { insertJob(t, pool, queue, "dead", "smtp") },
		dead:   "SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'dead'",
		what:   "dead jobs", advice: "narrow the filter (queue, error_class, since, until) and requeue in several steps",
		target: func(queue string) string { return "queue:" + queue },
	}, {
		name: "DeadOutboxEvents", action: "outbox.requeue", param: "topic",
		insert: func(t *testing.T, pool *pgxpool.Pool, topic string) { insertDeadOutbox(t, pool, topic) },
		dead:   "SELECT count(*) FROM outbox_events WHERE topic = $1 AND state = 'dead'",
		what:   "dead outbox events", advice: "requeue by topic or by ids in several steps",
		target: func(topic string) string { return "topic:" + topic },
	}}
}

// TestRequeueCapBoundary runs each requeue at the edge of a small cap:
// exactly the cap moves every row, one more is refused with the message
// that tells the operator how to proceed, moves nothing, and is audited.
func TestRequeueCapBoundary(t *testing.T) {
	t.Parallel()
	const capRows = 3
	pool, r := setupRunner(t, actions.RunnerConfig{RequeueCap: capRows, RequeueBatch: 2})
	for _, c := range requeueCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			run := func(target string, dry bool) (actions.Outcome, error) {
				req := actions.Request{Params: map[string]any{c.param: target}, Reason: reason, DryRun: dry}
				return r.Run(ctx, operator, c.action, req)
			}
			atCap, overCap := c.name+"-at-cap", c.name+"-over-cap"
			for range capRows {
				c.insert(t, pool, atCap)
				c.insert(t, pool, overCap)
			}
			c.insert(t, pool, overCap)

			dry, err := run(atCap, true)
			require.NoError(t, err)
			require.False(t, previewOverCap(t, dry.Preview), "the preview is not over the cap")
			out, err := run(atCap, false)
			require.NoError(t, err, "exactly the cap is allowed")
			res := out.Result.(actions.RequeueResult)
			require.Equal(t, capRows, res.Requeued)
			require.Zero(t, res.Skipped)
			require.Equal(t, 2, res.Batches, "2 + 1")
			require.Zero(t, queryInt(t, pool, c.dead, atCap))

			wantRefusal := fmt.Sprintf("%d %s match, more than the cap of %d one requeue may move; %s",
				capRows+1, c.what, capRows, c.advice)
			dry, err = run(overCap, true)
			require.NoError(t, err)
			require.True(t, previewOverCap(t, dry.Preview))
			require.Contains(t, dry.Summary, "over the cap, so execution is refused")
			_, err = run(overCap, false)
			require.ErrorIs(t, err, actions.ErrInvalid, "one more than the cap is refused")
			require.ErrorContains(t, err, wantRefusal)
			require.EqualValues(t, capRows+1, queryInt(t, pool, c.dead, overCap), "nothing moved")
			ev := lastAudit(t, pool)
			require.Equal(t, c.action, ev.Action)
			require.Equal(t, c.target(overCap), ev.Target)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Contains(t, ev.Error, wantRefusal)
		})
	}
}

// previewOverCap says whether a requeue's preview is over the cap.
func previewOverCap(t *testing.T, p actions.Preview) bool {
	t.Helper()
	switch p := p.(type) {
	case actions.RequeuePreview:
		return p.OverCap
	case actions.OutboxRequeuePreview:
		return p.OverCap
	}
	t.Fatalf("%T is not a requeue's preview", p)
	return false
}

// beforeExecute is a query tracer that calls f once, at the first
// statement a connection runs inside a transaction: on the runner's pool
// that is the execution's first statement, after the preview (which runs
// outside any transaction).
type beforeExecute struct {
	once sync.Once
	f    func()
}

func (b *beforeExecute) TraceQueryStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if conn.PgConn().TxStatus() == 'T' {
		b.once.Do(b.f)
	}
	return ctx
}

func (*beforeExecute) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestRequeueNoneLeftAtExecution: the operator previews a requeue and
// confirms it, and another operator's requeue of the same rows commits
// after the run's own preview but before its execution. The execution
// re-counts, finds none left, and refuses with ErrGuard: it moves nothing,
// tells the operator why, and audits the refusal with that cause and the
// operator's reason.
func TestRequeueNoneLeftAtExecution(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	plain := testdb.Pool(t, url)
	other := newRunner(t, plain, actions.RunnerConfig{})
	colleague := actions.Actor{Name: "otto", Role: auth.RoleOperator}
	for _, c := range requeueCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			const rows = 3
			target := c.name + "-raced"
			for range rows {
				c.insert(t, plain, target)
			}
			params := map[string]any{c.param: target}

			var moved actions.Outcome
			var movedErr error
			fired := false
			hook := &beforeExecute{f: func() {
				fired = true
				moved, movedErr = other.Run(ctx, colleague, c.action, actions.Request{
					Params: params, Reason: "requeued from the other console"})
			}}
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			cfg.ConnConfig.Tracer = hook
			traced, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(traced.Close)
			r := newRunner(t, traced, actions.RunnerConfig{})

			dry, err := r.Run(ctx, operator, c.action, actions.Request{Params: params, DryRun: true})
			require.NoError(t, err)
			out, err := r.Run(ctx, operator, c.action, actions.Request{
				Params: params, Reason: reason, ExpectVersion: dry.Version})

			require.True(t, fired, "the other operator's requeue ran between the run's preview and its execution")
			require.NoError(t, movedErr, "the other operator's requeue")
			require.Equal(t, rows, moved.Result.(actions.RequeueResult).Requeued, "the other operator moved every row")
			require.ErrorIs(t, err, actions.ErrGuard)
			require.NotErrorIs(t, err, actions.ErrStale, "the run's own preview still saw the rows")
			wantCause := fmt.Sprintf("no %s match %s any more", c.what, c.target(target))
			require.ErrorContains(t, err, wantCause)
			require.Nil(t, out.Result, "the operator is shown no result: nothing moved")
			require.Zero(t, out.AuditID)
			require.Zero(t, queryInt(t, plain, c.dead, target))

			ev := lastAudit(t, plain)
			require.Equal(t, c.action, ev.Action)
			require.Equal(t, operator.Name, ev.Actor)
			require.Equal(t, c.target(target), ev.Target)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Contains(t, ev.Error, wantCause)
			require.Equal(t, reason, ev.Reason)
			require.EqualValues(t, 1, queryInt(t, plain, "SELECT count(*) FROM audit_events WHERE id = $1 AND result = '{}'", ev.ID),
				"the refusal records no result: nothing moved")
			require.EqualValues(t, 1, queryInt(t, plain, `SELECT count(*) FROM audit_events
				WHERE action = $1 AND target = $2 AND outcome = 'succeeded'`, c.action, c.target(target)),
				"only the other operator's requeue moved the rows")
		})
	}
}
