package diagnostics_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// An application that held up the engine's job claims in three short lock
// waits, each too short for a round's blocking tree to catch and recorded
// by the lock-episode recorder, is a finding of the findings round: the
// application, how many times, its statement, and a link to its episodes.
// A fourth application blocked the claims twice only: below the threshold.
func TestRepeatBlockerFindingInTheRound(t *testing.T) {
	testdb.SkipShort(t, "five short waits of the job claims, recorded")
	ctx, url := freshDB(t)
	rec, err := episodes.New(episodes.Config{URL: url, Interval: 100 * time.Millisecond, Name: "rec", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, rec.Start(ctx))
	t.Cleanup(rec.Stop)
	testdb.Eventually(t, 30*time.Second, "the recorder records", func() bool { return rec.Status().Leader })
	pool := testdb.Pool(t, url)
	claimer := connect(t, url, queues.ApplicationName)
	block := func(app string, times int) {
		holder := connect(t, url, app)
		for range times {
			_, err := holder.Exec(ctx, "BEGIN; LOCK TABLE jobs IN SHARE MODE")
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := queues.JobClaim(ctx, claimer, queues.JobClaimParams{Queue: "default", Limit: 1, Owner: "w1", Lease: time.Minute})
				done <- err
			}()
			testdb.WaitBackend(t, pool, queues.ApplicationName, "wait_event_type = 'Lock' AND datname = current_database()")
			time.Sleep(500 * time.Millisecond) // the wait the recorder sees
			_, err = holder.Exec(ctx, "ROLLBACK")
			require.NoError(t, err)
			require.NoError(t, <-done)
		}
	}
	block("nightly-report", 3)
	block("ad-hoc", 2)
	testdb.Eventually(t, 30*time.Second, "five closed episodes", func() bool {
		return testdb.Count(t, pool, "SELECT count(*) FROM lock_episodes WHERE end_at IS NOT NULL") >= 5
	})

	d := open(t, url, diagnostics.Config{})
	f, _ := onlyFinding(t, d, findings.CodeRepeatBlocker, "one application blocked the claims three times")
	require.Equal(t, "nightly-report", f.Subject["application"])
	require.Equal(t, 3, f.Subject["episodes"])
	require.Equal(t, 3, f.Subject["claims_delayed"])
	require.Equal(t, []string{"BEGIN; LOCK TABLE jobs IN SHARE MODE"}, f.Subject["statements"])
	require.Equal(t, "/lock-episodes?application=nightly-report&since=1h", f.Subject["episodes_url"])
	require.Contains(t, f.Title, `"nightly-report" blocked the job claims 3 times in the last hour`)
	require.Contains(t, f.Evidence, diagnostics.CheckRepeatBlockers)
	require.Contains(t, f.Evidence, `"BEGIN; LOCK TABLE jobs IN SHARE MODE"`)
	require.Equal(t, diagnostics.RunbookURL(diagnostics.StepBlocking), f.Runbook)
}
