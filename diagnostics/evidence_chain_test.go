package diagnostics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// deadJobsHeldBy leaves n dead rows in jobs that a REPEATABLE READ
// snapshot of session holder keeps VACUUM from removing: the snapshot is
// taken first, then the rows are inserted and deleted, and VACUUM runs.
func deadJobsHeldBy(t *testing.T, url string, holder *pgx.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := holder.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	_, err = holder.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })
	w := connect(t, url, "churn")
	_, err = w.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'churn', 'k' FROM generate_series(1, $1)", n)
	require.NoError(t, err)
	_, err = w.Exec(ctx, "DELETE FROM jobs WHERE queue = 'churn'")
	require.NoError(t, err)
	_, err = w.Exec(ctx, "VACUUM jobs")
	require.NoError(t, err)
	_, err = w.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	require.NoError(t, err)
}

// Dead rows in a queue table are traced to the backend whose snapshot
// keeps VACUUM from removing them, and the horizon finding about that
// backend counts the dead rows it costs the queue tables.
func TestDeadQueueRowsNameTheHorizonHolder(t *testing.T) {
	ctx, url := freshDB(t)
	holder := connect(t, url, "nightly-report")
	deadJobsHeldBy(t, url, holder, 2000)
	th := lowThresholds()
	th.DeadTuples = 1000
	d := open(t, url, diagnostics.Config{Thresholds: th})
	pid := pidOf(holder)

	f := awaitFinding(t, d, findings.CodeDeadTuples, 15*time.Second, func(f findings.Finding) bool {
		return f.Subject["table"] == "public.jobs"
	})
	require.Equal(t, pid, f.Subject["pid"], "the dead rows name the backend holding them: %s", f.Evidence)
	require.Equal(t, "backend", f.Subject["holder_kind"])
	require.Contains(t, f.Evidence, fmt.Sprintf("backend pid %d", pid))
	require.Contains(t, f.Evidence, "nightly-report")
	require.Contains(t, f.Title, fmt.Sprintf("backend %d keeps VACUUM from removing", pid))

	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	h, ok := findingFor(rep, findings.CodeXminHorizon, "holder_id", pid)
	require.True(t, ok, "%v", codes(rep))
	require.GreaterOrEqual(t, h.Subject["queue_dead_rows"], int64(2000), h.Evidence)
	require.Contains(t, h.Evidence, "the queue tables carry")
	require.Equal(t, pid, h.Subject["pid"])

	// Without the snapshot VACUUM removes them and nothing names a holder.
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	_, err = holder.Exec(ctx, "VACUUM jobs")
	require.NoError(t, err)
	_, err = holder.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	require.NoError(t, err)
	eventually(t, 15*time.Second, func() (bool, string) {
		rep, err := findings.Run(ctx, d)
		require.NoError(t, err)
		_, held := findingFor(rep, findings.CodeXminHorizon, "holder_id", pid)
		_, dead := findingFor(rep, findings.CodeDeadTuples, "table", "public.jobs")
		return !held && !dead, strings.Join(codes(rep), "; ")
	})
}

// A backend of another database holds no horizon for this database's
// tables (PostgreSQL 14+ computes it per database): the queue table's dead
// rows are not blamed on it.
func TestDeadQueueRowsIgnoreOtherDatabases(t *testing.T) {
	ctx, url := freshDB(t)
	other := testdb.URL(t)
	elsewhere := connect(t, other, "elsewhere")
	_, err := elsewhere.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	_, err = elsewhere.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	t.Cleanup(func() { elsewhere.Exec(context.Background(), "ROLLBACK") })
	rows, err := diagnostics.XminHorizon(ctx, connect(t, url, "reader"))
	require.NoError(t, err)
	found := false
	for _, h := range rows {
		if h.Holder == fmt.Sprint(pidOf(elsewhere)) {
			found = true
			require.False(t, h.HoldsTables, "a backend of another database holds this database's tables: %+v", h)
		}
	}
	require.True(t, found, "the other database's backend is listed: %+v", rows)
}

