// Package testdb gives tests a real, migrated PostgreSQL database.
//
// One private server (the same launcher as the console's embedded default)
// is started per test binary, on first use, from a copy of a cluster
// initialised and migrated once for all the binaries (see cache.go); every
// test gets its own database cloned from its migrated template, which is
// fast (no initdb, no migration per test or per binary). Call Main from the
// package's TestMain so the server is stopped when the tests end. The servers' folders are in
// /dev/shm when it is a tmpfs and TMPDIR is unset, elsewhere in TMPDIR.
//
// TEST_DATABASE_URL points the harness at an existing server instead (it must
// allow CREATE DATABASE); PG_BIN picks the server binaries (for example
// PostgreSQL 18 next to Debian's 15).
package testdb

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/internal/pgserver"
)

var (
	once     sync.Once
	setupErr error
	server   *pgserver.Server
	baseMu   sync.Mutex // guards baseDir: dedicated servers start from parallel tests
	baseDir  string
	adminURL string // a URL to the server's maintenance database
	template string
	counter  atomic.Int64
	// copyFiles is " STRATEGY FILE_COPY" on PostgreSQL 15 and later. A test
	// database copied file by file costs the server about half the CPU of
	// the default, which writes the whole template into the WAL: on this
	// suite's thousand databases, a fifth of the inner loop's CPU. Its
	// checkpoints are cheap on the private test server (fsync off, data in
	// memory), so only that server uses it.
	copyFiles string
)

// Main runs the tests and stops the server afterwards. Use it as
//
//	func TestMain(m *testing.M) { testdb.Main(m) }
func Main(m *testing.M) {
	flag.Parse()
	if testing.Short() && !flagGiven("test.parallel") {
		flag.Set("test.parallel", strconv.Itoa(shortParallel))
	}
	code := m.Run()
	teardown()
	os.Exit(code)
}

func teardown() {
	adminMu.Lock()
	if admin != nil {
		admin.Close()
		admin = nil
	}
	adminMu.Unlock()
	if template != "" && setupErr == nil && server == nil {
		if conn, err := pgx.Connect(context.Background(), adminURL); err == nil {
			templatesMu.Lock()
			dbs := append([]string{template, ownedTemplate}, templates...)
			templatesMu.Unlock()
			for _, db := range dbs {
				if db != "" {
					conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize())
				}
			}
			conn.Close(context.Background())
		}
	}
	if server != nil {
		writeStats()
		server.Stop()
	}
	if baseDir != "" {
		os.RemoveAll(baseDir)
	}
}

// ServerSettings are the settings of the per-binary test server: room for
// many pools, prepared transactions and logical slots for the diagnostics
// tests, and pg_stat_statements. JIT is off, as the console turns it off on
// its own connections: the tests' pools would otherwise compile the plans
// of the engine's statements, whose estimates on a freshly filled table
// cross jit_above_cost (the queues page's statement spent 1.5 s compiling
// in one run of web's tests).
var ServerSettings = map[string]string{
	"jit":                       "off",
	"max_connections":           "300",
	"max_prepared_transactions": "10",
	"wal_level":                 "logical",
	"max_wal_senders":           "10",
	"max_replication_slots":     "10",
	"shared_preload_libraries":  "pg_stat_statements",
	"track_io_timing":           "on",
	"shared_buffers":            "64MB",
}

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		// A server other binaries may share: a template of this process's own.
		adminURL = u
		template = fmt.Sprintf("console_template_%d", os.Getpid())
		setupErr = makeTemplate(ctx, adminURL, template, false)
		return
	}
	settings := statsSettings(ServerSettings)
	srv, err := startCached(ctx, "testdb", settings)
	if err == nil {
		template = cachedTemplate
	} else {
		fmt.Fprintf(os.Stderr, "testdb: no cached cluster (%v); this binary runs initdb and migrates its own\n", err)
		if srv, err = NewServerDir(ctx, "testdb", settings); err != nil {
			setupErr = err
			return
		}
		template = fmt.Sprintf("console_template_%d", os.Getpid())
		if err := makeTemplate(ctx, srv.URL("postgres"), template, true); err != nil {
			srv.Stop()
			setupErr = err
			return
		}
	}
	server = srv
	adminURL = srv.URL("postgres")
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		setupErr = fmt.Errorf("connect to test server: %w", err)
		return
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		setupErr = fmt.Errorf("read the test server's version: %w", err)
		return
	}
	// Not on a TEST_DATABASE_URL server: its disk may be slow to checkpoint.
	if version >= 150000 {
		copyFiles = " STRATEGY FILE_COPY"
	}
}

