package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserOperatorFlows walks the mission's other verbs in headless
// Chromium, each through its preview and confirmation, and checks the
// database and the audit trail: requeue the dead letters of one error
// class, pause and throttle a queue, create an archive schedule and run it
// now.
func TestBrowserOperatorFlows(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		 SELECT 'emails', 'send', 'dead', 'smtp.timeout', 'dial tcp: i/o timeout', now(), 8 FROM generate_series(1, 7)`,
		`INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		 SELECT 'emails', 'send', 'dead', 'template.missing', 'no template welcome', now(), 8 FROM generate_series(1, 4)`,
	} {
		e.exec(t, q)
	}
	b := browser.New(t, 180*time.Second)
	shot := func(name string) { browser.Screenshot(t, b, "ops-"+name) }
	signIn(t, b, e.http.URL, "operator")
	// confirm previews the open action form, gives the reason and executes.
	confirm := func(reason string) {
		browser.Do(t, b,
			chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)),
			chromedp.Click(css(`[data-testid="action-preview-button"]`)),
			chromedp.WaitVisible(css(`[data-testid="action-preview"]`)),
		)
		browser.Do(t, b, executeWith(reason, "action-done")...)
	}

	// Requeue one error class from the dead-letters page.
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/deadletters"),
		chromedp.Click(css(`a[data-testid="action-deadletters.requeue"][href*="error_class=smtp.timeout"]`)),
	)
	confirm("SMTP relay fixed at 14:02; requeue the timeouts only")
	shot("requeue-done")
	require.Equal(t, 7, e.queryInt(t, `SELECT count(*) FROM jobs WHERE error_class = 'smtp.timeout' AND status = 'ready'`))
	require.Equal(t, 4, e.queryInt(t, `SELECT count(*) FROM jobs WHERE error_class = 'template.missing' AND status = 'dead'`),
		"the other class stays dead")
	followTo(t, b, `[data-testid="audit-link"]`, `main`)
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`main`))), "deadletters.requeue")

	// Pause, then throttle, the queue from the queues page.
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/queues"),
		chromedp.Click(css(`a[data-testid="action-queue.pause"][href*="queue=emails"]`)),
	)
	confirm("downstream SMTP overloaded")
	require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM queue_settings WHERE queue = 'emails' AND paused`))
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/queues"),
		chromedp.Click(css(`a[data-testid="action-queue.throttle"][href*="queue=emails"]`)),
		chromedp.WaitVisible(css(`#p-max_workers`)),
		chromedp.SendKeys(css(`#p-max_workers`), "2"),
	)
	confirm("let two senders through while the provider recovers")
	// The result keeps measuring the fleet: the workers panel loads live.
	browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="panel-workers"]`)))
	shot("throttle-done")
	require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM queue_settings WHERE queue = 'emails' AND max_workers = 2`))

	// Create an archive schedule, then run it now from the schedules page.
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/actions/schedule.create"),
		chromedp.WaitVisible(css(`#p-name`)),
		chromedp.SendKeys(css(`#p-name`), "archive-nightly"),
		chromedp.SendKeys(css(`#p-spec`), "0 3 * * *"),
		chromedp.SetValue(css(`#p-kind`), "archive_jobs"),
	)
	confirm("keep the jobs table small")
	require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM schedules WHERE name = 'archive-nightly' AND kind = 'archive_jobs' AND enabled`))
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/schedules"),
		chromedp.Click(css(`a[data-testid="action-schedule.run_now"][href*="archive-nightly"]`)),
	)
	confirm("archive before the migration tonight")
	shot("run-now-done")
	require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM jobs WHERE kind = 'archive_jobs'`), "run now enqueued one archive job")
	require.Equal(t, 5, e.queryInt(t, `SELECT count(*) FROM audit_events WHERE outcome = 'succeeded' AND action IN
		('deadletters.requeue', 'queue.pause', 'queue.throttle', 'schedule.create', 'schedule.run_now')`))
}
