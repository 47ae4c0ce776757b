package auth

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestTokenUsageFlush: a lookup writes nothing; the uses noted are written
// by one Flush, never moving last_used_at back, and a failed Flush keeps
// them for the next.
func TestTokenUsageFlush(t *testing.T) {
	ctx := context.Background()
	tx := testdb.Tx(t)
	secret, err := TokenCreate(ctx, tx, "ci", RoleViewer)
	require.NoError(t, err)
	other, err := TokenCreate(ctx, tx, "cd", RoleViewer)
	require.NoError(t, err)
	lastUsed := func(name string) *time.Time {
		var at *time.Time
		require.NoError(t, tx.QueryRow(ctx, "SELECT last_used_at FROM api_tokens WHERE name = $1", name).Scan(&at))
		return at
	}

	u := NewTokenUsage()
	p, err := TokenLookup(ctx, tx, secret)
	require.NoError(t, err)
	require.Nil(t, lastUsed("ci"), "a lookup writes nothing")
	q, err := TokenLookup(ctx, tx, other)
	require.NoError(t, err)

	at := time.Now().UTC().Truncate(time.Microsecond)
	u.Note(p.ID, at.Add(-time.Minute))
	u.Note(p.ID, at)
	u.Note(p.ID, at.Add(-time.Hour)) // an older use does not replace a newer one
	u.Note(q.ID, at)
	require.Equal(t, 2, u.Pending())

	// A failed write (the transaction is aborted) keeps the uses.
	_, err = tx.Exec(ctx, "SAVEPOINT broken")
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT 1/0")
	require.Error(t, err)
	_, err = u.Flush(ctx, tx)
	require.Error(t, err)
	require.Equal(t, 2, u.Pending())
	_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT broken")
	require.NoError(t, err)

	n, err := u.Flush(ctx, tx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Zero(t, u.Pending())
	require.WithinDuration(t, at, *lastUsed("ci"), 0)
	require.WithinDuration(t, at, *lastUsed("cd"), 0)

	u.Note(p.ID, at.Add(-time.Hour))
	_, err = u.Flush(ctx, tx)
	require.NoError(t, err)
	require.WithinDuration(t, at, *lastUsed("ci"), 0, "a late batch never moves last use back")
}
