package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/testdb"
)

// The checks that scan the whole catalog run on the slow clock: a shared
// round within SlowInterval of their last read reuses it (the server is not
// asked again, even for an index that went invalid meanwhile), says how old
// it is, and the sampler takes its table statistics from there too. Once
// the interval is over, the next rounds read them again.
func TestSlowChecksReuseTheirLastRead(t *testing.T) {
	ctx, dbURL := freshDB(t)
	clock := newFakeClock()
	d := open(t, dbURL, diagnostics.Config{NowFunc: clock.Now, RoundMaxAge: time.Second, SlowInterval: 2 * time.Minute})
	require.Equal(t, []string{diagnostics.CheckTableVacuum, diagnostics.CheckInvalidIndexes,
		diagnostics.CheckSequenceUse, diagnostics.CheckWraparound, diagnostics.CheckRepeatBlockers}, diagnostics.SlowChecks())

	first, err := d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, first.At, first.SlowAt, "the first round waits for the first read")
	require.Empty(t, first.Invalid)
	read := d.Cost()[diagnostics.CheckInvalidIndexes].Statements
	require.Positive(t, read)

	// A failed CREATE UNIQUE INDEX CONCURRENTLY leaves its index invalid.
	conn := connect(t, dbURL, "slow-clock")
	_, err = conn.Exec(ctx, "CREATE TABLE dup (x int); INSERT INTO dup VALUES (1), (1)")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE UNIQUE INDEX CONCURRENTLY dup_x_idx ON dup (x)")
	require.Error(t, err)

	clock.Advance(30 * time.Second)
	r, err := d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.True(t, r.At.After(first.At), "a new fast round")
	require.Empty(t, r.Invalid, "the slow check's last read is reused within its interval")
	require.Equal(t, first.SlowAt, r.SlowAt)
	require.Equal(t, 30*time.Second, r.SlowAge())
	require.Equal(t, read, d.Cost()[diagnostics.CheckInvalidIndexes].Statements, "invalid_indexes was not asked again")
	rep := findings.NewReport(r, d.Thresholds())
	require.Equal(t, first.SlowAt, rep.SlowChecksAt)
	require.NotNil(t, rep.SlowChecksAgeSeconds)
	require.InDelta(t, 30, *rep.SlowChecksAgeSeconds, 0.001)

	tables := d.Cost()[diagnostics.CheckTableVacuum].Statements
	s := sampler.New(d, sampler.Config{Interval: time.Hour, Size: 4})
	smp := s.SampleNow(ctx)
	require.NotEmpty(t, smp.Tables, "the sample has the slow clock's table statistics")
	require.Equal(t, tables, d.Cost()[diagnostics.CheckTableVacuum].Statements, "the sampler did not read table_vacuum itself")

	clock.Advance(2 * time.Minute)
	testdb.Eventually(t, 30*time.Second, "a round with the slow checks read again", func() bool {
		clock.Advance(time.Second)
		r, err = d.LatestRound(context.Background(), 0)
		return err == nil && r.SlowAt.After(first.SlowAt)
	})
	require.Len(t, r.Invalid, 1)
	require.Equal(t, "dup_x_idx", r.Invalid[0].Index)
}

// A panel older than PanelMaxAge is served at once, with its age, while the
// next read runs for the callers after it: no viewer waits for a query but
// the first.
func TestPanelServesItsLastResultWhileItRereads(t *testing.T) {
	ctx, dbURL := freshDB(t)
	clock := newFakeClock()
	d := open(t, dbURL, diagnostics.Config{NowFunc: clock.Now, PanelMaxAge: 5 * time.Second})
	first, ok := d.Panel(ctx, diagnostics.CheckActivity)
	require.True(t, ok)
	require.NoError(t, first.Err)

	clock.Advance(6 * time.Second)
	stale, _ := d.Panel(ctx, diagnostics.CheckActivity)
	require.Equal(t, first.At, stale.At, "the last result is served while the next read runs")
	testdb.Eventually(t, 30*time.Second, "the next read to be served", func() bool {
		r, _ := d.Panel(ctx, diagnostics.CheckActivity)
		return r.At.After(first.At)
	})
}

// While someone watches (a shared round at most PanelMaxAge old), the
// sampler takes the lock storm's costly gauges (the waiting backends, the
// oldest transaction, the prepared transactions) from that round instead
// of reading the tree and the activity again; with no fresh round it reads
// them itself.
func TestSamplerTakesGaugesFromAFreshRound(t *testing.T) {
	ctx, dbURL := freshDB(t)
	clock := newFakeClock()
	d := open(t, dbURL, diagnostics.Config{NowFunc: clock.Now, RoundMaxAge: time.Second, PanelMaxAge: 5 * time.Second})
	holder := connect(t, dbURL, "gauge-holder")
	for _, q := range []string{"CREATE TABLE gauge_row (id int PRIMARY KEY)", "INSERT INTO gauge_row VALUES (1)", "BEGIN", "SELECT * FROM gauge_row FOR UPDATE"} {
		_, err := holder.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	waiter := connect(t, dbURL, "gauge-waiter")
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(context.Background(), "UPDATE gauge_row SET id = id WHERE id = 1")
		done <- err
	}()
	t.Cleanup(func() { _, _ = holder.Exec(context.Background(), "ROLLBACK"); <-done })
	eventually(t, 15*time.Second, func() (bool, string) {
		clock.Advance(2 * time.Second) // past RoundMaxAge: a round of its own
		r, err := d.LatestRound(ctx, time.Second)
		return err == nil && len(r.Blocking) == 2, fmt.Sprintf("tree %+v (%v) %+v", r.Blocking, err, r.Unavailable)
	})

	costly := []string{diagnostics.CheckBlockingTree, diagnostics.CheckActivity, diagnostics.CheckPreparedXacts}
	statements := func() map[string]int64 {
		out := map[string]int64{}
		for _, name := range costly {
			out[name] = d.Cost()[name].Statements
		}
		return out
	}
	clock.Advance(4 * time.Second) // the round is 4 s old: fresh
	before := statements()
	smp := d.TakeSample(ctx)
	require.Equal(t, before, statements(), "the sampler read what the round had just read")
	require.NotNil(t, smp.Blocked)
	require.Equal(t, 1, *smp.Blocked, "the waiter, from the round's tree")
	require.NotNil(t, smp.OldestXactSeconds)
	require.NotNil(t, smp.PreparedXacts)
	require.NotNil(t, smp.WAL, "what the round has no gauge of is read")

	clock.Advance(2 * time.Second) // 6 s: older than PanelMaxAge
	smp = d.TakeSample(ctx)
	after := statements()
	for _, name := range costly {
		require.Equal(t, before[name]+1, after[name], "%s is read by the sampler once no round is fresh", name)
	}
	// The tree is the server's, not this database's: another test's
	// session still waiting elsewhere counts too.
	require.GreaterOrEqual(t, *smp.Blocked, 1, "the waiter, from the sampler's own read")
}
