package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserRiverDiscardBurst walks a River incident in headless
// Chromium, as an operator: four jobs of one class discarded by River's
// client are a discard burst on the overview; the finding links the
// queue's dead letters, whose row retries the class; the retry is
// previewed, executed with a reason through River's client, and the audit
// page names the four jobs, which River made available again (read in
// river_job); the queue's page at the burst's recorded moment still shows
// them discarded. Screenshots of each step at 1440 and 390 px.
func TestBrowserRiverDiscardBurst(t *testing.T) {
	testdb.SkipShort(t, "a browser test with a River client working jobs")
	ctx := t.Context()
	e, client := riverSetupClient(t)
	// No client fetches the default queue from now on, so the retried
	// jobs stay available for the check at the end.
	require.NoError(t, client.Stop(ctx))
	d := e.srv.cfg.Diagnostics
	th := d.Thresholds()
	th.DeadLetters = 4
	d.SetThresholds(th)
	d.SetRiver(true)
	discarded := testdb.Count(t, e.owner, "SELECT count(*) FROM river_job WHERE kind = 'fail' AND state = 'discarded'")
	require.Equal(t, 4, discarded)
	// The flight recorder keeps the burst's moment.
	rec := recorder.New(d, e.srv.cfg.Pool, recorder.Config{Interval: time.Millisecond, Name: "test-console"})
	e.srv.cfg.Recorder = rec
	burstSample := sampler.New(d, sampler.Config{Interval: time.Hour}).SampleNow(ctx)
	require.NoError(t, rec.Record(ctx, burstSample))

	b := browser.New(t, 240*time.Second)
	text := func(sel string) string { return browser.Get(t, b, chromedp.Text(css(sel))) }
	shots := func(name string) {
		for _, w := range []int64{1440, 390} {
			browser.Do(t, b, chromedp.EmulateViewport(w, 900))
			browser.Screenshot(t, b, fmt.Sprintf("river-incident-%s-%d", name, w))
		}
		browser.Do(t, b, chromedp.EmulateViewport(1440, 900))
	}
	signIn(t, b, e.http.URL, "operator")

	// The overview: the burst is a finding that names the queue, kind and class.
	require.Contains(t, text(`[data-testid="findings"]`), findings.CodeRiverDiscardBurst)
	require.Contains(t, text(`[data-testid="findings"]`), "River queue default: 4 fail jobs discarded with `ship order ?: carrier timeout`")
	require.Contains(t, text(`[data-testid="tile-river-discarded"]`), "5", "the tile counts River's discarded jobs")
	shots("1-overview")

	// The finding leads to the queue's dead letters.
	browser.Do(t, b,
		chromedp.Click(css(`[data-testid="findings"] a[data-testid="finding-evidence-link"][href="/deadletters?queue=default"]`)),
		chromedp.WaitVisible(css(`[data-testid="deadletters"]`)),
	)
	groups := text(`#source-live`)
	require.Contains(t, groups, "ship order ?: carrier timeout")
	require.Contains(t, groups, "Retry these 4…")
	shots("2-deadletters")

	// Retry the class: the form comes filled in, the preview names the jobs.
	browser.Do(t, b,
		chromedp.Click(css(`#source-live a[href*="river.retry"][href*="carrier"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)),
		chromedp.Click(css(`[data-testid="action-preview-button"]`)),
		chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
	)
	require.Contains(t, text(`[data-testid="preview-summary"]`), "Retry 4 River jobs through River's client (queue default, class ship order ?: carrier timeout); cap 1,000")
	shots("3-preview")
	browser.Do(t, b, executeWith("the carrier answers again", "action-done")...)
	result := text(`[data-testid="result-summary"]`)
	shots("4-done")

	// River made each job available again, through its own client.
	available := testdb.Count(t, e.owner, "SELECT count(*) FROM river_job WHERE kind = 'fail' AND state = 'available'")
	require.Equal(t, 4, available, "River made the four discarded jobs available: %s", result)
	var names []string
	rows, err := e.owner.Query(ctx, "SELECT id::text FROM river_job WHERE kind = 'fail' ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		names = append(names, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, names, 4)

	// The audit page: the retry, its reason and the four jobs.
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/audit"),
		chromedp.WaitVisible(css(`[data-testid="audit-events"]`)),
		chromedp.Click(css(`[data-testid="audit-row"]:first-child [data-testid="audit-result"] summary`)),
	)
	row := text(`[data-testid="audit-row"]:first-child`)
	require.Contains(t, row, "river.retry")
	require.Contains(t, row, "the carrier answers again")
	for _, id := range names {
		require.True(t, strings.Contains(row, `"id": `+id), "the audit row names job %s: %s", id, row)
	}
	shots("5-audit")

	// The queue's page at the burst's moment still shows the five
	// discarded jobs; live, one is left.
	discardedFact := `[...document.querySelectorAll('[data-testid="source-facts"] dt')].find(d => d.textContent === "discarded").nextElementSibling.textContent.trim()`
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/queues/default"), chromedp.WaitVisible(css(`[data-testid="source-facts"]`)))
	require.Equal(t, "1", browser.Get(t, b, chromedp.Evaluate[string](discardedFact)))
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/queues/default?at="+url.QueryEscape(burstSample.At.Format(time.RFC3339Nano))),
		chromedp.WaitVisible(css(`[data-testid="history-mark"]`)),
	)
	require.Equal(t, "5", browser.Get(t, b, chromedp.Evaluate[string](discardedFact)))
	shots("6-queue-at-the-burst")
}
