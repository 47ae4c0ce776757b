package ownpid_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// A tracked pool's connections are members while open, listed in order,
// and leave the set when they close; the hooks the pool already had still
// run.
func TestSetTracksOpenConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.URL(t))
	require.NoError(t, err)
	var closes atomic.Int32
	cfg.BeforeClose = func(*pgx.Conn) { closes.Add(1) }

	var s ownpid.Set
	require.Empty(t, s.List())
	s.Track(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()

	a, err := pool.Acquire(ctx)
	require.NoError(t, err)
	b, err := pool.Acquire(ctx)
	require.NoError(t, err)
	pa, pb := int32(a.Conn().PgConn().PID()), int32(b.Conn().PgConn().PID())
	lo, hi := min(pa, pb), max(pa, pb)
	require.Equal(t, []int32{lo, hi}, s.PIDs())
	require.Equal(t, fmt.Sprintf("%d,%d", lo, hi), s.List())
	require.True(t, s.Contains(pa))
	require.False(t, s.Contains(0))

	a.Release()
	b.Release()
	pool.Reset()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.PIDs()) > 0 {
		require.True(t, time.Now().Before(deadline), "closed connections still in the set: %v", s.PIDs())
		time.Sleep(10 * time.Millisecond)
	}
	require.EqualValues(t, 2, closes.Load(), "the pool's own close hook still runs")
	var none *ownpid.Set
	require.Empty(t, none.PIDs(), "a nil set has no members")
}
