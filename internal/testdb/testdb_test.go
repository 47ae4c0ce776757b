package testdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/migrations"
)

func TestMain(m *testing.M) { Main(m) }

func TestNewIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := New(t), New(t)
	_, err := a.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('q', 'noop')")
	require.NoError(t, err)
	require.Zero(t, Count(t, b, "SELECT count(*) FROM jobs"), "databases must not share rows")
	require.Equal(t, 1, Count(t, a, "SELECT count(*) FROM jobs WHERE queue = $1", "q"))
}

func TestTxRollsBack(t *testing.T) {
	ctx := context.Background()
	t.Run("Write", func(t *testing.T) {
		tx := Tx(t)
		_, err := tx.Exec(ctx, "INSERT INTO queue_settings (queue, paused) VALUES ('rolled-back', true)")
		require.NoError(t, err)
	})
	t.Run("Gone", func(t *testing.T) {
		tx := Tx(t)
		var n int
		require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM queue_settings WHERE queue = 'rolled-back'").Scan(&n))
		require.Zero(t, n)
	})
}

// fatalRecorder stands in for a test so Eventually's failure can be seen
// without failing this test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	t.Parallel()
	t.Run("Holds", func(t *testing.T) {
		t.Parallel()
		var polls atomic.Int64
		r := &fatalRecorder{TB: t}
		Eventually(r, 10*time.Second, "third poll", func() bool { return polls.Add(1) >= 3 })
		require.Empty(t, r.msg)
		require.Equal(t, int64(3), polls.Load())
	})
	t.Run("TimesOut", func(t *testing.T) {
		t.Parallel()
		r := &fatalRecorder{TB: t}
		// The recorder's Fatalf returns instead of stopping, so the condition
		// turns true after the failure to end the loop.
		failed := func() bool { return r.msg != "" }
		Eventually(r, 50*time.Millisecond, "nothing", failed)
		require.Equal(t, "timed out after 50ms waiting for nothing", r.msg)
	})
}

// An OwnedURL database is one OwnerRole owns, schema included, fully
// migrated, and each is a database of its own: what the privilege tests
// rely on when they grant `console roles sql` in it.
func TestOwnedURLIsOwnedMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := Pool(t, OwnedURL(t)), Pool(t, OwnedURL(t))
	var dbOwner string
	require.NoError(t, a.QueryRow(ctx,
		"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&dbOwner))
	require.Equal(t, OwnerRole, dbOwner, "the database's owner")
	require.Zero(t, Count(t, a, `SELECT count(*) FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p', 'v', 'S')
		  AND pg_get_userbyid(relowner) <> $1
		  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = pg_class.oid AND e.deptype = 'e')`, OwnerRole),
		"tables, views and sequences not owned by %s", OwnerRole)
	require.NotZero(t, Count(t, a, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'"))
	conn, err := pgx.Connect(ctx, AsUser(t, OwnedURL(t), OwnerRole))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = migrations.Check(ctx, conn)
	require.NoError(t, err, "an owned database is fully migrated")
	_, err = a.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('q', 'noop')")
	require.NoError(t, err)
	require.Zero(t, Count(t, b, "SELECT count(*) FROM jobs"), "databases must not share rows")
}

// The test clusters go to memory only when TMPDIR does not name another
// place and shmDir is a tmpfs anyone may write to.
func TestMemoryTempDir(t *testing.T) {
	saved := shmDir
	t.Cleanup(func() { shmDir = saved })
	var fs syscall.Statfs_t
	if syscall.Statfs("/dev/shm", &fs) == nil && fs.Type == tmpfsMagic {
		t.Setenv("TMPDIR", "")
		shmDir = "/dev/shm"
		d, err := memoryTempDir("testdb-memory-")
		require.NoError(t, err)
		require.NotEmpty(t, d, "/dev/shm is a tmpfs: the clusters go there")
		t.Cleanup(func() { os.Remove(d) })
		require.Equal(t, "/dev/shm", filepath.Dir(d))
		st, err := os.Stat(d)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o711), st.Mode().Perm(), "the PostgreSQL account passes through, nobody lists")

		t.Setenv("TMPDIR", t.TempDir())
		d, err = memoryTempDir("testdb-memory-")
		require.NoError(t, err)
		require.Empty(t, d, "TMPDIR set: it decides")
	}
	t.Setenv("TMPDIR", "")
	shmDir = t.TempDir() // 0700, and not a tmpfs where /tmp is on disk
	d, err := memoryTempDir("testdb-memory-")
	require.NoError(t, err)
	require.Empty(t, d, "a folder that is not a world-writable tmpfs is not used")
}

// WaitBackend counts only its connection's database: a test beside it on
// the same server whose backend has the same name and state is neither
// taken for this test's nor counted with it.
func TestWaitBackendCountsOnlyItsDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var watchers []*pgx.Conn
	for range 2 {
		url := URL(t)
		release := HoldLock(t, url, "jobs")
		waiter := Connect(t, url, "same-name")
		waited := make(chan error, 1)
		go func() {
			_, err := waiter.Exec(ctx, "SELECT count(*) FROM jobs")
			waited <- err
		}()
		t.Cleanup(func() { release(); <-waited })
		watchers = append(watchers, Connect(t, url, "watch"))
	}
	// Both waiters wait on a lock: each database has exactly one.
	for _, w := range watchers {
		WaitBackend(t, w, "same-name", "wait_event_type = 'Lock'")
	}
}