// Connections are grouped by application as well as database, user and
// state, with where they come from: the finding reads "25 idle from
// billing-api".
func TestConnectionsNearMaxNamesTheApplication(t *testing.T) {
	ctx, url := freshDB(t)
	app := fmt.Sprintf("billing-api-%d", time.Now().UnixNano()%100000)
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = app
	for range 25 {
		c, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	admin := connect(t, url, "admin")
	rows, err := diagnostics.ConnectionPressure(ctx, admin)
	require.NoError(t, err)
	var mine *diagnostics.ConnectionGroup
	for i, g := range rows {
		if g.Application == app {
			require.Nil(t, mine, "one group per application, database, user and state: %+v", rows)
			mine = &rows[i]
		}
	}
	require.NotNil(t, mine, "%+v", rows)
	require.EqualValues(t, 25, mine.Connections)
	require.Equal(t, "idle", mine.State)
	require.NotEmpty(t, mine.ClientAddr)

	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, fmt.Sprintf("connections.near_max=%.4f", 5.0/float64(rows[0].Available()))))
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	f, _ := onlyFinding(t, d, findings.CodeConnections, "25 idle sessions of one application")
	require.Contains(t, f.Evidence, fmt.Sprintf("25 idle from %s (%s)", app, mine.ClientAddr))
}

// A deadlock between two sessions is counted between two rounds, in the
// database it happened in, and the finding says where the statements are
// found.
func TestDeadlockBetweenRoundsIsAFinding(t *testing.T) {
	ctx, url := freshDB(t)
	th := diagnostics.DefaultThresholds()
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	requireNoFinding(t, d, findings.CodeDeadlocks, "the first round has no window yet")

	setup := connect(t, url, "setup")
	_, err := setup.Exec(ctx, "CREATE TABLE dl (id int PRIMARY KEY, v int); INSERT INTO dl VALUES (1, 0), (2, 0)")
	require.NoError(t, err)
	a, b := connect(t, url, "deadlock-a"), connect(t, url, "deadlock-b")
	for _, c := range []*pgx.Conn{a, b} {
		_, err := c.Exec(ctx, "SET deadlock_timeout = '100ms'")
		require.NoError(t, err)
		_, err = c.Exec(ctx, "BEGIN")
		require.NoError(t, err)
	}
	_, err = a.Exec(ctx, "UPDATE dl SET v = 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = b.Exec(ctx, "UPDATE dl SET v = 1 WHERE id = 2")
	require.NoError(t, err)
	// Each side takes the other's row; the one the server cancels rolls
	// back at once, so the other's update goes through.
	second := func(c *pgx.Conn, id int, out chan<- error) {
		_, err := c.Exec(context.Background(), "UPDATE dl SET v = 2 WHERE id = $1", id)
		if err != nil {
			c.Exec(context.Background(), "ROLLBACK")
		} else if _, cerr := c.Exec(context.Background(), "COMMIT"); cerr != nil {
			err = fmt.Errorf("commit after the update went through: %w", cerr)
		}
		out <- err
	}
	errA, errB := make(chan error, 1), make(chan error, 1)
	go second(a, 2, errA)
	testdb.WaitBackend(t, setup, "deadlock-a", "wait_event_type = 'Lock'")
	go second(b, 1, errB)
	ea, eb := <-errA, <-errB
	require.True(t, (ea == nil) != (eb == nil), "exactly one side is canceled: a %v, b %v", ea, eb)
	failed := ea
	if failed == nil {
		failed = eb
	}
	require.Contains(t, failed.Error(), "40P01")
	// The canceled side counts the deadlock: its statistics are flushed
	// now, not when it has been idle for ten seconds.
	for _, c := range []*pgx.Conn{a, b} {
		_, err = c.Exec(ctx, "SELECT pg_stat_force_next_flush()")
		require.NoError(t, err)
	}

	dbName := setup.Config().Database
	f := awaitFinding(t, d, findings.CodeDeadlocks, 15*time.Second, nil)
	require.GreaterOrEqual(t, f.Subject["deadlocks"], int64(1))
	require.EqualValues(t, 1, f.Subject["databases"].(map[string]int64)[dbName], "%s", f.Evidence)
	require.Contains(t, f.Evidence, "deadlock detected")
	require.Contains(t, f.Evidence, "log_lock_waits")
	require.Contains(t, f.Evidence, dbName+" 1")
}

// archive_mode on with no archive_command: a critical finding from the
// first .ready segment, whatever the backlog threshold. Once an
// archive_command is set that never succeeds, the archiver archives
// nothing while .ready files age: archiver.stalled.
func TestArchivingConfiguredButNotRunning(t *testing.T) {
	t.Parallel()
	primary := primaryWithSchema(t, map[string]string{"archive_mode": "on"})
	url := primary.URL("postgres")
	ctx := context.Background()
	th := diagnostics.DefaultThresholds()
	th.ArchiverBacklog = 1000
	th.ArchiverStall = time.Second
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	conn := connect(t, url, "wal-switch")
	_, err := conn.Exec(ctx, "INSERT INTO filler (pad) VALUES ('x'); SELECT pg_switch_wal()")
	require.NoError(t, err)

	f := awaitFinding(t, d, findings.CodeArchiverNotConfigured, 15*time.Second, nil)
	require.Equal(t, findings.SeverityCritical, f.Severity)
	require.GreaterOrEqual(t, f.Subject["segments"], int64(1))
	require.Contains(t, f.Evidence, "archive_command and archive_library empty")
	requireNoFinding(t, d, findings.CodeArchiverBacklog, "one segment is far below the backlog threshold")
	requireNoFinding(t, d, findings.CodeArchiverStalled, "an archiver with nothing to run is not stalled, it is not configured")

	_, err = conn.Exec(ctx, "ALTER SYSTEM SET archive_command = 'false'")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	s := awaitFinding(t, d, findings.CodeArchiverStalled, 20*time.Second, nil)
	require.Equal(t, findings.SeverityCritical, s.Severity)
	require.GreaterOrEqual(t, s.Subject["oldest_ready_seconds"], 1.0)
	require.Contains(t, s.Evidence, "archived never")
	requireNoFinding(t, d, findings.CodeArchiverNotConfigured, "archive_command is set now")
}

// A standby with hot_standby_feedback on, where a report holds a snapshot:
// the primary's horizon finding names the standby by its application_name
// and address and, through STANDBY_URLS, the pid, query and age of the
// snapshot on the standby that holds it.
func TestStandbyFeedbackTracedToTheStandbyQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, nil)
	standby := testdb.Standby(t, primary, map[string]string{"hot_standby_feedback": "on"}, "replica-reports")
	th := lowThresholds()
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: th, StandbyURLs: []string{standby.URL("postgres")}})

	report := connect(t, standby.URL("postgres"), "monthly-report")
	_, err := report.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	_, err = report.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)
	t.Cleanup(func() { report.Exec(context.Background(), "ROLLBACK") })

	f := awaitFinding(t, d, findings.CodeXminHorizon, 30*time.Second, func(f findings.Finding) bool {
		return f.Subject["holder_kind"] == "standby" && f.Subject["standby_pid"] != nil
	})
	require.Equal(t, "replica-reports", f.Subject["standby"], f.Evidence)
	require.Equal(t, "127.0.0.1", f.Subject["client_addr"], f.Evidence)
	require.Equal(t, pidOf(report), f.Subject["standby_pid"], f.Evidence)
	require.Equal(t, "monthly-report", f.Subject["standby_application_name"])
	require.Contains(t, f.Evidence, "standby replica-reports at 127.0.0.1")
	require.Contains(t, f.Evidence, fmt.Sprintf("pid %d (application \"monthly-report\"", pidOf(report)))
	require.Contains(t, f.Evidence, "SELECT count(*) FROM jobs")
	require.NotNil(t, f.Subject["standby_xact_seconds"])
}

