package diagnostics_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/queues"
)

// smallFilesystem mounts a tmpfs of size bytes for the test, owned by the
// server's account, unmounted at cleanup.
func smallFilesystem(t *testing.T, srv *pgserver.Server, size string) string {
	t.Helper()
	dir, err := pgserver.TempDir("console-fulldisk-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "the full-disk drill mounts a small tmpfs (it runs as root): %s", out)
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	ts := filepath.Join(dir, "ts")
	require.NoError(t, os.Mkdir(ts, 0o700))
	require.NoError(t, srv.ChownTree(dir))
	return ts
}

// A full disk, for real: the jobs table lives on a small filesystem that the
// test fills. A running worker's claims then fail with SQLSTATE 53100; it
// reports them in its heartbeat, and the next round has a critical
// engine.errors finding that says the disk is full.
func TestFullDiskEngineErrorsFinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := primaryWithSchema(t, nil)
	ts := smallFilesystem(t, srv, "2M")
	admin := connect(t, srv.URL("postgres"), "drill")
	_, err := admin.Exec(ctx, "CREATE TABLESPACE small LOCATION '"+ts+"'")
	require.NoError(t, err)
	t.Cleanup(func() {
		c := connect(t, srv.URL("postgres"), "drill-cleanup")
		c.Exec(context.Background(), "DROP TABLE jobs CASCADE")
		c.Exec(context.Background(), "DROP TABLESPACE small")
	})
	_, err = admin.Exec(ctx, "ALTER TABLE jobs SET TABLESPACE small")
	require.NoError(t, err)

	// Fill the filesystem with jobs no worker serves, large then small,
	// until even a small row finds no room.
	full := false
	for i := 0; i < 5000 && !full; i++ {
		pad := 2000
		if i > 400 {
			pad = 20
		}
		_, err := admin.Exec(ctx, `INSERT INTO jobs (queue, kind, payload)
			SELECT 'filler', 'k', jsonb_build_object('pad', (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, $1)))
			FROM generate_series(1, 10)`, pad/32+1)
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == "53100" {
			full = pad == 20
			continue
		}
		require.NoError(t, err)
	}
	require.True(t, full, "the filesystem filled up")

	pool, err := pgxpool.New(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	client, err := queues.NewClient(pool, queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{"filler": {Concurrency: 1}},
		PollInterval: 50 * time.Millisecond, LeaseDuration: 2 * time.Second,
	})
	require.NoError(t, err)
	client.Handle("k", func(context.Context, *queues.Job) error { return nil })
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client.Stop(sctx)
	})

	d := open(t, srv.URL("postgres"), diagnostics.Config{})
	f := awaitFinding(t, d, diagnostics.CodeEngineErrors, 30*time.Second, func(f diagnostics.Finding) bool { return f.Subject["sqlstate"] == "53100" })
	require.Equal(t, diagnostics.SeverityCritical, f.Severity)
	require.Equal(t, []string{client.ID()}, f.Subject["workers"])
	require.Contains(t, f.Evidence, "No space left on device")
	require.Contains(t, f.Evidence, "the database's disk is full")
	t.Logf("%s: %s", f.Title, f.Evidence)
}
