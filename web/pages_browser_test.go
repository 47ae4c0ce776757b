package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserMainPages opens every main page in headless Chromium as an
// admin, waits for its panels to load on their own, checks none shows an
// error and each shows what the test seeded for it (a job id, the queue, the
// dead-letter class and its error, the worker, the audit row, the incident,
// an application's session, a replication slot, a prepared transaction),
// and writes a screenshot of each to the test output folder. The runbook and
// action catalogue pages show no data; they must show their own content.
func TestBrowserMainPages(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e, smp := setupSampledByHand(t)
	ctx := context.Background()
	db := testdb.Pool(t, e.superURL) // a replication slot, a prepared transaction and CHECKPOINT need a superuser
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		 SELECT 'emails-eu', 'send_receipt', 'dead', 'smtp.timeout', 'dial tcp 10.0.0.7:25: i/o timeout', now(), 8
		 FROM generate_series(1, 12)`,
		`INSERT INTO workers (id, host, pid, queues, concurrency, in_flight)
		 VALUES ('w-seeded-1', 'host-seeded', 4242, '{emails-eu}', 8, 3)`,
		`INSERT INTO workers (id, host, pid, queues, concurrency, last_seen_at, stopped_at, reclaimed_at, reclaimed_jobs)
		 VALUES ('w-seeded-dead', 'host-killed', 4343, '{emails-eu}', 8, now() - interval '3 minutes',
		         now() - interval '2 minutes', now() - interval '2 minutes', 6)`,
		`INSERT INTO outbox_events (topic, event_type, payload) SELECT 'orders', 'created', '{}' FROM generate_series(1, 7)`,
		`INSERT INTO schedules (name, spec, kind, queue, next_run_at)
		 VALUES ('archive-nightly', '0 3 * * *', 'archive_jobs', 'maintenance', now() + interval '1 hour')`,
	} {
		_, err := db.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	var newestJob int64
	require.NoError(t, db.QueryRow(ctx, `WITH ins AS (
		INSERT INTO jobs (queue, kind) SELECT 'emails-eu', 'send_receipt' FROM generate_series(1, 30) RETURNING id)
		SELECT max(id) FROM ins`).Scan(&newestJob))
	_, err := audit.RecordTx(ctx, db, audit.Event{Actor: "admin", Role: "admin", Action: "queue.pause",
		Target: "queue:emails-eu", Reason: "seeded: SMTP provider outage", Outcome: audit.OutcomeSucceeded})
	require.NoError(t, err)
	_, err = audit.IncidentOpen(ctx, db, audit.IncidentOpenParams{Title: "replica lag after the Tuesday deploy", OpenedBy: "admin"})
	require.NoError(t, err)
	// An application session idle in a transaction, a replication slot and
	// a prepared transaction, for the database pages. The slot and the
	// prepared transaction outlive connections: they are removed at
	// cleanup, before the database is dropped.
	app := testdb.Connect(t, e.url, "nightly-report")
	_, err = app.Exec(ctx, "BEGIN; SELECT count(*) FROM jobs")
	require.NoError(t, err)
	_, err = db.Exec(ctx, "SELECT pg_create_physical_replication_slot('pages_test_slot')")
	require.NoError(t, err)
	t.Cleanup(func() { db.Exec(context.Background(), "SELECT pg_drop_replication_slot('pages_test_slot')") })
	_, err = db.Exec(ctx, "BEGIN; SELECT 1; PREPARE TRANSACTION 'pages-test-gid'")
	require.NoError(t, err)
	t.Cleanup(func() { db.Exec(context.Background(), "ROLLBACK PREPARED 'pages-test-gid'") })

	// Two samples with a checkpoint between them, so the WAL page shows
	// rates.
	smp.SampleNow(ctx)
	_, err = db.Exec(ctx, "CHECKPOINT")
	require.NoError(t, err)
	smp.SampleNow(ctx)

	b := browser.New(t, 180*time.Second)
	signIn(t, b, e.http.URL, "admin")
	for _, p := range []struct {
		path, testid string
		// texts must all appear in the page's main text.
		texts []string
		// js, when set, must evaluate to true on the page.
		js string
	}{
		{path: "/", testid: "findings", texts: []string{"Queue emails-eu: 12 jobs died", `"smtp.timeout"`}},
		{path: "/runbook", testid: "runbook-steps", texts: []string{"Build the blocking chain and find the root blocker", "Dead-letter spike"}},
		{path: "/runbook/queues", testid: "runbook-step-queues", texts: []string{"emails-eu", "smtp.timeout", "w-seeded-1"}},
		{path: "/runbook/verification", testid: "runbook-step-verification", texts: []string{"Transaction ID and multixact wraparound", "Sequences closest to their limit"}},
		{path: "/runbook/rb-g", testid: "runbook-rb-g", texts: []string{"Group by error class first."}},
		{path: "/incidents", testid: "incident-open-form", texts: []string{"replica lag after the Tuesday deploy"}},
		{path: "/queues", testid: "queues", texts: []string{"emails-eu"}},
		{path: "/jobs", testid: "jobs", texts: []string{"send_receipt", "emails-eu"},
			js: fmt.Sprintf(`document.querySelector('main a[href="/jobs/%d"]') !== null`, newestJob)},
		{path: "/deadletters", testid: "deadletters", texts: []string{"emails-eu", "smtp.timeout", "dial tcp 10.0.0.7:25: i/o timeout"}},
		{path: "/outbox", testid: "outbox", texts: []string{"7 due"}},
		{path: "/workers", testid: "workers", texts: []string{"w-seeded-1", "host-seeded", "6 running jobs reclaimed"}},
		{path: "/schedules", testid: "schedules", texts: []string{"archive-nightly", "daily at 03:00 UTC"}},
		{path: "/audit", testid: "audit-events", texts: []string{"seeded: SMTP provider outage", "queue:emails-eu"}},
		{path: "/actions", testid: "actions", texts: []string{"deadletters.requeue", "backend.cancel"}},
		{path: "/actions/deadletters.requeue?queue=emails-eu&error_class=smtp.timeout", testid: "action-form-edit",
			js: `[...document.querySelectorAll('main input, main select')].some(i => i.value === 'emails-eu') &&
				[...document.querySelectorAll('main input, main select')].some(i => i.value === 'smtp.timeout')`},
		{path: "/database/activity", testid: "database-activity", texts: []string{"nightly-report"}},
		{path: "/database/resources", testid: "database-resources", texts: []string{"WAL per second", "Checkpoints per minute"}},
		{path: "/database/replication", testid: "database-replication", texts: []string{"pages_test_slot"}},
		{path: "/database/maintenance", testid: "database-maintenance", texts: []string{"pages-test-gid"}},
	} {
		browser.Do(t, b, chromedp.Navigate(e.http.URL+p.path), chromedp.WaitVisible(css(`[data-testid="`+p.testid+`"]`)))
		// Panels load on their own; wait until every placeholder is gone.
		browser.Get(t, b, chromedp.Poll[bool](`document.querySelectorAll('[data-testid^="slot-"]').length === 0`))
		errs := browser.Get(t, b, chromedp.Evaluate[int](
			`document.querySelectorAll('[data-testid="error"], [data-testid="panel-error"], [data-testid="panel-timeout"]').length`))
		require.Zero(t, errs, "%s shows an error", p.path)
		text := browser.Get(t, b, chromedp.Text(css(`main`)))
		for _, want := range p.texts {
			require.Contains(t, text, want, "%s does not show %q", p.path, want)
		}
		if p.js != "" {
			require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](p.js)), "%s: %s", p.path, p.js)
		}
		name := strings.Trim(strings.NewReplacer("/", "-", "?", "-", "&", "-", "=", "-").Replace(p.path), "-")
		if name == "" {
			name = "overview"
		}
		browser.Screenshot(t, b, "page-"+name)
	}
}
