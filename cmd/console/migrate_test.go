package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// A console runs against a schema newer than it while every newer
// migration is an expand: migrate status and migrate up say so, and a
// command that attaches starts. Once a newer migration is a contract, each
// refuses naming it and the console to run instead.
func TestMigrateOnANewerSchema(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	b := migrations.Binary()
	newer := b.Max + 1
	_, err := pool.Exec(context.Background(), "UPDATE "+migrations.VersionTable+" SET version = $1", newer)
	require.NoError(t, err)
	getenv := envMap("DATABASE_URL", url)

	out, err := runCmd(t, getenv, "migrate", "status")
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("schema version %d of %d; this console runs against %d to %d, and against %d: every migration since %d is an expand",
		newer, b.Max, b.Min, b.Max, newer, b.Max))
	out, err = runCmd(t, getenv, "migrate", "up")
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("schema is at version %d, newer than this console's %d; every migration since is an expand", newer, b.Max))
	_, err = runCmd(t, getenv, "token", "list")
	require.NoError(t, err, "a command that attaches starts")

	contract := fmt.Sprintf("%03d_drop_old_column.sql", newer)
	_, err = pool.Exec(context.Background(), "UPDATE "+migrations.VersionTable+" SET contract_version = $1, contract_name = $2", newer, contract)
	require.NoError(t, err)
	refusal := fmt.Sprintf("migration %s (version %d) is a contract, which removed or changed what consoles before it use: run a console that knows version %d or later",
		contract, newer, newer)
	out, err = runCmd(t, getenv, "migrate", "status")
	require.NoError(t, err)
	require.Contains(t, out, refusal)
	_, err = runCmd(t, getenv, "migrate", "up")
	require.ErrorContains(t, err, refusal)
	_, err = runCmd(t, getenv, "token", "list")
	require.ErrorContains(t, err, refusal)
}
