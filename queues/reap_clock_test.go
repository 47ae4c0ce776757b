package queues

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestReapFloorOnTheDatabaseClock: a process whose clock runs an hour
// ahead of the database's reaps a lease that expired after its last
// complete scan at its next tick, a bounded scan, not at the next scan
// from the start: the floor the bounded scans start at is read from the
// database's clock, which wrote lease_until. Taken from the process's
// clock, the floor would stand an hour less a lease above that lease.
func TestReapFloorOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	c, err := NewClient(pool, ClientConfig{LeaseDuration: time.Second, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)

	// The client is not started: the test runs its reaper's ticks on a
	// clock an hour ahead of the database's, one reaper interval apart,
	// so that no scan from the start comes round after the first and
	// only the floor decides what a tick looks at.
	now := time.Now().Add(time.Hour)
	interval := c.reapInterval()
	var rs reapState
	require.True(t, rs.from(now, interval).IsZero(), "the first tick scans from the start")
	c.reapTick(ctx, &rs, now)
	require.False(t, rs.floor.IsZero(), "the first scan covered its range, and left a floor")

	// A lease that expires now on the database's clock, after that scan.
	j := enqueueT(t, pool, EnqueueParams{Queue: "skew", Kind: "k"})
	claimed := claimOne(t, pool, "skew", "gone", time.Minute)
	require.Equal(t, j.ID, claimed.ID)
	_, err = pool.Exec(ctx, "UPDATE jobs SET lease_until = clock_timestamp() WHERE id = $1", j.ID)
	require.NoError(t, err)

	next := now.Add(interval)
	require.False(t, rs.from(next, interval).IsZero(), "the next tick must be a bounded scan for this test to mean anything")
	c.reapTick(ctx, &rs, next)
	got, err := JobGet(ctx, pool, j.ID)
	require.NoError(t, err)
	require.Equal(t, StatusReady, got.Status,
		"the bounded scan after the lease expired left it (the floor stood above it: %s)", rs.floor)
	require.Equal(t, "lease_expired", *got.ErrorClass)
}

// TestJobReapAt: every JobReap batch says when it began on the database's
// clock, one that reaped nothing too (the reaper's next floor comes from
// it), and counts only the jobs it reaped.
func TestJobReapAt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	dbNow := func() time.Time {
		t.Helper()
		var now time.Time
		require.NoError(t, tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now))
		return now
	}

	before := dbNow()
	res, err := JobReap(ctx, tx, 10, 20)
	require.NoError(t, err)
	after := dbNow()
	require.Zero(t, res.Requeued+res.Dead)
	require.Empty(t, res.ByQueue)
	require.False(t, res.At.Before(before) || res.At.After(after),
		"a batch that reaped nothing began at %s, not between %s and %s", res.At, before, after)

	j := enqueueT(t, tx, EnqueueParams{Queue: "reap_at", Kind: "k"})
	claimOne(t, tx, "reap_at", "gone", time.Minute)
	expireLease(t, tx, j.ID)
	before = dbNow()
	res, err = JobReap(ctx, tx, 10, 20)
	require.NoError(t, err)
	after = dbNow()
	require.Equal(t, 1, res.Requeued)
	require.Equal(t, map[string]int{"reap_at": 1}, res.ByQueue)
	require.False(t, res.At.Before(before) || res.At.After(after),
		"a batch that reaped a job began at %s, not between %s and %s", res.At, before, after)
}