// The same through a physical slot: the standby's feedback lands in the
// slot's xmin, and the slot's holder names the standby using it and the
// query on the standby holding the snapshot.
func TestSlotFeedbackTracedToTheStandbyQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, nil)
	admin := connect(t, primary.URL("postgres"), "setup")
	_, err := admin.Exec(ctx, "SELECT pg_create_physical_replication_slot('replica_slot', true)")
	require.NoError(t, err)
	standby := testdb.Standby(t, primary, map[string]string{"hot_standby_feedback": "on", "primary_slot_name": "replica_slot"}, "replica-slotted")
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: lowThresholds(), StandbyURLs: []string{standby.URL("postgres")}})

	report := connect(t, standby.URL("postgres"), "quarterly-report")
	_, err = report.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	_, err = report.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)
	t.Cleanup(func() { report.Exec(context.Background(), "ROLLBACK") })

	f := awaitFinding(t, d, findings.CodeXminHorizon, 30*time.Second, func(f findings.Finding) bool {
		return f.Subject["holder_kind"] == "slot" && f.Subject["standby_pid"] != nil
	})
	require.Equal(t, "replica_slot", f.Subject["slot_name"])
	require.Equal(t, pidOf(report), f.Subject["standby_pid"], f.Evidence)
	require.Contains(t, f.Evidence, "used by replica-slotted at 127.0.0.1")
	require.Contains(t, f.Evidence, fmt.Sprintf("pid %d (application \"quarterly-report\"", pidOf(report)))
}
