package testdb

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// A Template is built once however many clones are asked for, each clone
// holds what Build made (rows, ownership, the database's own rights) and
// is a database of its own; a session Build left open does not stop the
// cloning.
func TestTemplateClonesWhatBuildMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	builds := 0
	tp := &Template{Name: "test", Owned: true, Build: func(tb testing.TB, url string) {
		builds++
		pool := Pool(tb, url)
		_, err := pool.Exec(ctx, "INSERT INTO queue_settings (queue, paused) VALUES ('built', true)")
		require.NoError(tb, err)
		_, err = pool.Exec(ctx, "DO $$ BEGIN EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database()); END $$")
		require.NoError(tb, err)
		Connect(tb, url, "left-open") // closed only by the build's cleanup
		leftOpen, err := pool.Acquire(ctx)
		require.NoError(tb, err)
		leftOpen.Hijack() // never closed: the build's end terminates it
	}}
	a, b := Pool(t, tp.URL(t)), Pool(t, tp.URL(t))
	require.Equal(t, 1, builds)
	for _, p := range []*pgxpool.Pool{a, b} {
		require.Equal(t, 1, Count(t, p, "SELECT count(*) FROM queue_settings WHERE queue = 'built'"))
		require.Equal(t, 1, Count(t, p, `SELECT count(*) FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba
			WHERE d.datname = current_database() AND r.rolname = $1`, OwnerRole), "the clone is owned as the template")
		require.Equal(t, 0, Count(t, p, "SELECT count(*) FROM pg_database WHERE datname = current_database() AND has_database_privilege('public', datname, 'TEMPORARY')"),
			"the clone keeps the template's rights on the database")
	}
	_, err := a.Exec(ctx, "DELETE FROM queue_settings")
	require.NoError(t, err)
	require.Equal(t, 1, Count(t, b, "SELECT count(*) FROM queue_settings WHERE queue = 'built'"), "clones share no rows")
}
