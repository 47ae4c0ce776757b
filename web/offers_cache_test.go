package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
)

// TestOfferGuardsAreSharedAmongViewers: the guard answer behind an offered
// signal is asked once per pid per offerGuardMaxAge, however many pages
// show it; a refusal is kept like a yes, a failed lookup is not.
func TestOfferGuardsAreSharedAmongViewers(t *testing.T) {
	rc := newRefusalCache()
	now := time.Unix(1000, 0)
	rc.now = func() time.Time { return now }
	var mu sync.Mutex
	calls := map[int32]int{}
	lookup := func(_ context.Context, pid int32) error {
		mu.Lock()
		defer mu.Unlock()
		calls[pid]++
		switch pid {
		case 2:
			return fmt.Errorf("backend 2 is the console's own connection: %w", actions.ErrInvalid)
		case 3:
			return errors.New("connection refused")
		}
		return nil
	}
	ctx := context.Background()
	for range 50 { // fifty viewers of one chain
		require.NoError(t, rc.get(ctx, 1, lookup))
		require.ErrorIs(t, rc.get(ctx, 2, lookup), actions.ErrInvalid)
		require.Error(t, rc.get(ctx, 3, lookup))
	}
	require.Equal(t, map[int32]int{1: 1, 2: 1, 3: 50}, calls, "one lookup per pid, but every failed one is asked again")

	now = now.Add(offerGuardMaxAge)
	require.NoError(t, rc.get(ctx, 1, lookup))
	require.Equal(t, 2, calls[1], "an answer as old as offerGuardMaxAge is asked again")
	require.Len(t, rc.seen, 1, "the stale answers are dropped")
}
