package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// The River job kinds of the page tests.
type (
	riverOK   struct{}
	riverFail struct {
		Order int `json:"order"`
	}
	riverPanic struct{}
)

func (riverOK) Kind() string                                               { return "ok" }
func (riverFail) Kind() string                                             { return "fail" }
func (riverPanic) Kind() string                                            { return "panic" }
func (riverFail) InsertOpts() riverqueue.InsertOpts                        { return riverqueue.InsertOpts{MaxAttempts: 1} }
func (riverPanic) InsertOpts() riverqueue.InsertOpts                       { return riverqueue.InsertOpts{MaxAttempts: 1} }
func (riverOKWorker) Work(context.Context, *riverqueue.Job[riverOK]) error { return nil }
func (riverPanicWorker) Work(context.Context, *riverqueue.Job[riverPanic]) error {
	panic("index out of range")
}
func (riverFailWorker) Work(_ context.Context, j *riverqueue.Job[riverFail]) error {
	return fmt.Errorf("ship order %d: %w", j.Args.Order, errors.New("carrier timeout"))
}

type (
	riverOKWorker struct {
		riverqueue.WorkerDefaults[riverOK]
	}
	riverFailWorker struct {
		riverqueue.WorkerDefaults[riverFail]
	}
	riverPanicWorker struct {
		riverqueue.WorkerDefaults[riverPanic]
	}
)

// riverSetup is a console whose queue pages read River: River's schema is
// migrated by the database's owner with River's own migrator, a River
// client works jobs that succeed, fail and panic (a paused queue's jobs
// wait), then the console starts as console_web with the
// grants `console roles sql` gives it.
func riverSetup(t *testing.T) *env {
	t.Helper()
	e, _ := riverSetupClient(t)
	return e
}

// riverSetupClient is riverSetup with the River client that works the
// default queue (stopped at the test's end), for a test that stops it.
func riverSetupClient(t *testing.T) (*env, *riverqueue.Client[pgx.Tx]) {
	t.Helper()
	ctx := context.Background()
	superURL := testdb.OwnedURL(t)
	// River's client holds connections of its own (LISTEN, the elector,
	// the completer): a pool of a few would starve it on a busy machine.
	ownerURL, err := url.Parse(testdb.AsUser(t, superURL, testdb.OwnerRole))
	require.NoError(t, err)
	q := ownerURL.Query()
	q.Set("pool_max_conns", "12")
	ownerURL.RawQuery = q.Encode()
	owner := testdb.Pool(t, ownerURL.String())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := rivermigrate.New(riverpgxv5.New(owner), &rivermigrate.Config{Logger: quiet})
	require.NoError(t, err)
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)

	workers := riverqueue.NewWorkers()
	riverqueue.AddWorker(workers, &riverOKWorker{})
	riverqueue.AddWorker(workers, &riverFailWorker{})
	riverqueue.AddWorker(workers, &riverPanicWorker{})
	// A client that works billing records the queue in river_queue; once
	// it stops, the queue can be paused with no client fetching its jobs.
	billing, err := riverqueue.NewClient(riverpgxv5.New(owner), &riverqueue.Config{
		Queues: map[string]riverqueue.QueueConfig{"billing": {MaxWorkers: 1}}, Workers: workers, Logger: quiet,
		LeaderElectionDisabled: true, // the leader /workers shows is the client that works
	})
	require.NoError(t, err)
	require.NoError(t, billing.Start(ctx))
	testdb.Eventually(t, time.Minute, "River's client to record queue billing", func() bool {
		return testdb.Count(t, owner, "SELECT count(*) FROM river_queue WHERE name = 'billing'") == 1
	})
	require.NoError(t, billing.Stop(ctx))
	c, err := riverqueue.NewClient(riverpgxv5.New(owner), &riverqueue.Config{
		Queues:            map[string]riverqueue.QueueConfig{riverqueue.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond,
		Logger: quiet, ID: "web-test-client",
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.StopAndCancel(stop)
	})
	require.NoError(t, c.QueuePause(ctx, "billing", nil))
	params := []riverqueue.InsertManyParams{{Args: riverOK{}}, {Args: riverOK{}}, {Args: riverPanic{}},
		{Args: riverOK{}, InsertOpts: &riverqueue.InsertOpts{Queue: "billing"}},
		{Args: riverOK{}, InsertOpts: &riverqueue.InsertOpts{Queue: "billing"}}}
	for _, order := range []int{1001, 1002, 1003, 1004} {
		params = append(params, riverqueue.InsertManyParams{Args: riverFail{Order: order}})
	}
	_, err = c.InsertMany(ctx, params)
	require.NoError(t, err)
	testdb.Eventually(t, time.Minute, "River to work the jobs", func() bool {
		return testdb.Count(t, owner, "SELECT count(*) FROM river_job WHERE state IN ('completed', 'discarded')") == 7
	})
	return setupWith(t, setupOpts{url: superURL, configure: func(cfg *Config) { cfg.QueueSource = river.NewSource(cfg.Pool) }}), c
}

