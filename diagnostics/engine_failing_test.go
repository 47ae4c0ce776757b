package diagnostics_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// fullDisk makes the jobs table of the test's database live on a tiny
// filesystem and returns a function that fills it and one that frees it.
// As root it mounts a 4 MiB tmpfs and moves the jobs heap there through a
// tablespace, so the server itself hits ENOSPC (SQLSTATE 53100, "could not
// extend file"). Where no filesystem can be mounted (not root, or no
// permission), updates of jobs raise the same SQLSTATE from a trigger while
// the disk is "full", and the test says so.
func fullDisk(t *testing.T, ctx context.Context, pool *pgxpool.Pool) (fill, free func()) {
	t.Helper()
	if real, fill, free := tmpfsDisk(t, ctx, pool); real {
		return fill, free
	}
	t.Log("no filesystem could be mounted: a trigger raises SQLSTATE 53100 while the disk is full")
	_, err := pool.Exec(ctx, `
		CREATE TABLE disk_full (is_full boolean NOT NULL);
		INSERT INTO disk_full VALUES (false);
		CREATE FUNCTION disk_full_check() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF (SELECT is_full FROM disk_full) THEN
				RAISE EXCEPTION 'could not extend file "base/0/0": No space left on device'
					USING ERRCODE = '53100', HINT = 'Check free disk space.';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER disk_full BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION disk_full_check()`)
	require.NoError(t, err)
	set := func(full bool) func() {
		return func() {
			_, err := pool.Exec(ctx, "UPDATE disk_full SET is_full = $1", full)
			require.NoError(t, err)
		}
	}
	return set(true), set(false)
}

// tmpfsDisk is fullDisk's real filesystem; real is false when it cannot be
// made here.
func tmpfsDisk(t *testing.T, ctx context.Context, pool *pgxpool.Pool) (real bool, fill, free func()) {
	if os.Geteuid() != 0 {
		return false, nil, nil
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		return false, nil, nil
	}
	dir, err := os.MkdirTemp("/tmp", "console-fulldisk-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { os.Remove(dir) })
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700,uid="+pg.Uid+",gid="+pg.Gid, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("mount a tmpfs: %v: %s", err, out)
		return false, nil, nil
	}
	t.Cleanup(func() {
		// Lazily: a backend may still hold a file of the moved table open.
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	space := fmt.Sprintf("fulldisk_%d_%d", os.Getpid(), time.Now().UnixNano())
	admin := testdb.Pool(t, testdb.AdminURL(t))
	_, err = admin.Exec(ctx, fmt.Sprintf("CREATE TABLESPACE %s LOCATION '%s'", space, dir))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ALTER TABLE jobs SET TABLESPACE "+space)
	require.NoError(t, err)
	t.Cleanup(func() {
		// Back to the default tablespace before the database is dropped,
		// so the tablespace can go and the filesystem be unmounted.
		bg := context.Background()
		if _, err := pool.Exec(bg, "ALTER TABLE jobs SET TABLESPACE pg_default"); err != nil {
			t.Errorf("move jobs back: %v", err)
		}
		if _, err := admin.Exec(bg, "DROP TABLESPACE "+space); err != nil {
			t.Errorf("drop tablespace: %v", err)
		}
	})
	filler := filepath.Join(dir, "filler")
	fill = func() {
		f, err := os.Create(filler)
		require.NoError(t, err)
		defer f.Close()
		block := make([]byte, 64<<10)
		for {
			if _, err := f.Write(block); err != nil {
				break // ENOSPC: full
			}
		}
	}
	free = func() { require.NoError(t, os.Remove(filler)) }
	return true, fill, free
}

// TestEngineFailingOnAFullDisk fills the disk under the jobs table while a
// worker runs: the worker reports SQLSTATE 53100 in its heartbeat and its
// metrics, a findings round says the engine is failing, and once the disk
// is freed every job finishes; none is lost.
func TestEngineFailingOnAFullDisk(t *testing.T) {
	ctx, url, pool := freshPool(t)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err := pool.Exec(ctx, "CREATE TABLE runs (job_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
	require.NoError(t, err)
	const n = 400
	ps := make([]queues.EnqueueParams, n)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: "disk", Kind: "work", Payload: map[string]string{"pad": fmt.Sprintf("%0200d", i)}}
	}
	_, err = queues.EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	fill, free := fullDisk(t, ctx, pool)
	fill()

	reg := prometheus.NewRegistry()
	c, err := queues.NewClient(testdb.Pool(t, url), queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{"disk": {Concurrency: 4}},
		PollInterval: 50 * time.Millisecond, LeaseDuration: 2 * time.Second,
		RetryBase: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		ID: "disk-worker", Registerer: reg,
	})
	require.NoError(t, err)
	c.Handle("work", func(ctx context.Context, j *queues.Job) error {
		_, err := pool.Exec(ctx, "INSERT INTO runs (job_id) VALUES ($1)", j.ID)
		return err
	})
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Stop(sctx)
	})

	// The worker reports the server's refusals in its heartbeat.
	d := open(t, url, diagnostics.Config{})
	var failing findings.Finding
	eventually(t, 90*time.Second, func() (bool, string) {
		rep, err := findings.Run(ctx, d)
		if err != nil {
			return false, err.Error()
		}
		for _, f := range rep.Findings {
			if f.Code == findings.CodeEngineErrors {
				failing = f
				return true, ""
			}
		}
		return false, fmt.Sprintf("no %s finding yet: %+v", findings.CodeEngineErrors, rep.Findings)
	})
	require.Equal(t, findings.SeverityCritical, failing.Severity, "%+v", failing)
	require.Equal(t, "53100", failing.Subject["sqlstate"], "%+v", failing)
	require.Contains(t, failing.Title, "The engine is failing:")
	require.Contains(t, failing.Title, "53100")
	require.Contains(t, failing.Evidence, "the database's disk is full")
	require.Positive(t, engineErrors(t, reg, "53"), "queues_engine_errors_total{sqlstate_class=53}")

	// Freed: everything finishes, nothing is lost, and the finding clears
	// once the errors are a minute old.
	free()
	eventually(t, 2*time.Minute, func() (bool, string) {
		var done int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&done))
		return done == n, fmt.Sprintf("%d of %d done", done, n)
	})
	var missing, twice int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE r.runs = 0), count(*) FILTER (WHERE r.runs > 1)
		FROM jobs j, LATERAL (SELECT count(*) AS runs FROM runs WHERE job_id = j.id) r`).Scan(&missing, &twice))
	require.Zero(t, missing, "every job ran")
	// The claims failed first (the disk was full before the worker
	// started), so no job ran before the disk was freed, and none twice.
	require.Zero(t, twice, "no job ran twice")
}

// engineErrors is the worker's error counter for one SQLSTATE class,
// summed over operations.
func engineErrors(t *testing.T, reg *prometheus.Registry, class string) float64 {
	t.Helper()
	n, err := metricsum.Counter(reg, "queues_engine_errors_total", "sqlstate_class", class)
	require.NoError(t, err)
	return n
}
