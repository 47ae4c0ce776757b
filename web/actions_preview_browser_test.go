package web

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserPreviewThenExecute walks the action flow in headless Chromium
// and checks the database after each step: a requeue previewed and
// executed; a pause whose state another session changes between preview
// and execute (the console shows the new preview and does nothing); a bulk
// retry chosen with the jobs list's checkboxes; a bad jobs filter value
// kept in its box with its message; a schedule made with New schedule and
// run now, its result linking to the job it enqueued.
func TestBrowserPreviewThenExecute(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	ctx := context.Background()
	db := e.srv.cfg.Pool
	e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'email', 'send', 'dead', 'timeout', 'dial tcp: i/o timeout', now(), 8 FROM generate_series(1, 27)`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'email', 'send', 'dead', 'template.missing', 'no template', now(), 8 FROM generate_series(1, 3)`)

	b := browser.New(t, 240*time.Second)
	shot := func(name string) { browser.Screenshot(t, b, "preview-"+name) }
	text := func(sel string) string { return browser.Get(t, b, chromedp.Text(css(sel))) }
	signIn(t, b, e.http.URL, "operator")

	t.Run("RequeueOneClass", func(t *testing.T) {
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/actions/deadletters.requeue"),
			chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)),
		)
		// Queues and classes are choices, with what they hold.
		require.Contains(t, text(`#p-queue`), "email — 30 dead")
		require.Contains(t, text(`#p-error_class`), "timeout — 27 dead")
		browser.Do(t, b,
			chromedp.SetValue(css(`#p-queue`), "email"),
			chromedp.SetValue(css(`#p-error_class`), "timeout"),
			chromedp.Click(css(`[data-testid="action-preview-button"]`)),
			chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
		)
		require.Equal(t, "Requeue 27 dead jobs of class timeout in queue email; cap 10,000", text(`[data-testid="preview-summary"]`))
		require.False(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('[data-testid="preview-details"]').open`)),
			"the details are behind a disclosure")
		// Under the preview the filter is read-only: no box to edit.
		require.Zero(t, browser.Get(t, b, chromedp.Evaluate[int](
			`document.querySelectorAll('[data-testid="action-form-preview"] select, [data-testid="action-form-preview"] input:not([type=hidden]):not([type=checkbox])').length`)))
		require.Equal(t, "email", text(`[data-testid="locked-queue"]`)[:5])
		shot("requeue")
		browser.Do(t, b, executeWith("SMTP relay fixed at 14:02", "result-summary")...)
		require.Equal(t, "Requeued 27 dead jobs of class timeout in queue email", text(`[data-testid="result-summary"]`))
		shot("requeue-done")
		require.Equal(t, 27, e.queryInt(t, `SELECT count(*) FROM jobs WHERE error_class = 'timeout' AND status = 'ready'`))
		require.Equal(t, 3, e.queryInt(t, `SELECT count(*) FROM jobs WHERE error_class = 'template.missing' AND status = 'dead'`))
	})

	t.Run("StateChangedInAnotherSession", func(t *testing.T) {
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/actions/queue.pause?queue=email"),
			chromedp.WaitVisible(css(`[data-testid="action-current"]`)),
		)
		require.Equal(t, "Queue email now: running, max workers no limit, rate no limit", text(`[data-testid="action-current"]`))
		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="action-preview-button"]`)),
			chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
			chromedp.SendKeys(css(`[data-testid="reason"]`), "provider overloaded"),
		)
		require.Contains(t, text(`[data-testid="preview-summary"]`), "Pause queue email: paused")

		// Meanwhile an admin pauses it from another session.
		other := e.signedIn(t, "admin")
		_, _ = other.get("/actions/queue.pause")
		_, body := other.post("/actions/queue.pause/preview", url.Values{"_csrf": {other.csrf}, "p.queue": {"email"}})
		_, body = other.post("/actions/queue.pause", url.Values{"_csrf": {other.csrf}, "p.queue": {"email"},
			"preview": {sealOf(t, body)}, "reason": {"paging says pause"}})
		require.Contains(t, body, `data-testid="action-done"`)

		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="action-execute"]`)),
			chromedp.WaitVisible(css(`[data-testid="action-error"]`)),
		)
		require.Contains(t, text(`[data-testid="action-error"]`), "Nothing was done: what this action would act on changed since your preview")
		require.Contains(t, text(`[data-testid="preview-summary"]`), "no change: it is already paused", "the new preview")
		browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="action-execute"]`)))
		shot("stale")
		require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM audit_events WHERE action = 'queue.pause' AND outcome = 'succeeded'`),
			"only the other session's pause ran")
		var by string
		require.NoError(t, db.QueryRow(ctx, `SELECT updated_by FROM queue_settings WHERE queue = 'email'`).Scan(&by))
		require.Equal(t, "admin", by)
	})

	t.Run("BulkRetryFromJobs", func(t *testing.T) {
		rows, err := db.Query(ctx, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
			SELECT 'bulk', 'resize', 'dead', 'oom', 'killed', now(), 3 FROM generate_series(1, 3) RETURNING id`)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		e.exec(t, `INSERT INTO jobs (queue, kind, status, finished_at) VALUES ('bulk', 'resize', 'done', now())`)

		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/jobs?queue=bulk"),
			chromedp.WaitVisible(css(`[data-testid="job-tabs"]`)),
		)
		require.Equal(t, "Dead 3", text(`[data-testid="job-tab-dead"]`))
		require.Contains(t, text(`#panel-jobs`), "No job matches", "the list opens on running and due jobs: the queue has none")
		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="job-tab-dead"]`)),
			chromedp.WaitVisible(css(`[data-testid="job-tab-dead"][aria-current="page"]`)),
		)
		require.Contains(t, text(`#panel-jobs`), "dead")
		browser.Do(t, b,
			chromedp.Click(css(fmt.Sprintf(`[data-testid="select-%d"]`, ids[0]))),
			chromedp.Click(css(fmt.Sprintf(`[data-testid="select-%d"]`, ids[2]))),
		)
		shot("jobs")
		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="bulk-jobs.retry_now"]`)),
			chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
		)
		require.Equal(t, "Retry 2 jobs in queue bulk: each becomes ready and due now, keeping its history",
			text(`[data-testid="preview-summary"]`))
		shot("bulk")
		browser.Do(t, b, executeWith("the resize workers have memory again", "result-summary")...)
		require.Equal(t, "2 jobs are now ready", text(`[data-testid="result-summary"]`))
		require.Equal(t, 2, e.queryInt(t, `SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'ready'`, []int64{ids[0], ids[2]}))
		require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM jobs WHERE id = $1 AND status = 'dead'`, ids[1]), "the unselected job stays dead")
	})

	t.Run("BadFilterKeepsTheForm", func(t *testing.T) {
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/jobs?queue=bulk&created_from=last+week"),
			chromedp.WaitVisible(css(`[data-testid="filter-error-created_from"]`)),
		)
		require.Contains(t, text(`[data-testid="filter-error-created_from"]`), `created_from "last week" is not a time: type 2026-12-03 10:00`)
		require.Equal(t, "last week", browser.Get(t, b, chromedp.Value(css(`#f-from`))))
		require.Equal(t, "bulk", browser.Get(t, b, chromedp.Value(css(`#f-queue`))))
		shot("jobs-bad-filter")
		browser.Do(t, b,
			chromedp.SetValue(css(`#f-from`), "10m ago"),
			chromedp.Click(css(`[data-testid="job-filter-submit"]`)),
			// The list opens on running and due jobs: the two retried above.
			chromedp.WaitVisible(css(`[data-testid="select-`+fmt.Sprint(e.queryInt(t, `SELECT max(id) FROM jobs WHERE queue = 'bulk' AND status = 'ready'`))+`"]`)),
		)
		require.Zero(t, browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('.field-error').length`)))
	})

	t.Run("ScheduleRunNowLinksItsJob", func(t *testing.T) {
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/schedules"),
			chromedp.Click(css(`[data-testid="schedule-new"]`)),
			chromedp.WaitVisible(css(`#p-name`)),
		)
		require.Equal(t, "maintenance (default)", browser.Get(t, b, chromedp.Evaluate[string](
			`document.querySelector('#p-queue option[value=""]').textContent`)), "the default says what it is")
		browser.Do(t, b,
			chromedp.SendKeys(css(`#p-name`), "archive-nightly"),
			chromedp.SendKeys(css(`#p-spec`), "0 3 * * *"),
			chromedp.SetValue(css(`#p-kind`), "archive_jobs"),
			chromedp.Click(css(`[data-testid="action-preview-button"]`)),
			chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
		)
		browser.Do(t, b, executeWith("keep the jobs table small", "result-summary")...)
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/schedules"),
			chromedp.Click(css(`a[data-testid="action-schedule.run_now"][href*="archive-nightly"]`)),
			chromedp.WaitVisible(css(`[data-testid="action-preview-button"]`)),
			chromedp.Click(css(`[data-testid="action-preview-button"]`)),
			chromedp.WaitVisible(css(`[data-testid="preview-summary"]`)),
		)
		browser.Do(t, b, executeWith("archive before the migration", "result-follow")...)
		jobID := e.queryInt(t, `SELECT id FROM jobs WHERE kind = 'archive_jobs'`)
		shot("run-now-done")
		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="result-follow"]`)),
			chromedp.WaitVisible(css(`[data-testid="job-detail"]`)),
		)
		require.Contains(t, browser.Get(t, b, chromedp.Location()), fmt.Sprintf("/jobs/%d", jobID))
		browser.Do(t, b, chromedp.Navigate(e.http.URL+"/schedules"), chromedp.WaitVisible(css(`[data-testid="schedules"]`)))
		require.Contains(t, text(`#panel-schedules`), fmt.Sprintf("job %d: ready", jobID), "the list shows the last run")
		shot("schedules")
	})
}