// NewServerDir starts a private throwaway server in a fresh folder under
// pgserver.TempDir, for tests that need a server of their own (restarts, a
// standby). The caller stops it; Main removes nothing of it.
func NewServerDir(ctx context.Context, name string, settings map[string]string) (*pgserver.Server, error) {
	base, err := ensureBaseDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	return pgserver.Start(ctx, pgserver.Config{
		Dir:      filepath.Join(dir, "pg"),
		BinDir:   os.Getenv("PG_BIN"),
		Trust:    true,
		Fast:     true,
		Settings: settings,
	})
}

// ensureBaseDir creates, once, the folder every server of this binary lives
// under, one the PostgreSQL account can enter when we are root (even when
// TMPDIR is a folder only root can enter).
func ensureBaseDir() (string, error) {
	baseMu.Lock()
	defer baseMu.Unlock()
	if baseDir == "" {
		d, err := memoryTempDir("console-test-")
		if d == "" && err == nil {
			d, err = pgserver.TempDir("console-test-")
		}
		if err != nil {
			return "", err
		}
		baseDir = d
	}
	return baseDir, nil
}

// shmDir is the memory-backed folder the test clusters go to when TMPDIR
// does not say otherwise.
var shmDir = "/dev/shm"

// memoryTempDir creates a fresh folder (mode 0711) for the test clusters
// under shmDir when TMPDIR is unset and shmDir is a tmpfs anyone may enter
// and write to (sticky, like /tmp), and returns "" otherwise. A cluster on
// disk spends most of CREATE DATABASE, initdb and checkpoints in the
// kernel's write path, even with fsync off; in memory it does not (a test
// database is created about ten times faster). The clusters are
// throwaway, so memory loses nothing a test needs.
func memoryTempDir(pattern string) (string, error) {
	if os.Getenv("TMPDIR") != "" {
		return "", nil
	}
	var fs syscall.Statfs_t
	st, err := os.Stat(shmDir)
	if err != nil || !st.IsDir() || st.Mode()&(os.ModeSticky|0o003) != os.ModeSticky|0o003 ||
		syscall.Statfs(shmDir, &fs) != nil || fs.Type != tmpfsMagic {
		return "", nil
	}
	d, err := os.MkdirTemp(shmDir, pattern)
	if err != nil {
		return "", nil
	}
	if err := os.Chmod(d, 0o711); err != nil {
		os.Remove(d)
		return "", err
	}
	return d, nil
}

// tmpfsMagic is TMPFS_MAGIC, statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// SkipShort skips t under `go test -short`, the inner loop of unit and
// single-database tests: what (a browser test, a dedicated server, a
// process of its own) runs in the full suite, `make test` and CI.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: skipped by -short (make test runs it)", what)
	}
}

