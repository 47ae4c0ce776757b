package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
)

// TestBrowserMainPages opens every main page in headless Chromium as an
// admin, waits for its panels to load on their own, checks none shows an
// error, and writes a screenshot of each to the test output folder.
func TestBrowserMainPages(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		 SELECT 'emails', 'send', 'dead', 'smtp.timeout', 'dial tcp: i/o timeout', now(), 8 FROM generate_series(1, 12)`,
		`INSERT INTO jobs (queue, kind) SELECT 'emails', 'send' FROM generate_series(1, 30)`,
		`INSERT INTO workers (id, host, pid, queues, concurrency, in_flight) VALUES ('w1', 'host-a', 4242, '{emails}', 8, 3)`,
		`INSERT INTO outbox_events (topic, event_type, payload) SELECT 'orders', 'created', '{}' FROM generate_series(1, 5)`,
		`INSERT INTO schedules (name, spec, kind, queue, next_run_at) VALUES ('archive-nightly', '0 3 * * *', 'archive_jobs', 'maintenance', now() + interval '1 hour')`,
	} {
		_, err := e.srv.cfg.Pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	b := browser.New(t, 180*time.Second)
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/login"),
		chromedp.SendKeys(css(`#name`), "admin"),
		chromedp.SendKeys(css(`#password`), testPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="findings"]`)),
	)
	pages := map[string]string{
		"/": "findings", "/runbook": "runbook-steps", "/runbook/queues": "runbook-step-queues",
		"/runbook/rb-g": "runbook-rb-g", "/incidents": "incident-open-form", "/queues": "", "/jobs": "",
		"/deadletters": "", "/outbox": "", "/workers": "", "/schedules": "", "/audit": "", "/actions": "actions",
		"/actions/deadletters.requeue?queue=emails&error_class=smtp.timeout": "action-form-edit",
		"/database/activity": "database-activity", "/database/replication": "database-replication",
		"/database/maintenance": "database-maintenance",
	}
	for path, testid := range pages {
		browser.Do(t, b, chromedp.Navigate(e.http.URL+path), chromedp.WaitVisible(css(`main`)))
		if testid != "" {
			browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="`+testid+`"]`)))
		}
		// Panels load on their own; wait until every placeholder is gone.
		browser.Get(t, b, chromedp.Poll[bool](`document.querySelectorAll('[data-testid^="slot-"]').length === 0`))
		errs := browser.Get(t, b, chromedp.Evaluate[int](
			`document.querySelectorAll('[data-testid="error"], [data-testid="panel-error"], [data-testid="panel-timeout"]').length`))
		require.Zero(t, errs, "%s shows an error", path)
		name := strings.Trim(strings.NewReplacer("/", "-", "?", "-", "&", "-", "=", "-").Replace(path), "-")
		if name == "" {
			name = "overview"
		}
		browser.Screenshot(t, b, "page-"+name)
	}
}
