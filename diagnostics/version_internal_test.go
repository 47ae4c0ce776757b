package diagnostics

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// A panel never guesses its query's version variant: when ServerInfo's read
// failed, the panel reads the version in its own transaction and runs that
// version's variant. On PostgreSQL 15 to 16 the newest checkpointer variant
// reads pg_stat_checkpointer, which does not exist there.
func TestPanelReadsTheVersionWhenServerInfoFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := Open(ctx, testdb.URL(t), Config{})
	require.NoError(t, err)
	t.Cleanup(d.Close)
	d.server = NewCache(func(context.Context) (Server, error) {
		return Server{}, errors.New("server_info: timed out")
	}, CacheConfig{})

	var version int
	require.NoError(t, d.pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version))
	want, err := fileFor(CheckCheckpointer, version)
	require.NoError(t, err)
	t.Logf("server_version_num %d runs %s.sql", version, want)

	r := d.Checkpointer(ctx)
	require.NoError(t, r.Err)
	require.Equal(t, queries.Text(want), r.SQL, "the variant of the server's own version")
	require.Len(t, r.Rows, 1)
	require.Positive(t, r.Rows[0].MaxWALSize)
	require.Empty(t, d.SQL(CheckCheckpointer), "with no version known, no variant's text is shown as the one that runs")
	require.NotEmpty(t, d.SQL(CheckActivity), "a query without variants is the same on every version")
}
