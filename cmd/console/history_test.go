package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// Consoles starting together make one prune-history schedule, and an
// operator's change to it survives the next start.
func TestEnsurePruneHistorySchedule(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testdb.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- ensurePruneHistorySchedule(ctx, pool) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	list, err := queues.ScheduleList(ctx, pool)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, recorder.KindPruneHistory, list[0].Kind)
	require.Equal(t, "maintenance", list[0].Queue)

	_, err = pool.Exec(ctx, "UPDATE schedules SET spec = '0 * * * *' WHERE name = $1", pruneHistorySchedule)
	require.NoError(t, err)
	require.NoError(t, ensurePruneHistorySchedule(ctx, pool))
	s, err := queues.ScheduleGet(ctx, pool, pruneHistorySchedule)
	require.NoError(t, err)
	require.Equal(t, "0 * * * *", s.Spec)
}
