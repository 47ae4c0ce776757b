package web

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// The scrubber places each episode and each chain of blocked samples at
// its fraction of the range, clips what overlaps an edge, leaves out what
// falls outside, and draws the moment shown where it falls.
func TestHistoryStripPlacesMarks(t *testing.T) {
	to := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC)
	q := historyQuery{window: "1h", from: to.Add(-time.Hour), to: to, at: to.Add(-15 * time.Minute), strip: "1h", loc: time.UTC}
	ended := func(start time.Time, d time.Duration) *time.Time { end := start.Add(d); return &end }
	mid := to.Add(-30 * time.Minute)
	edge := to.Add(-time.Hour - 10*time.Second)
	old := to.Add(-2 * time.Hour)
	ev := stripEvidence{
		Episodes: []episodes.Episode{
			{ID: 1, Start: mid, End: ended(mid, 36*time.Second), EndSeen: true, WaitedSeconds: 40, RootApplication: "batch-import"},
			{ID: 2, Start: edge, End: ended(edge, 28*time.Second), EndSeen: true, WaitedSeconds: 1},
			{ID: 3, Start: old, End: ended(old, time.Minute), EndSeen: true, WaitedSeconds: 100},
		},
		Moments: []recorder.HistoryMoment{
			{At: to.Add(-45 * time.Minute), Blocked: 5, RootPID: 42},
			{At: to.Add(-3 * time.Hour), Blocked: 50, RootPID: 7},
		},
	}
	s := historyStrip(q, ev)

	require.Len(t, s.Episodes, 2, "the episode two hours back is outside the hour")
	require.Equal(t, "50.00", s.Episodes[0].X, "half way through the hour")
	require.Equal(t, "1.00", s.Episodes[0].W, "36 s of an hour")
	require.Equal(t, "high", s.Episodes[0].Level)
	require.Contains(t, s.Episodes[0].Href, "#episode-1")
	require.Contains(t, s.Episodes[0].Label, "batch-import")
	require.Equal(t, "0.00", s.Episodes[1].X, "an episode that began before the strip starts at its left edge")
	require.Equal(t, "0.50", s.Episodes[1].W, "18 s inside the strip, widened to be seen")

	require.Len(t, s.Samples, 1, "the sample three hours back is outside the hour")
	require.Equal(t, "25.00", s.Samples[0].X)
	require.Equal(t, "mid", s.Samples[0].Level)
	href, err := url.Parse(s.Samples[0].Href)
	require.NoError(t, err)
	require.Equal(t, to.Add(-45*time.Minute).Format(time.RFC3339Nano), href.Query().Get("at"), "a sample opens its moment")

	require.True(t, s.AtShown)
	require.Equal(t, "75.00", s.AtX, "the moment shown, a quarter hour before the end")
	require.Len(t, s.Spans, 2)
	require.True(t, s.Spans[0].Active)
	require.Contains(t, s.Spans[1].Href, "strip=24h")

	q.at = old
	require.False(t, historyStrip(q, ev).AtShown, "a moment outside the strip has no line")
	q.strip = "24h"
	require.Len(t, historyStrip(q, ev).Episodes, 3, "the day holds the older episode")
}

// The history page's scrubber in a browser: a sample's mark, clicked,
// opens that moment; an episode's mark is there too. Screenshots at 1440
// and 390 px, in the light and the dark theme.
func TestBrowserHistoryStrip(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	now := time.Now().UTC().Truncate(time.Second)
	sampled := now.Add(-20 * time.Minute)
	doc, err := json.Marshal(map[string]any{diagnostics.HistoryBlockingTree: []diagnostics.BlockingNode{
		{Kind: "backend", PID: 4242, IsRoot: true, BlockedCount: 12, ApplicationName: "nightly-report", Query: "LOCK TABLE accounts"},
		{Kind: "backend", PID: 4243, Depth: 1, BlockedBy: []int32{4242}, ApplicationName: "billing-api", Query: "UPDATE accounts SET n = n + 1"},
	}})
	require.NoError(t, err)
	e.exec(t, `INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc) VALUES ($1, 'strip-test', 1, $2::jsonb)`, sampled, string(doc))
	e.exec(t, `INSERT INTO lock_episodes (start_at, last_seen_at, end_at, end_seen, recorded_by, root_pid, root_application,
		lock_mode, lock_target, peak_waiting, waited_seconds) VALUES ($1::timestamptz, $1::timestamptz + interval '40 s', $1::timestamptz + interval '41 s', true, 'strip-test', 4242,
		'nightly-report', 'RowExclusiveLock', 'accounts', 12, 300)`, now.Add(-40*time.Minute))

	b := browser.New(t, 180*time.Second)
	signIn(t, b, e.http.URL, "viewer")
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/history"), chromedp.WaitVisible(css(`[data-testid="history-strip"]`)))
	require.Equal(t, 1, browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="history-strip-episode"]').length`)))
	for _, theme := range []string{"light", "dark"} {
		setTheme := fmt.Sprintf(`document.documentElement.dataset.theme = %q; true`, theme)
		browser.Do(t, b, chromedp.EmulateViewport(1440, 900))
		require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](setTheme)))
		browser.Screenshot(t, b, "history-strip-1440-"+theme)
		browser.Do(t, b, chromedp.EmulateViewport(390, 844))
		requireNoPageOverflow(t, b, "the history page with its strip")
		browser.Screenshot(t, b, "history-strip-390-"+theme)
	}

	// Keyboard: the sample's mark is a link the Tab key reaches.
	focusable := browser.Get(t, b, chromedp.Evaluate[bool](`(() => { const a = document.querySelector('[data-testid="history-strip-sample"]'); a.focus(); return document.activeElement === a; })()`))
	require.True(t, focusable, "a mark takes the keyboard's focus")
	browser.Do(t, b, chromedp.EmulateViewport(1440, 900),
		chromedp.Click(css(`[data-testid="history-strip-sample"] rect`)),
		chromedp.WaitVisible(css(`[data-testid="history-banner"]`)))
	u, err := url.Parse(browser.Get(t, b, chromedp.Location()))
	require.NoError(t, err)
	require.Equal(t, sampled.Format(time.RFC3339Nano), u.Query().Get("at"), "the mark opens its moment")
	banner := browser.Get(t, b, chromedp.Text(css(`[data-testid="history-banner"]`)))
	require.Contains(t, banner, sampled.Format(time.RFC3339), "the sample shown is the one marked")
	require.True(t, strings.Contains(browser.Get(t, b, chromedp.Text(css(`[data-testid="history-tree"]`))), "nightly-report"))
	require.Equal(t, 2, browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid^="history-strip-at-"]').length`)),
		"the moment opened is drawn on both lanes")
}
