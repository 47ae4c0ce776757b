package pgserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// startInEnv makes the test binary start a server in the folder it names,
// print where the cluster went, stop it and exit: the non-root half of
// TestPlacement, run as the PostgreSQL account.
const startInEnv = "PGSERVER_TEST_START_IN"

func TestMain(m *testing.M) {
	if dir := os.Getenv(startInEnv); dir != "" {
		os.Exit(startAndReport(dir))
	}
	os.Exit(m.Run())
}

func startAndReport(dir string) int {
	srv, err := Start(context.Background(), Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Stop()
	fmt.Printf("datadir=%s\nrelocation=%s\n", srv.DataDir(), srv.Relocation())
	return 0
}

// TestPlacement checks where the cluster goes. As root, a data folder below a
// folder the PostgreSQL account cannot enter (a clone in root's home) is kept
// under systemDir, found there again at the next start, and nothing on the way
// is readable by others; a folder the account can reach stays put, and so
// does any folder of a user who is not root.
func TestPlacement(t *testing.T) {
	if testing.Short() {
		// Not testdb.SkipShort: testdb imports this package.
		t.Skip("servers of its own and a child process: skipped by -short (make test runs it)")
	}
	ctx := context.Background()
	acct, err := accountFor()
	require.NoError(t, err)
	if acct == nil {
		// Not root: PostgreSQL runs as us and can enter all our folders.
		dir := filepath.Join(t.TempDir(), "var")
		srv, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
		require.NoError(t, err)
		defer srv.Stop()
		require.Equal(t, filepath.Join(dir, "pgdata"), srv.DataDir())
		require.Empty(t, srv.Relocation())
		return
	}

	base, err := TempDir("pgserver-place-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })

	t.Run("UnreachableIsKeptUnderSystemDir", func(t *testing.T) {
		home := filepath.Join(base, "home")
		require.NoError(t, os.Mkdir(home, 0o700))
		dir := filepath.Join(home, "clone", "var")
		kept := keptDir(dir)
		t.Cleanup(func() { os.RemoveAll(kept) })

		srv, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
		require.NoError(t, err)
		defer srv.Stop()
		require.Equal(t, filepath.Join(kept, "pgdata"), srv.DataDir())
		require.Equal(t, systemDir, filepath.Dir(kept))
		require.Equal(t, filepath.Join(kept, "postgresql.log"), srv.LogPath())
		require.Equal(t, fmt.Sprintf("the PostgreSQL cluster for %s is in %s: PostgreSQL runs as %s, which cannot enter %s (mode -rwx------)",
			dir, kept, acct.name, home), srv.Relocation())
		origin, err := os.ReadFile(filepath.Join(kept, "origin"))
		require.NoError(t, err)
		require.Equal(t, dir+"\n", string(origin))
		conn, err := pgx.Connect(ctx, srv.URL("postgres"))
		require.NoError(t, err)
		_, err = conn.Exec(ctx, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)")
		require.NoError(t, err)
		conn.Close(ctx)
		require.NoError(t, srv.Stop())

		st, err := os.Stat(home)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "the user's folder keeps its mode")
		requireRootOwned(t, systemDir, 0o711)
		requireRootOwned(t, kept, 0o711)
		requireNothingReadableByOthers(t, kept)
		st, err = os.Stat(srv.DataDir())
		require.NoError(t, err)
		require.Equal(t, acct.uid, st.Sys().(*syscall.Stat_t).Uid, "the cluster belongs to the PostgreSQL account")

		// The next start from the same folder finds the cluster again.
		again, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
		require.NoError(t, err)
		defer again.Stop()
		require.Equal(t, srv.DataDir(), again.DataDir())
		require.Equal(t, srv.Relocation(), again.Relocation())
		requireKeptRow(t, again)
		require.NoError(t, again.Stop())

		// Once the folder can be entered, the kept cluster is still the one
		// used: its data must not seem to vanish.
		require.NoError(t, os.Chmod(home, 0o711))
		opened, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Fast: true})
		require.NoError(t, err)
		defer opened.Stop()
		require.Equal(t, srv.DataDir(), opened.DataDir())
		require.Contains(t, opened.Relocation(), "made there when "+acct.name+" could not enter "+dir)
		requireKeptRow(t, opened)
	})

	t.Run("ReachableStaysPut", func(t *testing.T) {
		dir := filepath.Join(base, "open", "var")
		srv, err := Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
		require.NoError(t, err)
		defer srv.Stop()
		require.Equal(t, filepath.Join(dir, "pgdata"), srv.DataDir())
		require.Empty(t, srv.Relocation())
		require.NoError(t, srv.Stop())
		_, err = os.Stat(keptDir(dir))
		require.ErrorIs(t, err, fs.ErrNotExist, "nothing is made under %s for a reachable folder", systemDir)

		// A cluster that is there already is not abandoned for an empty
		// one when its folder is closed: the error says what to do.
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o700))
		defer os.Chmod(filepath.Dir(dir), 0o755)
		_, err = Start(ctx, Config{Dir: dir, BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
		require.ErrorContains(t, err, "cannot enter "+filepath.Dir(dir)+" (mode -rwx------), and the cluster in "+dir+" is there")
	})

	t.Run("BinariesOutOfReachAreNamed", func(t *testing.T) {
		// The PostgreSQL 18 round once ran binaries kept inside a closed
		// checkout: the error must name the folder, not "permission denied".
		bin, err := FindBinDir(os.Getenv("PG_BIN"))
		require.NoError(t, err)
		closed := filepath.Join(base, "closed-checkout")
		require.NoError(t, os.Mkdir(closed, 0o700))
		require.NoError(t, os.Symlink(bin, filepath.Join(closed, "bin")))
		_, err = Start(ctx, Config{Dir: filepath.Join(base, "bin-test", "var"), BinDir: filepath.Join(closed, "bin"), Trust: true, Fast: true})
		require.ErrorContains(t, err, fmt.Sprintf("PostgreSQL runs as %s, which cannot enter %s (mode -rwx------) to run the binaries in %s/bin",
			acct.name, closed, closed))
	})

	t.Run("TempDirAvoidsAClosedTMPDIR", func(t *testing.T) {
		closed := filepath.Join(base, "closed-tmp")
		require.NoError(t, os.Mkdir(closed, 0o700))
		t.Setenv("TMPDIR", closed)
		d, err := TempDir("pgserver-scratch-")
		require.NoError(t, err)
		defer os.RemoveAll(d)
		require.False(t, strings.HasPrefix(d, closed+"/"), "%s is under the closed TMPDIR", d)
		requireRootOwned(t, d, 0o711)
		srv, err := Start(ctx, Config{Dir: filepath.Join(d, "pg"), BinDir: os.Getenv("PG_BIN"), Trust: true, Fast: true})
		require.NoError(t, err)
		defer srv.Stop()
		require.Empty(t, srv.Relocation())
	})

	t.Run("NonRootUserKeepsItsFolder", func(t *testing.T) {
		// The test binary itself, run as the PostgreSQL account, starts a
		// server in a folder of that account that nobody else may enter.
		self := filepath.Join(base, "pgserver.test")
		copyFile(t, os.Args[0], self, 0o755)
		home := filepath.Join(base, "account-home")
		require.NoError(t, os.Mkdir(home, 0o700))
		require.NoError(t, os.Chown(home, int(acct.uid), int(acct.gid)))
		dir := filepath.Join(home, "var")

		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), startInEnv+"="+dir, "HOME="+home)
		cmd.Dir = "/"
		cmd.SysProcAttr = acct.sysProcAttr()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "as %s: %s", acct.name, stderr.String())
		require.Equal(t, "datadir="+filepath.Join(dir, "pgdata")+"\nrelocation=\n", stdout.String())
	})
}

func requireKeptRow(t *testing.T, srv *Server) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var v int
	require.NoError(t, conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v))
	require.Equal(t, 7, v)
}

func requireRootOwned(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, mode, st.Mode().Perm(), dir)
	require.Zero(t, st.Sys().(*syscall.Stat_t).Uid, "%s is root's", dir)
}

// requireNothingReadableByOthers fails on any file or folder below root that
// a user other than its owner and group could read or write.
func requireNothingReadableByOthers(t *testing.T, root string) {
	t.Helper()
	var open []string
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink == 0 && info.Mode().Perm()&0o006 != 0 {
			open = append(open, fmt.Sprintf("%s %v", p, info.Mode()))
		}
		return nil
	}))
	require.Empty(t, open, "readable or writable by others:\n%s", strings.Join(open, "\n"))
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
