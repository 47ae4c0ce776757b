package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestOpenPoolIsReadCommitted: the console's pools run READ COMMITTED even
// on a database whose transactions default to something stricter, because
// the actions and the engine are written for it.
func TestOpenPoolIsReadCommitted(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	testdb.SetDatabaseDefault(t, url, "default_transaction_isolation", "serializable")
	pool, err := openPool(ctx, url, "console-test", 2, nil, poolerConfig{})
	require.NoError(t, err)
	defer pool.Close()
	var level string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('transaction_isolation')").Scan(&level))
	require.Equal(t, "read committed", level)
}
