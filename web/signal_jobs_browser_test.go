package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserCancelRootNamesTheJobs clicks cancel on a root blocker that is
// a report job's session, from the blocking tree through the preview to the
// result, in headless Chromium: the preview says the job goes dead and the
// two jobs behind it go on, the result says they did; a waiting job's page
// says what it waits on and the root's page what became of it. Screenshots at 1440 and 390 px.
func TestBrowserCancelRootNamesTheJobs(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	root, pid, waiting := workerChain(t, e, 1, 2)
	inc, err := audit.IncidentOpen(context.Background(), e.owner, audit.IncidentOpenParams{Title: "reports stuck", OpenedBy: "olga"})
	require.NoError(t, err)

	b := browser.New(t, 240*time.Second)
	text := func(sel string) string { return browser.Get(t, b, chromedp.Text(css(sel))) }
	shots := func(name string) {
		for _, w := range []int64{390, 1440} {
			browser.Do(t, b, chromedp.EmulateViewport(w, 900))
			browser.Screenshot(t, b, fmt.Sprintf("cancel-root-%s-%d", name, w))
		}
	}
	signIn(t, b, e.http.URL, "operator")
	// A job behind the root says what it waits on, and offers the root's job's cancel first.
	browser.Do(t, b, chromedp.Navigate(e.http.URL+fmt.Sprintf("/jobs/%d", waiting[0])), chromedp.WaitVisible(css(`[data-testid="job-lock-wait"]`)))
	require.Contains(t, text(`[data-testid="job-lock-wait"]`), fmt.Sprintf("Cancel job #%d", root))
	require.Contains(t, text(`[data-testid="job-running"]`), "on worker worker-reports, which heartbeated")
	shots("waiting-job")
	browser.Do(t, b, chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(e.http.URL+"/panels/blocking_tree"),
		chromedp.Click(css(fmt.Sprintf(`a[data-testid="action-backend.cancel"][href*="pid=%d"]`, pid))),
		chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)),
		chromedp.Click(css(`[data-testid="action-preview-button"]`)),
		chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
	)
	summary := text(`[data-testid="preview-summary"]`)
	require.Contains(t, summary, fmt.Sprintf("job #%d (report, queue reports) fails this attempt and goes dead: attempt 1, max attempts 1", root))
	require.Contains(t, summary, fmt.Sprintf("the 2 waiting jobs #%d, #%d go on once the lock is released", waiting[0], waiting[1]))
	shots("preview")

	browser.Do(t, b, executeWith("the report job holds the ledger row", "action-done")...)
	result := text(`[data-testid="result-summary"]`)
	require.Contains(t, result, fmt.Sprintf("job #%d (report, queue reports) went dead: attempt 1 of 1 failed", root))
	require.Contains(t, result, fmt.Sprintf("waiting jobs: #%d, #%d went on", waiting[0], waiting[1]))
	require.Contains(t, text(`[data-testid="action-done"]`), fmt.Sprintf("Capture the after-state into incident #%d", inc.ID))
	shots("result")

	browser.Do(t, b, chromedp.Navigate(e.http.URL+fmt.Sprintf("/jobs/%d", root)), chromedp.WaitVisible(css(`[data-testid="job-detail"]`)))
	require.Contains(t, text(`[data-testid="job-status"]`), "dead")
	shots("job")
}
