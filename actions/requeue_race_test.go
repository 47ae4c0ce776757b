package actions_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/testdb"
)

// TestRacingRequeuesAuditWhatTheyDid races two requeues of the same dead
// jobs: between them the jobs move once, and each audit row says what its
// requeue moved and skipped (the loser "changed nothing"), matching the
// counts in its result.
func TestRacingRequeuesAuditWhatTheyDid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	r := newRunner(t, pool, actions.RunnerConfig{})
	const trials, jobs = 8, 5
	for i := range trials {
		queue := fmt.Sprintf("race%d", i)
		for range jobs {
			insertJob(t, pool, queue, "dead", "smtp")
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := r.Run(ctx, operator, "deadletters.requeue", actions.Request{
					Params: map[string]any{"queue": queue}, Reason: reason})
				if err != nil && !errors.Is(err, actions.ErrGuard) {
					require.ErrorIs(t, err, actions.ErrNotFound, "the loser is refused or changes nothing")
				}
			}()
		}
		close(start)
		wg.Wait()
		require.Zero(t, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'dead'", queue))
		rows, err := pool.Query(ctx, `SELECT (result ->> 'requeued')::int, (result ->> 'skipped')::int, result ->> 'effect'
			FROM audit_events WHERE target LIKE '%' || $1 || '%' AND outcome = 'succeeded'`, queue)
		require.NoError(t, err)
		moved := 0
		for rows.Next() {
			var n, skipped int
			var effect *string
			require.NoError(t, rows.Scan(&n, &skipped, &effect))
			require.NotNil(t, effect, "trial %d: the audit row says what the requeue did", i)
			if n == 0 {
				require.Equal(t, fmt.Sprintf("changed nothing: 0 moved, %d skipped (another operator moved them meanwhile, "+
					"or an unfinished job holds their dedupe key)", skipped), *effect)
			} else {
				require.Contains(t, *effect, fmt.Sprintf("%d moved", n))
			}
			moved += n
		}
		require.NoError(t, rows.Err())
		require.Equal(t, jobs, moved, "trial %d: the jobs moved once", i)
	}
}