// NewServer starts a dedicated server for one test and stops it at cleanup.
// It is skipped by -short.
func NewServer(t testing.TB, settings map[string]string) *pgserver.Server {
	t.Helper()
	SkipShort(t, "a test with a PostgreSQL server of its own")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if settings == nil {
		settings = ServerSettings
	}
	srv, err := NewServerDir(ctx, "dedicated", settings)
	if err != nil {
		t.Fatalf("start a dedicated PostgreSQL: %v", err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv
}

func ensure(t testing.TB) {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("test database unavailable: %v\n(make test installs PostgreSQL; or set TEST_DATABASE_URL)", setupErr)
	}
}

// URL creates a fresh migrated database for this test and returns its URL;
// the database is dropped at cleanup. Use it when something other than a pool
// must connect (a child process, a second client).
func URL(t testing.TB) string {
	t.Helper()
	ensure(t)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	return createDatabase(t, name, "TEMPLATE "+pgx.Identifier{template}.Sanitize(), "test database")
}

// EmptyURL creates a fresh database with no migration applied, for tests
// of the migrations themselves, and returns its URL; it is dropped at
// cleanup.
func EmptyURL(t testing.TB) string {
	t.Helper()
	ensure(t)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	return createDatabase(t, name, "TEMPLATE template0", "empty test database")
}

// createDatabase creates database name on the test server with options
// (the rest of CREATE DATABASE), drops it at cleanup and returns its URL.
// what names it in the failure.
func createDatabase(t testing.TB, name, options, what string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := adminPool()
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " " + options + copyFiles
	if _, err := admin.Exec(ctx, create); err != nil {
		// Once more on a fresh connection: a test may have terminated
		// the pool's (a backend.terminate of every session).
		admin.Reset()
		if _, err := admin.Exec(ctx, create); err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	statsDatabase(name, t)
	t.Cleanup(func() {
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	return withDatabase(adminURL, name)
}

var (
	adminMu sync.Mutex
	admin   *pgxpool.Pool
)

// adminPool returns the binary's pool on the maintenance database, which
// creates and drops the test databases. A connection costs the server tens
// of milliseconds of CPU (a fork, cold catalog caches, the exit), as much
// as the database's copy: two per test database were a third of what
// the server spent on a test that opens one more.
func adminPool() (*pgxpool.Pool, error) {
	adminMu.Lock()
	defer adminMu.Unlock()
	if admin == nil {
		cfg, err := pgxpool.ParseConfig(adminURL)
		if err != nil {
			return nil, err
		}
		cfg.MaxConns = 2
		cfg.ConnConfig.RuntimeParams["application_name"] = "testdb admin"
		if admin, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			return nil, err
		}
	}
	return admin, nil
}

// New creates a fresh migrated database for this test and returns a pool on
// it, closed at cleanup.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, URL(t))
}

// Pool opens a pool on url and closes it at cleanup.
func Pool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var (
	sharedOnce sync.Once
	sharedURL  string
)

// Tx returns a transaction on a migrated database shared by the package's
// tests, rolled back at cleanup: the cheapest isolation for tests that need
// no commit and one connection.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	ensure(t)
	sharedOnce.Do(func() { sharedURL = URL(&keepAlive{TB: t, name: "(testdb.Tx)"}) })
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sharedURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	t.Cleanup(func() {
		tx.Rollback(ctx)
		conn.Close(ctx)
	})
	return tx
}

// keepAlive lets a database outlive the test that created it (the shared
// one of Tx, a Template's): its cleanup is dropped (the server goes away
// with the binary), and name labels it in the cost report (StatsEnv).
type keepAlive struct {
	testing.TB
	name string
}

func (*keepAlive) Cleanup(func()) {}

func (k *keepAlive) Name() string { return k.name }

// AdminURL returns a superuser URL of the test server's maintenance database.
func AdminURL(t testing.TB) string {
	t.Helper()
	ensure(t)
	return adminURL
}

// Server returns the per-binary server, or nil when TEST_DATABASE_URL is set.
func Server(t testing.TB) *pgserver.Server {
	t.Helper()
	ensure(t)
	return server
}

func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + db
	return u.String()
}

// shortParallel is how many parallel tests a binary runs at once under
// -short when -parallel is not given (go test's default is GOMAXPROCS).
// Most of a test's time is spent waiting on its server (a lock timeout, a
// round trip, a process starting), so on 2 cores go test's 2 leaves CPU
// idle. Measured on two 2-core machines: one where the run was bound by
// CPU took 118, 108, 108 and 118 s at 2, 4, 6 and 8; one that spent a
// third of that CPU on the same run took 63, 58 and 57 s at 4, 6 and 8.
// Six is the best of both. The full run keeps go test's default: under
// -race each test costs several times the CPU, and CI's timings stay as
// they were.
const shortParallel = 6

// flagGiven says whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
