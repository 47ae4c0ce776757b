package testdb

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/pgserver"
)

// cacheRoot makes a folder for caches and binaries' folders the server
// account can enter, removed at cleanup.
func cacheRoot(t *testing.T) string {
	t.Helper()
	root, err := memoryTempDir("console-cache-test-")
	if root == "" && err == nil {
		root, err = pgserver.TempDir("console-cache-test-")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

func binaryDir(t *testing.T, root, name string) string {
	t.Helper()
	d := filepath.Join(root, name)
	if err := os.Mkdir(d, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o711); err != nil {
		t.Fatal(err)
	}
	return d
}

// systemID is the cluster's identifier, made by initdb: two servers share
// it only when one's cluster is a copy of the other's.
func systemID(t *testing.T, srv *pgserver.Server) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id int64
	if err := conn.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// A binary's server is a copy of the cache, which holds both migrated
// templates; the next binary copies the same cache (no initdb), into a
// folder of its own; a cache without its ready mark (a build that died)
// is built again.
func TestCachedClusterIsCopiedNotRebuilt(t *testing.T) {
	SkipShort(t, "three servers and two initdb runs")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := cacheRoot(t)
	start := func(name string) *pgserver.Server {
		t.Helper()
		srv, err := startCachedIn(ctx, binaryDir(t, root, name), "testdb", ServerSettings)
		if err != nil {
			t.Fatalf("start %s from the cache: %v", name, err)
		}
		t.Cleanup(func() { srv.Stop() })
		return srv
	}
	first := start("first")
	for _, db := range []string{cachedTemplate, cachedOwnedTemplate} {
		conn, err := pgx.Connect(ctx, first.URL(db))
		if err != nil {
			t.Fatalf("the copy has no %s: %v", db, err)
		}
		var jobs *string
		err = conn.QueryRow(ctx, "SELECT to_regclass('jobs')::text").Scan(&jobs)
		conn.Close(ctx)
		if err != nil || jobs == nil {
			t.Fatalf("%s is not migrated (jobs: %v, %v)", db, jobs, err)
		}
	}
	second := start("second")
	if a, b := systemID(t, first), systemID(t, second); a != b {
		t.Fatalf("the second binary's cluster was made anew (system identifier %d, the first's %d), not copied", b, a)
	}
	if first.DataDir() == second.DataDir() {
		t.Fatalf("both binaries run on one folder %s", first.DataDir())
	}

	caches, _ := filepath.Glob(filepath.Join(root, cachePrefix+"*[^k]"))
	if len(caches) != 1 {
		t.Fatalf("caches in %s: %v, want one", root, caches)
	}
	if err := os.Remove(filepath.Join(caches[0], "ready")); err != nil {
		t.Fatal(err)
	}
	if third := start("third"); systemID(t, third) == systemID(t, first) {
		t.Fatal("a cache without its ready mark was copied, not built again")
	}
}

// A cache is removed once idle for cacheIdle, unless it is the run's own
// or another binary holds its lock.
func TestIdleCachesAreRemoved(t *testing.T) {
	root := cacheRoot(t)
	old := time.Now().Add(-2 * cacheIdle)
	mk := func(key string, at time.Time) string {
		d := filepath.Join(root, cachePrefix+key)
		if err := os.MkdirAll(d, 0o711); err != nil {
			t.Fatal(err)
		}
		ready := filepath.Join(d, "ready")
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(ready, at, at); err != nil {
			t.Fatal(err)
		}
		return d
	}
	own, idle, recent, busy := mk("own", old), mk("idle", old), mk("recent", time.Now()), mk("busy", old)
	lock, err := lockFile(busy+".lock", syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()

	removeIdleCaches(root, own)
	for d, want := range map[string]bool{own: true, idle: false, recent: true, busy: true} {
		_, err := os.Stat(d)
		if got := err == nil; got != want {
			t.Errorf("%s kept: %v, want %v", filepath.Base(d), got, want)
		}
	}
}
