package testdb

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := New(t), New(t)
	_, err := a.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('q', 'noop')")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&n))
	require.Zero(t, n, "databases must not share rows")
	require.NoError(t, a.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&n))
	require.Equal(t, 1, n)
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
