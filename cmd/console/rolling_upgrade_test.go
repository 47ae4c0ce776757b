package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
	"github.com/pgconsole/console/queues"
)

// previousRelease names the console the rolling-upgrade test upgrades
// from: the commit that added this migration, the first console that runs
// against a range of schema versions. Every migration after it is an
// expand, so that console runs against this build's schema.
const previousRelease = "migrations/021_schema_compat.sql"

// buildPrevious builds the console of the commit that added
// previousRelease into a temporary directory and returns the binary and its
// schema version. It skips the test when the git history is not there (a
// source tarball, a shallow clone that lacks the commit).
func buildPrevious(t *testing.T) (string, int32) {
	t.Helper()
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", args...).Output()
		return strings.TrimSpace(string(out)), err
	}
	root, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("the previous console is built from git history, and there is none here (git rev-parse: %v)", err)
	}
	sha, err := git("-C", root, "log", "--diff-filter=A", "--format=%H", "-1", "--", previousRelease)
	if err != nil || sha == "" {
		t.Skipf("the previous console is built from the commit that added %s, which this history lacks (%v)", previousRelease, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(src, 0o755))
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, sha, src)
	out, err := archive.CombinedOutput()
	require.NoError(t, err, "unpack %s: %s", sha, out)
	var version int32
	names, err := filepath.Glob(filepath.Join(src, "migrations", "*.sql"))
	require.NoError(t, err)
	version = int32(len(names))

	bin := filepath.Join(dir, "console-previous")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/console")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "build the console of %s: %s", sha, out)
	t.Logf("previous console: %s, schema version %d", sha[:12], version)
	return bin, version
}

// consoleProcess starts bin (empty: this build, the test binary run as
// main) with args against url; its output is collected and logged when
// the test fails.
func consoleProcess(t *testing.T, bin, url, args string) (*exec.Cmd, *logbuf.Buffer) {
	t.Helper()
	env := append(os.Environ(), "DATABASE_URL="+url)
	var cmd *exec.Cmd
	if bin == "" {
		cmd = exec.Command(os.Args[0])
		env = append(env, "CONSOLE_TEST_MAIN=1", "CONSOLE_TEST_ARGS="+args)
	} else {
		cmd = exec.Command(bin, strings.Fields(args)...)
	}
	out := &logbuf.Buffer{}
	cmd.Stdout, cmd.Stderr, cmd.Env = out, out, env
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s %s (pid %d) output:\n%s", filepath.Base(cmd.Path), args, cmd.Process.Pid, out.String())
		}
	})
	return cmd, out
}

// consoleRun runs bin with args against url to its end and returns its
// output, failing the test when it exits non-zero.
func consoleRun(t *testing.T, bin, url, args string) string {
	t.Helper()
	cmd, out := consoleProcess(t, bin, url, args)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "%s: %s", args, out.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not end within 2 minutes: %s", args, out.String())
	}
	return out.String()
}

