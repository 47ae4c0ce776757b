package actions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
)

// TestRacingRequeuesAuditWhatTheyDid races two requeues of the same dead
// jobs, and of the same dead outbox events: between them the rows move
// once, and each audit row says what its requeue moved and skipped (the
// loser "changed nothing"), matching the counts in its result.
func TestRacingRequeuesAuditWhatTheyDid(t *testing.T) {
	t.Parallel()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	const trials, rows = 8, 5
	for _, c := range []struct {
		name, action, param, why string
		insert                   func(target string)
		dead                     string
	}{{
		name: "DeadJobs", action: "deadletters.requeue", param: "queue",
		why:    "another operator moved them meanwhile, or an unfinished job holds their dedupe key",
		insert: func(queue string) { insertJob(t, pool, queue, "dead", "smtp") },
		dead:   "SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'dead'",
	}, {
		name: "DeadOutboxEvents", action: "outbox.requeue", param: "topic",
		why:    "another operator moved them meanwhile",
		insert: func(topic string) { insertDeadOutbox(t, pool, topic) },
		dead:   "SELECT count(*) FROM outbox_events WHERE topic = $1 AND state = 'dead'",
	}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			for i := range trials {
				target := fmt.Sprintf("%s%d", strings.ToLower(c.name), i)
				for range rows {
					c.insert(target)
				}
				start := make(chan struct{})
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						<-start
						_, err := r.Run(ctx, operator, c.action, actions.Request{
							Params: map[string]any{c.param: target}, Reason: reason})
						if err != nil && !errors.Is(err, actions.ErrGuard) {
							require.ErrorIs(t, err, actions.ErrNotFound, "the loser is refused or changes nothing")
						}
					})
				}
				close(start)
				wg.Wait()
				require.Zero(t, queryInt(t, pool, c.dead, target))
				res, err := pool.Query(ctx, `SELECT (result ->> 'requeued')::int, (result ->> 'skipped')::int, result ->> 'effect'
					FROM audit_events WHERE action = $1 AND target LIKE '%' || $2 || '%' AND outcome = 'succeeded'`, c.action, target)
				require.NoError(t, err)
				type outcome struct {
					Moved, Skipped int
					Effect         *string
				}
				outcomes, err := pgx.CollectRows(res, pgx.RowToStructByPos[outcome])
				require.NoError(t, err)
				moved := 0
				for _, o := range outcomes {
					require.NotNil(t, o.Effect, "trial %d: the audit row says what the requeue did", i)
					if o.Moved == 0 {
						require.Equal(t, fmt.Sprintf("changed nothing: 0 moved, %d skipped (%s)", o.Skipped, c.why), *o.Effect)
					} else {
						require.Contains(t, *o.Effect, fmt.Sprintf("%d moved", o.Moved))
					}
					moved += o.Moved
				}
				require.Equal(t, rows, moved, "trial %d: the rows moved once", i)
			}
		})
	}
}
