package queues

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// migratedServer starts a server of this test's own with settings
// (testdb.NewServer, skipped by -short), migrates its postgres database
// and returns the server and that database's URL.
func migratedServer(t *testing.T, settings map[string]string) (*pgserver.Server, string) {
	t.Helper()
	ctx := context.Background()
	srv := testdb.NewServer(t, settings)
	url := srv.URL("postgres")
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	return srv, url
}