// TestRollingUpgrade upgrades a working fleet without stopping it: the
// previous console (built from git history) works a queue under load on
// its own schema; this build's `migrate up` runs beside it; the previous
// console keeps working and one started afresh comes up on the newer
// schema; this build's worker starts and the previous ones stop. Every job
// is run exactly once: each job's handler writes one ledger row keyed by
// its job id, with the worker that ran it and the schema version it saw.
func TestRollingUpgrade(t *testing.T) {
	testdb.SkipShort(t, "a rolling upgrade between two console builds")
	prev, prevVersion := buildPrevious(t)
	latest := migrations.Binary().Max
	if prevVersion >= latest {
		t.Skipf("the previous console already carries every migration (%d): nothing to upgrade", prevVersion)
	}
	ctx := context.Background()
	url := testdb.EmptyURL(t)

	out := consoleRun(t, prev, url, "migrate up")
	require.Contains(t, out, fmt.Sprintf("schema is at version %d of %d", prevVersion, prevVersion))
	pool := testdb.Pool(t, url)
	_, err := pool.Exec(ctx, `CREATE TABLE upgrade_ledger (
		job_id bigint NOT NULL, owner text NOT NULL, schema_version integer NOT NULL)`)
	require.NoError(t, err)

	// Load: jobs enqueued every few milliseconds until the end.
	const statement = `INSERT INTO upgrade_ledger (job_id, owner, schema_version)
		SELECT j.id, j.lease_owner, (SELECT version FROM console_schema_version)
		FROM jobs AS j WHERE j.id = split_part(current_setting('application_name'), 'job=', 2)::bigint`
	var (
		mu  sync.Mutex
		ids []int64
	)
	stop := make(chan struct{})
	loaded := make(chan error, 1)
	go func() {
		ps := make([]queues.EnqueueParams, 5)
		for i := range ps {
			ps[i] = queues.EnqueueParams{Queue: "roll", Kind: "sql", Payload: map[string]string{"statement": statement}}
		}
		for {
			select {
			case <-stop:
				loaded <- nil
				return
			case <-time.After(20 * time.Millisecond):
			}
			got, err := queues.EnqueueManyTx(ctx, pool, ps)
			if err != nil {
				loaded <- fmt.Errorf("enqueue during the upgrade: %w", err)
				return
			}
			mu.Lock()
			ids = append(ids, got...)
			mu.Unlock()
		}
	}()
	stopLoad := sync.OnceValue(func() error { close(stop); return <-loaded })
	t.Cleanup(func() { stopLoad() })

	const workerArgs = "worker --queues roll --concurrency 4 --poll 100ms --allow-sql-jobs --drain 60s"
	ran := func(cmd *exec.Cmd, version int32) int {
		return countRows(t, pool, `SELECT count(*) FROM upgrade_ledger AS l JOIN workers AS w ON w.id = l.owner
			WHERE w.pid = $1 AND l.schema_version = $2`, cmd.Process.Pid, version)
	}
	waitRan := func(cmd *exec.Cmd, version int32, what string) {
		t.Helper()
		testdb.Eventually(t, 2*time.Minute, what, func() bool { return ran(cmd, version) >= 5 })
	}

	old1, _ := consoleProcess(t, prev, url, workerArgs)
	waitRan(old1, prevVersion, "the previous console's worker to run jobs on its own schema")

	out = consoleRun(t, "", url, "migrate up")
	require.Contains(t, out, fmt.Sprintf("schema is at version %d of %d", latest, latest))
	waitRan(old1, latest, "the previous console's worker to go on running jobs once the schema is newer")

	out = consoleRun(t, prev, url, "migrate up")
	require.Contains(t, out, fmt.Sprintf("schema is at version %d, newer than this console's %d; every migration since is an expand", latest, prevVersion),
		"the previous console's migrate up leaves the newer schema alone")
	old2, _ := consoleProcess(t, prev, url, workerArgs)
	waitRan(old2, latest, "a previous console's worker started on the newer schema to run jobs")
	require.NoError(t, exitOnSIGTERM(t, old1, "the first previous worker"), "it drains and exits 0")

	current, _ := consoleProcess(t, "", url, workerArgs)
	waitRan(current, latest, "this build's worker to run jobs")
	require.NoError(t, exitOnSIGTERM(t, old2, "the second previous worker"), "it drains and exits 0")

	require.NoError(t, stopLoad())
	mu.Lock()
	n := len(ids)
	mu.Unlock()
	testdb.Eventually(t, 2*time.Minute, "every enqueued job to be done", func() bool {
		return countRows(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'roll' AND status = 'done'") == n
	})
	require.NoError(t, exitOnSIGTERM(t, current, "this build's worker"))

	require.Equal(t, n, countRows(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'roll'"), "no job but those enqueued")
	require.Equal(t, n, countRows(t, pool, "SELECT count(DISTINCT job_id) FROM upgrade_ledger"), "every job ran: nothing lost")
	require.Equal(t, n, countRows(t, pool, "SELECT count(*) FROM upgrade_ledger"), "no job ran twice: nothing doubled")
	require.Zero(t, countRows(t, pool, "SELECT count(*) FROM upgrade_ledger AS l LEFT JOIN jobs AS j ON j.id = l.job_id WHERE j.id IS NULL"))
	t.Logf("%d jobs: previous worker %d on %d and %d on %d, restarted previous worker %d, this build's worker %d",
		n, ran(old1, prevVersion), prevVersion, ran(old1, latest), latest, ran(old2, latest), ran(current, latest))
}
