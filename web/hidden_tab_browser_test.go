package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// hideTabJS makes the page see its tab hidden (true) or shown again
// (false), as a browser does when another tab comes to the front, and
// counts the page's fetches of panels from then on.
const hideTabJS = `((hidden) => {
	Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
	Object.defineProperty(document, "visibilityState", { configurable: true, get: () => hidden ? "hidden" : "visible" });
	if (!window.__countingFetches) {
		window.__countingFetches = true;
		window.__panelFetches = 0;
		const f = window.fetch;
		window.fetch = function (u) { if (String(u).indexOf("/panels/") >= 0) window.__panelFetches++; return f.apply(this, arguments); };
	}
	document.dispatchEvent(new Event("visibilitychange"));
	return true;
})`

// TestBrowserHiddenTabDoesNotPoll: a runbook step left open in a tab that
// is not in front asks nothing of the console (and so of the database)
// while it is hidden, and refreshes its panels at once when it is shown.
func TestBrowserHiddenTabDoesNotPoll(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	b := browser.New(t, 120*time.Second)
	signIn(t, b, e.http.URL, "viewer")
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/database/activity"),
		chromedp.WaitVisible(css(`[data-testid="panel-activity"][data-status="ok"]`)),
	)
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](hideTabJS+`(true)`)))
	// Every panel refreshes at least every 10s: 12s hidden covers a turn
	// of each. A page that polls while hidden fetches at least once.
	time.Sleep(12 * time.Second)
	require.Equal(t, 0, browser.Get(t, b, chromedp.Evaluate[int](`window.__panelFetches`)), "a hidden tab polled its panels")

	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](hideTabJS+`(false)`)))
	waitUntil(t, 10*time.Second, "the shown tab to refresh its panels at once", func() bool {
		return browser.Get(t, b, chromedp.Evaluate[int](`window.__panelFetches`)) > 0
	})
}
