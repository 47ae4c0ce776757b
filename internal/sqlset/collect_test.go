package sqlset_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/sqlset"
	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type pair struct {
	N    int    `db:"n"`
	Word string `db:"word"`
}

func TestOneAndAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	const words = "SELECT n, 'w' || n AS word FROM generate_series(1, $1::int) AS n ORDER BY n"

	one, err := sqlset.One[pair](ctx, tx, words, 1)
	require.NoError(t, err)
	require.Equal(t, pair{1, "w1"}, one)
	_, err = sqlset.One[pair](ctx, tx, words, 0)
	require.ErrorIs(t, err, pgx.ErrNoRows, "no row is pgx.ErrNoRows for the caller to translate")
	_, err = sqlset.One[pair](ctx, tx, words, 2)
	require.ErrorIs(t, err, pgx.ErrTooManyRows)
	_, err = sqlset.One[pair](ctx, tx, "SELECT 1 AS nope")
	require.Error(t, err, "a column with no field is an error")

	all, err := sqlset.All[pair](ctx, tx, words, 3)
	require.NoError(t, err)
	require.Equal(t, []pair{{1, "w1"}, {2, "w2"}, {3, "w3"}}, all)
	all, err = sqlset.All[pair](ctx, tx, words, 0)
	require.NoError(t, err)
	require.Empty(t, all)
	_, err = sqlset.All[pair](ctx, tx, "SELECT FROM no_such_table")
	require.Error(t, err)
}
