package diagnostics_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// Every query of the catalog runs on this server (15 or 18) without error,
// with results checked where the test set up a condition: a COPY in
// progress, an invalid index, dead tuples, queue rows.
func TestCatalogRunsOnThisServer(t *testing.T) {
	ctx, url, db := freshPool(t)
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind) SELECT 'cat-q', 'k' FROM generate_series(1, 100)`,
		`CREATE TABLE dup (x int)`,
		`INSERT INTO dup VALUES (1), (1)`,
		// Dead rows that stay dead: autovacuum is off for the table, and
		// its one page is far from full, so no reader prunes it either
		// (either would take n_dead_tup back to zero before the finding
		// is seen; autovacuum did, once, on a busy CI server).
		`CREATE TABLE churn (id int) WITH (autovacuum_enabled = false)`,
		`INSERT INTO churn SELECT generate_series(1, 60)`,
		`DELETE FROM churn`,
	} {
		_, err := db.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	_, err := db.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY dup_x_idx ON dup (x)`)
	require.Error(t, err, "the duplicate makes the concurrent build fail and leaves an invalid index")
	// Closing the sessions flushes their statistics (dead tuples) now
	// rather than at the next idle timeout.
	db.Reset()

	// A COPY that stays open: the pipe is fed a few rows and left open.
	copier := connect(t, url, "bulk-loader")
	pr, pw := io.Pipe()
	copyDone := make(chan error, 1)
	copyExited := make(chan struct{})
	go func() {
		defer close(copyExited)
		_, err := copier.PgConn().CopyFrom(ctx, pr, "COPY jobs (queue, kind) FROM STDIN")
		copyDone <- err
	}()
	// A failure before the pipe is closed below leaves the COPY running; a
	// connection is not safe for concurrent use, so the COPY must end
	// before connect's cleanup closes the connection (both would close it,
	// and pgconn panics with "close of closed channel"). Cleanups run last
	// registered first: this one aborts the COPY and waits for it first.
	t.Cleanup(func() {
		pw.CloseWithError(errors.New("the test ended before the COPY"))
		<-copyExited
	})
	_, err = pw.Write([]byte(strings.Repeat("copy-q\tk\n", 500)))
	require.NoError(t, err)

	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	info, err := d.ServerInfo(ctx)
	require.NoError(t, err)
	require.True(t, info.HasPgStatStatements, "the test databases have pg_stat_statements")
	t.Logf("PostgreSQL %s (%d)", info.Version, info.VersionNum)

	eventually(t, 10*time.Second, func() (bool, string) {
		r := d.CopyProgress(ctx)
		for _, c := range r.Rows {
			if c.PID == pidOf(copier) && c.TuplesProcessed > 0 {
				require.Equal(t, "jobs", c.Relation)
				require.Equal(t, "COPY FROM", c.Command)
				if info.VersionNum >= 170000 {
					require.NotNil(t, c.TuplesSkipped, "tuples_skipped is 17+")
				} else {
					require.Nil(t, c.TuplesSkipped)
				}
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %+v", r.Status(), r.Rows)
	})

	results := d.RunCatalog(ctx)
	names := map[string]diagnostics.PanelResult{}
	for _, r := range results {
		names[r.Name] = r
		if r.Name == "io_stats" && info.VersionNum < 160000 {
			require.ErrorIs(t, r.Err, diagnostics.ErrUnsupported)
			require.Contains(t, r.Status(), "not available")
			continue
		}
		require.NotEmpty(t, r.SQL, r.Name)
		require.True(t, strings.HasPrefix(r.SQL, "--"), "%s has a header comment", r.Name)
		require.NoError(t, r.Err, "%s: %s", r.Name, r.Status())
		require.False(t, r.TimedOut)
	}
	for _, name := range diagnostics.QueryNames() {
		if name == "standby_status" {
			name = "standby_status self"
		}
		require.Contains(t, names, name, "every catalog query ran")
	}
	if info.VersionNum >= 160000 {
		require.NotEmpty(t, names["io_stats"].Rows)
	}
	require.Len(t, names["wal_stats"].Rows, 1)
	require.Len(t, names["checkpointer"].Rows, 1)
	st := names["standby_status self"].Rows[0].(diagnostics.StandbyState)
	require.False(t, st.InRecovery, "the test server is a primary")

	inv := names["invalid_indexes"].Rows
	require.Len(t, inv, 1)
	require.Equal(t, "dup_x_idx", inv[0].(diagnostics.InvalidIndex).Index)

	var cat diagnostics.QueueStat
	for _, r := range names["queue_health"].Rows {
		if q := r.(diagnostics.QueueStat); q.Queue == "cat-q" {
			cat = q
		}
	}
	require.EqualValues(t, 100, cat.Ready)

	stmts := names["statements_top"].Rows
	require.NotEmpty(t, stmts, "pg_stat_statements saw the seeding statements")

	// Activity shows the COPY and hides this console's own backends, by
	// pid (other tests' consoles on the same server are other processes'
	// as far as this one can tell, and are shown).
	own := d.OwnPIDs()
	require.NotEmpty(t, own)
	for _, r := range names["activity"].Rows {
		b := r.(diagnostics.Backend)
		require.NotContains(t, own, b.PID, "own backend %d shown", b.PID)
	}
	found := false
	for _, r := range names["activity"].Rows {
		found = found || r.(diagnostics.Backend).PID == pidOf(copier)
	}
	require.True(t, found, "the COPY backend is active")

	require.NoError(t, pw.Close())
	require.NoError(t, <-copyDone)

	// Findings from the same database: the invalid index, and dead tuples
	// once the statistics arrive.
	th := lowThresholds()
	th.DeadTuples = 50
	d.SetThresholds(*th)
	eventually(t, 20*time.Second, func() (bool, string) {
		rep, err := findings.Run(ctx, d)
		require.NoError(t, err)
		_, okIdx := findingFor(rep, findings.CodeIndexInvalid, "index", "public.dup_x_idx")
		_, okDead := findingFor(rep, findings.CodeDeadTuples, "table", "public.churn")
		return okIdx && okDead, fmt.Sprint(codes(rep))
	})
}

// Each query name has its SQL, version variants resolve, and too-old
// servers get ErrUnsupported.
func TestSQLVariants(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version int
		want    string
	}{
		{"wal_stats", 150000, "wal_write_time"},
		{"wal_stats", 180000, "moved write/sync"},
		{"io_stats", 160000, "op_bytes"},
		{"io_stats", 180004, "read_bytes, 0"},
		{"checkpointer", 160000, "pg_stat_bgwriter"},
		{"checkpointer", 170000, "pg_stat_checkpointer"},
		{"copy_progress", 170000, "p.tuples_skipped"},
		{"replication_slots", 150000, "NULL::timestamptz"},
		{"replication_slots", 180000, "s.inactive_since"},
	} {
		s, ok := diagnostics.SQLFor(tc.name, tc.version)
		require.True(t, ok, tc.name)
		require.Contains(t, s, tc.want, "%s on %d", tc.name, tc.version)
	}
	_, ok := diagnostics.SQLFor("io_stats", 150000)
	require.False(t, ok)
	_, ok = diagnostics.SQLFor("nope", 0)
	require.False(t, ok)
	require.True(t, errors.Is(fmt.Errorf("x: %w", diagnostics.ErrUnsupported), diagnostics.ErrUnsupported))
}
