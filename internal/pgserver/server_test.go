package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestStartStopReuse(t *testing.T) {
	t.Parallel()
	if _, err := FindBinDir(os.Getenv("PG_BIN")); err != nil {
		t.Fatalf("PostgreSQL server binaries are required for this suite (make test installs them): %v", err)
	}
	ctx := context.Background()
	dir := testDir(t)

	srv, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)")
	require.NoError(t, err)
	conn.Close(ctx)
	st, err := os.Stat(srv.LogPath())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the server log is not world-readable")
	require.NoError(t, os.Chmod(srv.LogPath(), 0o644))
	pid := srv.cmd.Process.Pid
	require.NoError(t, srv.Stop())
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "postgres must be gone after Stop")

	// The password-protected cluster is reused: same data, new port.
	srv2, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
	require.NoError(t, err)
	defer srv2.Stop()
	st, err = os.Stat(srv2.LogPath())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a log left world-readable is restricted at start")
	conn, err = pgx.Connect(ctx, srv2.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, 42, v)

	// A wrong password is refused: the cluster is not open to anyone on the box.
	bad := strings.Replace(srv2.URL("postgres"), srv2.password, "wrong", 1)
	_, err = pgx.Connect(ctx, bad)
	require.Error(t, err)

	// A second server on the same folder is refused with a clear message.
	_, err = Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
	require.ErrorContains(t, err, "already running")
}

func TestRestartKeepsPort(t *testing.T) {
	skipShort(t, "a server of its own (initdb, two starts)")
	t.Parallel()
	ctx := context.Background()
	srv, err := Start(ctx, Config{Dir: testDir(t), BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
	require.NoError(t, err)
	defer srv.Stop()
	port := srv.Port()
	require.NoError(t, srv.Restart(ctx))
	require.Equal(t, port, srv.Port())
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	conn.Close(ctx)
}

func TestMissingBinaries(t *testing.T) {
	_, err := FindBinDir(t.TempDir())
	require.ErrorContains(t, err, "no postgres in")

	saved := debianRoot
	debianRoot = t.TempDir()
	t.Setenv("PATH", t.TempDir())
	defer func() { debianRoot = saved }()
	_, err = FindBinDir("")
	require.True(t, errors.Is(err, ErrNoBinaries), "got %v", err)
	require.Contains(t, err.Error(), "apt-get install postgresql")
}

func TestStartupFailureShowsLog(t *testing.T) {
	skipShort(t, "a server of its own (initdb)")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, Config{Dir: testDir(t), BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true,
		Settings: map[string]string{"shared_buffers": "not-a-size"}})
	require.Error(t, err)
	require.Contains(t, err.Error(), "shared_buffers")
}

// skipShort is testdb.SkipShort, which this package cannot import (testdb
// imports it): -short keeps one initdb here, TestStartStopReuse's, as every
// other binary starts its server from a copy of a cluster made once.
func skipShort(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: skipped by -short (make test runs it)", what)
	}
}

// testDir returns a folder the PostgreSQL account can enter even when the
// test runs as root (t.TempDir is 0700, and so may TMPDIR be).
func testDir(t *testing.T) string {
	d, err := TempDir("pgserver-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "pg")
}
