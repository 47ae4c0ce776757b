package diagnostics_test

import (
	"context"
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
