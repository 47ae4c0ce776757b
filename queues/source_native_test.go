package queues

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// The engine's Source shows what the engine's own functions show: counts
// by status, a job with its class, groups of dead jobs, and it refuses an
// arguments filter it has no index for.
func TestNativeSourceReadsTheEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	deadJob(t, tx, "src", errors.New("user 41 missing"))
	deadJob(t, tx, "src", errors.New("user 42 missing"))
	ready := enqueueT(t, tx, EnqueueParams{Queue: "src", Kind: "k", Payload: map[string]int{"n": 7}})

	src := NewNativeSource(tx)
	require.Equal(t, SourceConsole, src.Engine())
	qs, err := src.Queues(ctx)
	require.NoError(t, err)
	var q SourceQueue
	for _, x := range qs {
		if x.Queue == "src" {
			q = x
		}
	}
	require.Equal(t, "src", q.Queue)
	require.Equal(t, int64(1), q.Count(StatusReady))
	require.Equal(t, int64(2), q.Count(StatusDead))
	require.Equal(t, int64(2), q.Failed)

	jobs, err := src.Jobs(ctx, SourceJobFilter{Queue: "src", State: StatusDead})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	require.Equal(t, "user ? missing", jobs[0].ErrorClass)

	j, err := src.Job(ctx, ready.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 7}`, string(j.Args))
	_, err = src.Job(ctx, 1<<40)
	require.ErrorIs(t, err, ErrNotFound)

	g, err := src.FailedGroups(ctx, "src")
	require.NoError(t, err)
	require.Len(t, g.Groups, 1)
	require.Equal(t, int64(2), g.Groups[0].Count)
	require.Equal(t, int64(2), g.Total)

	_, err = src.Jobs(ctx, SourceJobFilter{ArgsContain: json.RawMessage(`{"n": 7}`)})
	require.ErrorIs(t, err, ErrBadFilter)
}
