package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// A prepared transaction in a database created after the fingerprint's
// snapshot began has no database name in that snapshot: the fingerprint
// still reads it, and the guard refuses it with a sentence to try again
// rather than "belongs to database \"\"".
func TestPreparedXactFingerprintOfAnUnresolvableDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Pool(t, testdb.URL(t))
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	_, err = tx.Exec(ctx, "SELECT 1") // takes the snapshot
	require.NoError(t, err)

	admin := testdb.AdminURL(t)
	name := fmt.Sprintf("late_%d_%d", os.Getpid(), time.Now().UnixNano())
	ac := testdb.Connect(t, admin, "late-creator")
	_, err = ac.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		ac.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	late := testdb.Connect(t, u.String(), "late-preparer")
	gid := "late-" + name
	_, err = late.Exec(ctx, "BEGIN; CREATE TABLE t (id int); PREPARE TRANSACTION '"+gid+"'")
	require.NoError(t, err)
	t.Cleanup(func() {
		late.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'")
		late.Close(context.Background())
	})

	p, err := preparedXactFingerprint(ctx, tx, gid)
	require.NoError(t, err)
	require.Empty(t, p.Database, "the database was created after the snapshot")
	err = (&preparedRollback{gid: gid}).guard(p)
	require.ErrorIs(t, err, ErrGuard)
	require.ErrorContains(t, err, "could not be resolved")
}

// The rollback's target is the diagnostics' prepared transaction, field for
// field and name for name in JSON (the API's preview and the runbook's
// panel say the same), plus only the database the console is connected to,
// which is not shown.
func TestPreparedXactIsTheDiagnosticsRow(t *testing.T) {
	row := diagnostics.PreparedXact{GID: "tx-42", XID: "7301", XIDAge: 12, Prepared: time.Date(2026, 12, 6, 3, 12, 0, 0, time.UTC),
		AgeSeconds: 60, Owner: "app", Database: "shop"}
	want, err := json.Marshal(row)
	require.NoError(t, err)
	got, err := json.Marshal(PreparedXact{PreparedXact: row, ConnectedDatabase: "console"})
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
}
