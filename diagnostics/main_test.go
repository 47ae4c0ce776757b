package diagnostics_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// freshDB starts a test on a database of its own: it marks t parallel and
// returns the context the test's statements run in and the URL of a fresh
// database, dropped at cleanup.
func freshDB(t *testing.T) (context.Context, string) {
	t.Helper()
	t.Parallel()
	return context.Background(), testdb.URL(t)
}

// open returns a Diagnostics on url with t's thresholds, closed at cleanup.
// It connects on demand (Config.OnDemand): most tests run a few checks, and
// a connection costs the test server a process.
func open(t *testing.T, url string, cfg diagnostics.Config) *diagnostics.Diagnostics {
	t.Helper()
	cfg.OnDemand = true
	d, err := diagnostics.Open(context.Background(), url, cfg)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

// freshPool is freshDB with a pool on the fresh database, closed at cleanup.
func freshPool(t *testing.T) (context.Context, string, *pgxpool.Pool) {
	t.Helper()
	ctx, url := freshDB(t)
	return ctx, url, testdb.Pool(t, url)
}

// withSettings returns the settings of the test servers with extra set over
// them, for a dedicated server (testdb.NewServer) or a standby.
func withSettings(extra map[string]string) map[string]string {
	settings := maps.Clone(testdb.ServerSettings)
	maps.Copy(settings, extra)
	return settings
}

// connect opens a plain session (not hidden by the console's filters) named
// app, closed at cleanup.
func connect(t *testing.T, url, app string) *pgx.Conn { return testdb.Connect(t, url, app) }

// prepareTransaction leaves on url a prepared transaction that inserted a
// job, with a gid starting with prefix, and returns the gid. It is rolled
// back at cleanup; called after testdb.URL, that runs before the database
// is dropped.
func prepareTransaction(t *testing.T, url, prefix string) string {
	t.Helper()
	ctx := context.Background()
	gid := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	preparer := connect(t, url, prefix)
	_, err := preparer.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = preparer.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('2pc', 'k')")
	require.NoError(t, err)
	_, err = preparer.Exec(ctx, "PREPARE TRANSACTION '"+gid+"'")
	require.NoError(t, err)
	t.Cleanup(func() { preparer.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'") })
	return gid
}

func pidOf(c *pgx.Conn) int32 { return int32(c.PgConn().PID()) }

// eventually polls cond every 100ms until it returns true or the deadline
// passes, then fails with the last message cond gave.
func eventually(t *testing.T, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	msg := ""
	for i := 0; ; i++ {
		ok, m := cond()
		if ok {
			return
		}
		msg = m
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s (%d tries): %s", within, i+1, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// findingsWith returns the findings of code in rep.
func findingsWith(rep findings.Report, code string) []findings.Finding {
	var out []findings.Finding
	for _, f := range rep.Findings {
		if f.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// onlyFinding runs a findings round on d and returns its one finding of
// code, with the report; the test fails unless there is exactly one.
func onlyFinding(t *testing.T, d *diagnostics.Diagnostics, code, why string) (findings.Finding, findings.Report) {
	t.Helper()
	rep, err := findings.Run(context.Background(), d)
	require.NoError(t, err)
	fs := findingsWith(rep, code)
	require.Len(t, fs, 1, "%s: %v", why, codes(rep))
	return fs[0], rep
}

// findingFor returns the finding of code whose subject[key] prints as value.
func findingFor(rep findings.Report, code, key string, value any) (findings.Finding, bool) {
	for _, f := range findingsWith(rep, code) {
		if fmt.Sprint(f.Subject[key]) == fmt.Sprint(value) {
			return f, true
		}
	}
	return findings.Finding{}, false
}

func codes(rep findings.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Code+" "+fmt.Sprint(f.Subject))
	}
	return out
}

// lowThresholds fire on anything the tests set up.
func lowThresholds() *diagnostics.Thresholds {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 0
	th.IdleInTransaction = 0
	th.LongRunningTx = time.Hour
	th.QueueBacklogAge = time.Minute
	th.DeadLetters = 10
	th.OutboxBacklogAge = time.Minute
	th.PreparedXactAge = time.Millisecond
	th.XminHorizonAge = time.Millisecond
	th.XminHorizonXIDs = 0
	return &th
}

func fmtInt(n int64) string { return fmt.Sprint(n) }
