package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/migrations"
)

// The per-binary server starts from a copy of a cached cluster: initdb and
// the template's migration run once per set of server binaries and
// migrations, not once per test binary. A `go test ./...` runs a score of
// binaries that use the database, and initdb plus a migration is most of
// the CPU a binary spends before its first test. The cache is a stopped
// cluster next to the binaries' folders (in /dev/shm, or TMPDIR), guarded by
// a lock file: the first binary builds it, the others wait and copy it.
// Nothing of it runs between test binaries, a binary that dies while
// building leaves no "ready" mark (the next one rebuilds), and a cache no
// run has used for cacheIdle is removed by the next run that finds it.

// cachedTemplate is the migrated template's name in a cached cluster: the
// cluster is the binary's own, so the name needs no process id.
const cachedTemplate = "console_template"

// cacheFormat changes when what a cached cluster holds changes (not the
// migrations or the server binaries: the key covers those).
const cacheFormat = "2"

// cacheIdle is how long an unused cache of another key is kept: other
// worktrees' runs may still be using theirs.
const cacheIdle = time.Hour

// cacheKey identifies a cached cluster: the account and server binaries it
// was made by and the migrations its templates hold.
func cacheKey(binDir string) (string, error) {
	h := sha256.New()
	// The user too: another account cannot open a cache's lock or files.
	fmt.Fprintf(h, "format %s uid %d\n", cacheFormat, os.Getuid())
	postgres, err := filepath.EvalSymlinks(filepath.Join(binDir, "postgres"))
	if err != nil {
		return "", err
	}
	st, err := os.Stat(postgres)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "postgres %s %d %d\n", postgres, st.Size(), st.ModTime().UnixNano())
	err = fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "migration %s %d\n", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the embedded migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// startCached starts a server named name under the binary's folder from a
// copy of the cached cluster of its key, building the cache first when it
// is missing. The copy holds cachedTemplate, migrated.
func startCached(ctx context.Context, name string, settings map[string]string) (*pgserver.Server, error) {
	base, err := ensureBaseDir()
	if err != nil {
		return nil, err
	}
	return startCachedIn(ctx, base, name, settings)
}

// startCachedIn is startCached for a binary whose folder is base: the
// cache is base's sibling.
func startCachedIn(ctx context.Context, base, name string, settings map[string]string) (*pgserver.Server, error) {
	bin, err := pgserver.FindBinDir(os.Getenv("PG_BIN"))
	if err != nil {
		return nil, err
	}
	key, err := cacheKey(bin)
	if err != nil {
		return nil, fmt.Errorf("key the cached test cluster: %w", err)
	}
	root := filepath.Dir(base)
	cache := filepath.Join(root, cachePrefix+key)
	lock, err := lockFile(cache+".lock", syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	ready := filepath.Join(cache, "ready")
	if _, err := os.Stat(ready); err != nil {
		if err := buildCache(ctx, cache, bin, settings); err != nil {
			os.RemoveAll(cache)
			return nil, fmt.Errorf("build the cached test cluster in %s: %w", cache, err)
		}
	}
	now := time.Now()
	os.Chtimes(ready, now, now)
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "pg"), 0o755); err != nil {
		return nil, err
	}
	pgdata := filepath.Join(dir, "pg", "pgdata")
	if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(cache, "pg", "pgdata"), pgdata).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the cached test cluster %s: %v: %s", cache, err, strings.TrimSpace(string(out)))
	}
	lock.Close()
	removeIdleCaches(root, cache)
	srv, err := pgserver.Start(ctx, pgserver.Config{
		Dir: filepath.Join(dir, "pg"), BinDir: bin, Trust: true, Fast: true, Settings: settings,
	})
	if err != nil {
		return nil, err
	}
	if srv.DataDir() != pgdata {
		srv.Stop()
		return nil, fmt.Errorf("the copy of the cached test cluster was not used: %s", srv.Relocation())
	}
	return srv, nil
}

const cachePrefix = "console-testdb-cache-"

// buildCache makes the cached cluster in cache: initdb, cachedTemplate with
// pg_stat_statements and every migration, OwnerRole and
// cachedOwnedTemplate (migrated as OwnerRole), then a clean shutdown, and
// last the "ready" mark.
func buildCache(ctx context.Context, cache, bin string, settings map[string]string) error {
	if err := os.RemoveAll(cache); err != nil {
		return err
	}
	if err := os.Mkdir(cache, 0o711); err != nil {
		return err
	}
	if err := os.Chmod(cache, 0o711); err != nil {
		return err
	}
	dir := filepath.Join(cache, "pg")
	srv, err := pgserver.Start(ctx, pgserver.Config{Dir: dir, BinDir: bin, Trust: true, Fast: true, Settings: settings})
	if err != nil {
		return err
	}
	defer srv.Stop()
	if srv.DataDir() != filepath.Join(dir, "pgdata") {
		return fmt.Errorf("the server put its cluster elsewhere: %s", srv.Relocation())
	}
	if err := makeTemplate(ctx, srv.URL("postgres"), cachedTemplate, true); err != nil {
		return err
	}
	if err := makeOwnedTemplate(ctx, srv.URL("postgres"), cachedOwnedTemplate, true); err != nil {
		return err
	}
	if err := srv.Stop(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cache, "ready"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

// makeTemplate creates database name on the server at adminURL, with
// pg_stat_statements (required when ours is true: the private servers
// preload it) and every migration.
func makeTemplate(ctx context.Context, adminURL, name string, ours bool) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	tc, err := pgx.Connect(ctx, withDatabase(adminURL, name))
	if err != nil {
		return err
	}
	defer tc.Close(ctx)
	if _, err := tc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil && ours {
		return fmt.Errorf("create pg_stat_statements: %w", err)
	}
	if _, err := migrations.Up(ctx, tc); err != nil {
		return fmt.Errorf("migrate template database: %w", err)
	}
	return nil
}

// lockFile opens path (creating it) and takes how (LOCK_EX or LOCK_SH,
// maybe with LOCK_NB) on it; closing the file releases the lock.
func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the test cluster cache's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// removeIdleCaches removes the caches in root other than keep that no run
// has used for cacheIdle and no binary is building or copying.
func removeIdleCaches(root, keep string) {
	dirs, _ := filepath.Glob(filepath.Join(root, cachePrefix+"*"))
	for _, d := range dirs {
		if d == keep || strings.HasSuffix(d, ".lock") {
			continue
		}
		st, err := os.Stat(filepath.Join(d, "ready"))
		if err != nil {
			st, err = os.Stat(d)
		}
		if err != nil || time.Since(st.ModTime()) < cacheIdle {
			continue
		}
		lock, err := lockFile(d+".lock", syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			continue
		}
		os.RemoveAll(d)
		os.Remove(d + ".lock")
		lock.Close()
	}
}