// sourcePage reads a page's model as JSON.
func sourcePage(t *testing.T, c *client, path string) views.SourcePage {
	t.Helper()
	var m views.SourcePage
	require.NoError(t, json.Unmarshal([]byte(c.page(path, "Accept", "application/json")), &m), path)
	return m
}

// rowOf finds the row whose first cell is first.
func rowOf(t *testing.T, p views.Panel, first string) []views.Cell {
	t.Helper()
	for _, r := range p.Rows {
		if r[0].Text == first {
			return r
		}
	}
	t.Fatalf("no row %q in panel %s: %+v", first, p.ID, p.Rows)
	return nil
}

// cellOf is a row's cell under the column labelled label.
func cellOf(t *testing.T, p views.Panel, row []views.Cell, label string) views.Cell {
	t.Helper()
	for i, c := range p.Columns {
		if c.Label == label {
			return row[i]
		}
	}
	t.Fatalf("no column %q in panel %s", label, p.ID)
	return views.Cell{}
}

// TestRiverPages: with River as the queue source, /queues, /queues/{name},
// /jobs, /jobs/{id}, /deadletters and /workers show River's queues and
// jobs in River's states, with the counts River's client left, discarded
// jobs grouped by the class of their last error, and read as console_web.
func TestRiverPages(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	e := riverSetup(t)
	c := e.signedIn(t, auth.RoleViewer)

	qs := sourcePage(t, c, "/queues")
	require.Contains(t, qs.Sub, "River")
	p := qs.Panels[0]
	def := rowOf(t, p, "default")
	require.Equal(t, "2", cellOf(t, p, def, "completed").Text)
	require.Equal(t, "5", cellOf(t, p, def, "discarded").Text)
	require.Equal(t, "/jobs?queue=default&state=discarded", cellOf(t, p, def, "discarded").Href)
	billing := rowOf(t, p, "billing")
	require.Equal(t, "2", cellOf(t, p, billing, "available").Text)
	require.Contains(t, cellOf(t, p, billing, "State").Text, "paused")

	html := c.page("/queues")
	require.Contains(t, html, `data-testid="queues"`)
	require.Contains(t, html, "billing")

	detail := sourcePage(t, c, "/queues/default")
	require.Equal(t, "Queue default", detail.Title)
	failedPanel := detail.Panels[len(detail.Panels)-2]
	require.Equal(t, "deadletters", failedPanel.ID)
	require.Len(t, failedPanel.Rows, 2)
	resp, _ := c.get("/queues/nope")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	dl := sourcePage(t, c, "/deadletters")
	require.Contains(t, dl.Sub, "5 jobs failed for good")
	groups := dl.Panels[0]
	require.Len(t, groups.Rows, 2, "four carrier timeouts are one class, the panic another: %+v", groups.Rows)
	first := groups.Rows[0]
	require.Equal(t, "ship order ?: carrier timeout", cellOf(t, groups, first, "Error class").Text)
	require.Equal(t, "4", cellOf(t, groups, first, "Jobs").Text)
	require.Equal(t, river.PanicClass, cellOf(t, groups, groups.Rows[1], "Error class").Text)

	jobs := sourcePage(t, c, "/jobs?state=discarded&kind=fail")
	require.Len(t, jobs.Panels[0].Rows, 4)
	byArgs := sourcePage(t, c, `/jobs?args=`+`%7B%22order%22%3A1003%7D`)
	require.Len(t, byArgs.Panels[0].Rows, 1)
	id := byArgs.Panels[0].Rows[0][0].Text
	paged := sourcePage(t, c, "/jobs?limit=3")
	require.Len(t, paged.Panels[0].Rows, 3)
	require.NotEmpty(t, paged.OlderHref, "a full page links to the older jobs")
	older := sourcePage(t, c, paged.OlderHref)
	require.NotEqual(t, paged.Panels[0].Rows[0][0].Text, older.Panels[0].Rows[0][0].Text)

	resp, body := c.get("/jobs?state=dead")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "not a River state")
	resp, body = c.get("/jobs?args=%5B1%5D")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "JSON object")

	job := sourcePage(t, c, "/jobs/"+id)
	require.Equal(t, "Job "+id, job.Title)
	facts := map[string]string{}
	for _, f := range job.Facts {
		facts[f.Label] = f.Value
	}
	require.Equal(t, "discarded", facts["State"])
	require.Equal(t, "ship order ?: carrier timeout", facts["Error class"])
	require.Contains(t, facts["Args"], "1003")
	require.Len(t, job.Panels[0].Rows, 1, "one failed attempt")
	require.Contains(t, job.Panels[0].Rows[0][2].Text, "ship order 1003: carrier timeout")
	resp, _ = c.get("/jobs/999999999")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	var ws views.SourcePage
	testdb.Eventually(t, 30*time.Second, "River's client to be shown as leader", func() bool {
		ws = sourcePage(t, c, "/workers")
		return len(ws.Facts) > 0 && ws.Facts[0].Value == "web-test-client"
	})
	require.True(t, strings.HasPrefix(ws.Facts[2].Value, "lease until"), "the leader's lease is live: %+v", ws.Facts)
}
