package web

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/testdb"
)

// TestWALStatsShowRates: with WAL written between two samples, the WAL
// statistics panel shows WAL bytes, records and full-page images per
// second, the totals since the reset after them; before a second sample it
// says the numbers are totals and when rates appear.
func TestWALStatsShowRates(t *testing.T) {
	t.Parallel()
	e, smp := setupSampledByHand(t)
	ctx := context.Background()
	viewer := e.signedIn(t, "viewer")
	walPanel := func() string { return viewer.page("/panels/wal_stats", "HX-Request", "true") }

	smp.SampleNow(ctx)
	body := walPanel()
	require.Contains(t, body, "These are totals since the counters were last reset, not rates")
	require.NotContains(t, body, "WAL per second")

	_, err := e.owner.Exec(ctx, `CREATE TABLE wal_witness AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	smp.SampleNow(ctx)
	body = walPanel()
	require.NotContains(t, body, "not rates")
	cells := panelCells(body)
	require.Regexp(t, `^[1-9][0-9.]* (KiB|MiB|GiB)/s$`, cells["WAL per second"], "20,000 rows of 200 bytes make at least a KiB of WAL per second: %v", cells)
	// pg_stat_wal lags the WAL position by up to a second (backends flush
	// their counters at most once a second), so these may still be 0.
	require.Regexp(t, `^[0-9][0-9,.]*/s$`, cells["Records per second"])
	require.Regexp(t, `^[0-9][0-9,.]*/s$`, cells["Full-page images per second"])
	require.Regexp(t, `^over \S+, \S+ ago$`, cells["Measured"])
	require.Regexp(t, `(KiB|MiB|GiB)$`, cells["WAL written since reset"], "the total comes after the rates")
	require.Less(t, regexp.MustCompile(`<th[^>]*>WAL per second<`).FindStringIndex(body)[0],
		regexp.MustCompile(`<th[^>]*>WAL written since reset<`).FindStringIndex(body)[0], "rates first, the total after them")
}

// setupSampledByHand is setup with a sampler that never samples by
// itself: the test calls SampleNow, so it knows what the samples hold.
func setupSampledByHand(t *testing.T) (*env, *sampler.Sampler) {
	t.Helper()
	var smp *sampler.Sampler
	e := setupWith(t, setupOpts{configure: func(c *Config) {
		smp = sampler.New(c.Diagnostics, sampler.Config{Interval: time.Hour})
		c.Sampler = smp
	}})
	return e, smp
}

// panelCells maps a one-row panel's column labels to its cell texts.
func panelCells(body string) map[string]string {
	cells := map[string]string{}
	for _, m := range regexp.MustCompile(`data-label="([^"]+)"[^>]*><div class="cv">([^<]*)<`).FindAllStringSubmatch(body, -1) {
		cells[html.UnescapeString(m[1])] = strings.TrimSpace(html.UnescapeString(m[2]))
	}
	return cells
}

// TestCheckpointerShowsRates: the checkpointer panel on the WAL page shows
// checkpoints per minute (all, and requested) between the sampler's two
// newest samples, then the counters since the reset, labelled so.
func TestCheckpointerShowsRates(t *testing.T) {
	t.Parallel()
	e, smp := setupSampledByHand(t)
	ctx := context.Background()
	viewer := e.signedIn(t, "viewer")
	panel := func() string { return viewer.page("/panels/checkpointer", "HX-Request", "true") }

	super := testdb.Pool(t, e.superURL)
	requested := "SELECT pg_stat_get_bgwriter_requested_checkpoints()"
	if testdb.Count(t, super, "SELECT current_setting('server_version_num')::int") >= 170000 {
		requested = "SELECT pg_stat_get_checkpointer_num_requested()"
	}
	smp.SampleNow(ctx)
	require.Contains(t, panel(), "not rates")
	before := testdb.Count(t, super, requested)
	_, err := super.Exec(ctx, "CHECKPOINT") // a superuser's (or pg_checkpoint's) right
	require.NoError(t, err)
	// The checkpointer wakes the CHECKPOINT's caller before it reports
	// the checkpoint to the statistics: sample once the count shows it.
	testdb.Eventually(t, 10*time.Second, "the CHECKPOINT counted as requested", func() bool {
		return testdb.Count(t, super, requested) > before
	})
	smp.SampleNow(ctx)
	body := panel()
	require.NotContains(t, body, "not rates")
	cells := panelCells(body)
	require.Regexp(t, `^[0-9][0-9,.]*/min$`, cells["Checkpoints per minute"], "%v", cells)
	require.NotEqual(t, "0.0/min", cells["Requested per minute"], "the CHECKPOINT between the samples was requested: %v", cells)
	require.Regexp(t, `^[0-9][0-9,.]*/s$`, cells["Buffers allocated per second"])
	require.Regexp(t, `^[0-9][0-9,]*$`, cells["Requested checkpoints since reset"], "the totals come after the rates: %v", cells)
	require.Regexp(t, `^over \S+, \S+ ago$`, cells["Measured"])
}
