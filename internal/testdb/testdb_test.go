package testdb

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := New(t), New(t)
	_, err := a.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('q', 'noop')")
	require.NoError(t, err)
	require.Zero(t, Count(t, b, "SELECT count(*) FROM jobs"), "databases must not share rows")
	require.Equal(t, 1, Count(t, a, "SELECT count(*) FROM jobs WHERE queue = $1", "q"))
}

func TestTxRollsBack(t *testing.T) {
	ctx := context.Background()
	t.Run("Write", func(t *testing.T) {
		tx := Tx(t)
		_, err := tx.Exec(ctx, "INSERT INTO queue_settings (queue, paused) VALUES ('rolled-back', true)")
		require.NoError(t, err)
	})
	t.Run("Gone", func(t *testing.T) {
		tx := Tx(t)
		var n int
		require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM queue_settings WHERE queue = 'rolled-back'").Scan(&n))
		require.Zero(t, n)
	})
}

// fatalRecorder stands in for a test so Eventually's failure can be seen
// without failing this test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	t.Parallel()
	t.Run("Holds", func(t *testing.T) {
		t.Parallel()
		var polls atomic.Int64
		r := &fatalRecorder{TB: t}
		Eventually(r, 10*time.Second, "third poll", func() bool { return polls.Add(1) >= 3 })
		require.Empty(t, r.msg)
		require.Equal(t, int64(3), polls.Load())
	})
	t.Run("TimesOut", func(t *testing.T) {
		t.Parallel()
		r := &fatalRecorder{TB: t}
		// The recorder's Fatalf returns instead of stopping, so the condition
		// turns true after the failure to end the loop.
		failed := func() bool { return r.msg != "" }
		Eventually(r, 50*time.Millisecond, "nothing", failed)
		require.Equal(t, "timed out after 50ms waiting for nothing", r.msg)
	})
}
