package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

func TestJobsList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")

	t.Run("Empty", func(t *testing.T) {
		resp, body := c.get("/jobs")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="job-filters"`)
		require.Contains(t, body, "Nothing running or waiting.")
		require.Contains(t, body, `data-search`)
	})

	// 120 jobs in two queues; every third one dead with a class.
	e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, created_at)
		SELECT CASE WHEN g % 2 = 0 THEN 'email' ELSE 'billing' END, 'send',
		       CASE WHEN g % 3 = 0 THEN 'dead' ELSE 'ready' END,
		       CASE WHEN g % 3 = 0 THEN 'timeout' END,
		       CASE WHEN g % 3 = 0 THEN 'context deadline exceeded' END,
		       CASE WHEN g % 3 = 0 THEN now() END,
		       timestamptz '2026-12-01 00:00:00Z' + g * interval '1 minute'
		FROM generate_series(1, 120) g`)

	t.Run("KeysetPagination", func(t *testing.T) {
		var first views.JobsPage
		require.Equal(t, http.StatusOK, c.getJSON("/jobs?limit=50&status=all", &first))
		require.Len(t, first.Jobs.Rows, 50)
		require.Equal(t, "120", first.Jobs.Rows[0][0].Text, "newest first")
		require.Equal(t, "/jobs?before=71&limit=50&status=all", first.OlderHref)
		require.Empty(t, first.FirstHref)

		var second views.JobsPage
		require.Equal(t, http.StatusOK, c.getJSON(first.OlderHref, &second))
		require.Len(t, second.Jobs.Rows, 50)
		require.Equal(t, "70", second.Jobs.Rows[0][0].Text)
		require.Equal(t, "/jobs?limit=50&status=all", second.FirstHref)

		var last views.JobsPage
		require.Equal(t, http.StatusOK, c.getJSON(second.OlderHref, &last))
		require.Len(t, last.Jobs.Rows, 20)
		require.Empty(t, last.OlderHref, "the last page has no older link")

		resp, body := c.get(first.OlderHref)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="jobs-older"`)
		require.Contains(t, body, `data-testid="jobs-first"`)
	})

	t.Run("OlderKeepsFilters", func(t *testing.T) {
		var m views.JobsPage
		require.Equal(t, http.StatusOK, c.getJSON("/jobs?queue=email&status=dead&limit=5", &m))
		require.Len(t, m.Jobs.Rows, 5)
		for _, r := range m.Jobs.Rows {
			require.Equal(t, "email", r[1].Text)
			require.Equal(t, "dead", r[3].Text)
			require.Equal(t, "timeout", r[8].Text)
		}
		require.Contains(t, m.OlderHref, "queue=email")
		require.Contains(t, m.OlderHref, "status=dead")
		require.Contains(t, m.OlderHref, "limit=5")
		require.Contains(t, m.OlderHref, "before="+m.Jobs.Rows[4][0].Text)
		var next views.JobsPage
		require.Equal(t, http.StatusOK, c.getJSON(m.OlderHref, &next))
		require.Len(t, next.Jobs.Rows, 5)
		id, _ := strconv.Atoi(next.Jobs.Rows[0][0].Text)
		last, _ := strconv.Atoi(m.Jobs.Rows[4][0].Text)
		require.Less(t, id, last)
	})

	t.Run("Filters", func(t *testing.T) {
		tests := []struct {
			query string
			rows  int
		}{
			{"queue=billing&status=all", 50},
			{"queue=billing&status=all&limit=500", 60},
			{"queue=billing&limit=500", 40},
			{"status=dead&limit=500", 40},
			{"error_class=timeout&queue=email&status=all&limit=500", 20},
			{"kind=other", 0},
			{"status=all&created_from=2026-12-01T01:00:00Z&created_until=2026-12-01T01:10:00Z", 10},
			{"status=all&created_from=2026-12-01+01:00&created_until=2026-12-01T01:10", 10},
			{"status=all&before=11", 10},
			{"after=110", 6},
			{"status=any&limit=3", 3},
		}
		for _, tt := range tests {
			var m views.JobsPage
			require.Equal(t, http.StatusOK, c.getJSON("/jobs?"+tt.query, &m), tt.query)
			require.Len(t, m.Jobs.Rows, tt.rows, tt.query)
		}
		resp, body := c.get("/jobs?kind=other")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, "No job matches.")
		require.Contains(t, body, `value="other"`, "the filter box keeps what was typed")
	})

	t.Run("BadInput", func(t *testing.T) {
		// A bad value is a message next to its field on the jobs page, with
		// the form kept; JSON clients get the error.
		tests := []struct{ query, field, msg string }{
			{"status=zombie", "status", "status &#34;zombie&#34; is not one of running, ready, scheduled, dead, done, all"},
			{"before=5", "before", "this list is oldest first: use after"},
			{"status=dead&after=5", "after", "this list is newest first: use before"},
			{"created_from=last+week", "created_from", "created_from &#34;last week&#34; is not a time: type 2026-12-03 10:00"},
			{"created_until=2026-02-30", "created_until", "created_until"},
			{"created_from=2026-12-02&created_until=2026-12-01", "created_until", "created_from must be before created_until"},
			{"status=all&before=-1", "before", "before &#34;-1&#34; is not a positive whole number"},
			{"id=-1", "id", "id &#34;-1&#34; is not a positive whole number"},
			{"id=1e3", "id", "id &#34;1e3&#34;"},
			{"limit=0", "limit", "limit &#34;0&#34; must be a whole number from 1 to 500"},
			{"limit=100000", "limit", "limit"},
			{"queue=%00", "queue", "queue contains a control character"},
			{"kind=%C0%AF", "kind", "kind contains a control character or invalid UTF-8"},
		}
		for _, tt := range tests {
			resp, body := c.get("/jobs?" + tt.query)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, tt.query)
			require.Contains(t, body, `data-testid="job-filters"`, "%s: the form is kept", tt.query)
			require.Contains(t, body, `data-testid="filter-error-`+tt.field+`"`, tt.query)
			require.Contains(t, body, tt.msg, tt.query)
			require.NotContains(t, body, `data-testid="error"`, "%s: not an error page", tt.query)

			resp, body = c.get("/jobs?"+tt.query, "Accept", "application/json")
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, tt.query)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &m))
			require.NotEmpty(t, m["error"])
		}
	})

	t.Run("JumpToID", func(t *testing.T) {
		resp, _ := c.get("/jobs?id=42")
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/jobs/42", resp.Header.Get("Location"))
	})

	t.Run("Fragment", func(t *testing.T) {
		resp, body := c.get("/jobs?queue=email", "HX-Request", "true")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, body, "<html")
		require.Contains(t, body, `data-testid="panel-jobs"`)
	})
}

func TestJobDetail(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")
	var running, dead int64
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind, payload, status, lease_owner, lease_until, lease_generation, attempts, started_at, dedupe_key, tenant_id)
		VALUES ('email', 'send', '{"to":"a@example.com","n":[1,2]}', 'running', 'worker-7', now() - interval '1 minute', 5, 2, now(), 'welcome:a', 'acme') RETURNING id`).Scan(&running))
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind, status, attempts, max_attempts, last_error, error_class, finished_at, errors)
		VALUES ('email', 'send', 'dead', 2, 2, 'smtp: 550 mailbox unavailable', 'smtp.Error: 550', now(),
		        '[{"attempt":1,"at":"2026-12-01T10:00:00Z","error":"smtp: 451 try later","class":"smtp.Error: 451"},
		          {"attempt":2,"at":"2026-12-01T10:05:00Z","error":"smtp: 550 mailbox unavailable","class":"smtp.Error: 550"}]') RETURNING id`).Scan(&dead))

	t.Run("Running", func(t *testing.T) {
		resp, body := c.get("/jobs/" + itoa64(running))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `<span data-testid="job-status"><span class="sev info">● running</span></span>`)
		for _, id := range []string{"job-detail", "job-facts", "job-lease", "job-payload", "panel-attempts", "action-lease.expire", "action-job.cancel"} {
			require.Contains(t, body, `data-testid="`+id+`"`, id)
		}
		require.NotContains(t, body, `data-testid="action-job.retry_now"`)
		require.Contains(t, body, "worker-7")
		require.Contains(t, body, "Lease expired")
		require.Contains(t, body, "welcome:a")
		require.Contains(t, body, "acme")
		require.Contains(t, body, "&#34;to&#34;: &#34;a@example.com&#34;", "payload is pretty-printed")
		require.Contains(t, body, "No failed attempt.")
		require.Regexp(t, `<time datetime="[0-9TZ:-]+" title="[0-9TZ:-]+`, body, "ages carry the UTC time")

		var m views.JobDetail
		require.Equal(t, http.StatusOK, c.getJSON("/jobs/"+itoa64(running), &m))
		require.Equal(t, running, m.ID)
		require.Equal(t, "running", m.Status)
		require.Equal(t, "{\n  \"n\": [\n    1,\n    2\n  ],\n  \"to\": \"a@example.com\"\n}", m.Payload, "jsonb orders keys")
		require.Equal(t, "5", m.Lease[1].Value)
	})

	t.Run("Dead", func(t *testing.T) {
		resp, body := c.get("/jobs/" + itoa64(dead))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="job-last-error"`)
		require.Contains(t, body, `data-testid="action-job.retry_now"`)
		require.Contains(t, body, `/actions/job.retry_now?id=`+itoa64(dead))
		require.NotContains(t, body, `data-testid="action-lease.expire"`)
		require.Contains(t, body, "smtp: 451 try later")

		var m views.JobDetail
		require.Equal(t, http.StatusOK, c.getJSON("/jobs/"+itoa64(dead), &m))
		require.Len(t, m.Attempts.Rows, 2)
		require.Equal(t, "smtp.Error: 550", m.ErrorClass)
		require.Equal(t, "/jobs?error_class=smtp.Error%3A+550&queue=email", m.ClassHref)
	})

	t.Run("ViewerHasNoActions", func(t *testing.T) {
		v := e.signedIn(t, "viewer")
		resp, body := v.get("/jobs/" + itoa64(dead))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, body, `data-testid="job-actions"`)
	})

	t.Run("NotFound", func(t *testing.T) {
		resp, body := c.get("/jobs/987654")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, body, "no job has id 987654")
		resp, body = c.get("/jobs/987654", "Accept", "application/json")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, body, "no job has id 987654")
	})

	t.Run("BadID", func(t *testing.T) {
		for _, id := range []string{"abc", "-3", "0", "1.5", "99999999999999999999"} {
			resp, body := c.get("/jobs/" + id)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, id)
			require.Contains(t, body, "is not a positive whole number", id)
		}
	})

	t.Run("Fragment", func(t *testing.T) {
		resp, body := c.get("/jobs/"+itoa64(dead), "HX-Request", "true")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, body, "<html")
		require.True(t, strings.Contains(body, `data-testid="job-detail"`))
	})
}

func TestJobDetailModel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	until := now.Add(30 * time.Second)
	j := &queues.Job{ID: 7, Queue: "q", Kind: "k", Status: queues.StatusRunning, Payload: []byte(`{"a":1}`),
		LeaseOwner: jobsPtr("w1"), LeaseUntil: &until, LeaseGeneration: 3, Errors: []byte(`not json`), CreatedAt: now.Add(-time.Minute), AvailableAt: now}
	m := jobDetailModel(j, "operator", now)
	require.Equal(t, "{\n  \"a\": 1\n}", m.Payload)
	require.Equal(t, "Lease until", m.Lease[2].Label)
	require.Equal(t, "in 30s", m.Lease[2].Value)
	require.Equal(t, "error", m.Attempts.Status, "a corrupt history shows in its panel")
	require.Equal(t, []string{"lease.expire", "job.cancel"}, linkNames(m.Actions))
	require.Equal(t, "1m00s ago", m.Facts[3].Value)
	require.Equal(t, "2026-12-02T11:59:00Z", m.Facts[3].Title)

	require.Equal(t, []string{"job.retry_now", "job.cancel"}, jobActionNames(queues.StatusReady))
	require.Empty(t, jobActionNames(queues.StatusDone))
	require.Equal(t, "not json", prettyJSON([]byte("not json")))
}

func jobsPtr[T any](v T) *T { return &v }

func linkNames(ls []views.ActionLink) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// TestJobsListReadsOnlyWhatItShows lists jobs whose payloads and error
// histories are large: the list statement leaves them out and cuts the last
// error, so a page of 500 does not load them.
func TestJobsListReadsOnlyWhatItShows(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pool := e.srv.cfg.Pool
	_, err := pool.Exec(t.Context(), `INSERT INTO jobs (queue, kind, payload, status, last_error, errors, finished_at)
		SELECT 'big', 'blob', jsonb_build_object('blob', repeat('p', 1 << 20)), 'dead', repeat('e', 5000),
		       jsonb_build_array(jsonb_build_object('attempt', 1, 'error', repeat('h', 1 << 20))), now()
		FROM generate_series(1, 3)`)
	require.NoError(t, err)
	jobs, err := queues.JobList(t.Context(), pool, queues.JobListParams{Queue: "big", Limit: 500})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
	for _, j := range jobs {
		require.Zero(t, len(j.Payload), "the list does not read payloads")
		require.Zero(t, len(j.Errors), "the list does not read error histories")
		require.Len(t, *j.LastError, 1000, "the last error is cut")
		require.Equal(t, "dead", j.Status)
		require.Equal(t, "blob", j.Kind)
	}
	c := e.signedIn(t, "viewer")
	resp, body := c.get("/jobs?queue=big&limit=500")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, len(body), 200<<10, "a page of large jobs stays small")
}

// TestJobPayloadDownload shows a large payload cut on the job page, with a
// link that downloads it whole (a viewer may).
func TestJobPayloadDownload(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pool := e.srv.cfg.Pool
	var big, small int64
	require.NoError(t, pool.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind, payload)
		VALUES ('big', 'blob', jsonb_build_object('blob', repeat('é', 200000))) RETURNING id`).Scan(&big))
	require.NoError(t, pool.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind, payload)
		VALUES ('big', 'blob', '{"n": 1}') RETURNING id`).Scan(&small))
	var want string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT payload::text FROM jobs WHERE id = $1`, big).Scan(&want))
	c := e.signedIn(t, "viewer")

	resp, body := c.get("/jobs/" + itoa64(big))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="job-payload-cut"`)
	require.Contains(t, body, `href="/jobs/`+itoa64(big)+`/payload"`)
	require.Less(t, len(body), 200<<10, "the page shows the payload cut")
	var m views.JobDetail
	require.Equal(t, http.StatusOK, c.getJSON("/jobs/"+itoa64(big), &m))
	require.True(t, m.PayloadCut)
	require.True(t, utf8.ValidString(m.Payload), "cut on a character boundary")
	require.Equal(t, len(want), m.PayloadBytes)

	resp, body = c.get("/jobs/" + itoa64(big) + "/payload")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, want, body, "the download is the payload whole")
	require.Contains(t, resp.Header.Get("Content-Disposition"), `attachment; filename="job-`+itoa64(big)+`-payload.json"`)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")

	resp, body = c.get("/jobs/" + itoa64(small))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, `data-testid="job-payload-cut"`)
	resp, _ = c.get("/jobs/987654/payload")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = c.get("/jobs/x/payload")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestJobsListAnswersWhenTheListCannotFinish holds the jobs table so the
// list cannot read it (as a filter that reads most of a large table cannot
// finish): the page still answers within the read timeout, with its form
// and tabs, and says why nothing is listed and what to do; JSON clients get
// the same advice with a 504.
func TestJobsListAnswersWhenTheListCannotFinish(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pool := e.srv.cfg.Pool
	_, err := pool.Exec(t.Context(), `INSERT INTO jobs (queue, kind) SELECT 'held', 'rare' FROM generate_series(1, 3)`)
	require.NoError(t, err)
	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	c := e.signedIn(t, "viewer")
	resp, body := c.get("/jobs?kind=rare")
	require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, body)
	require.Contains(t, body, "No page of jobs within 3s.")
	require.Contains(t, body, "Narrow it with a status or an error class")
	require.Contains(t, body, `value="rare"`, "the form keeps the filter")
	require.Contains(t, body, "Ready", "the tabs come from the counters, which the lock does not hold")

	resp, body = c.get("/jobs?kind=rare", "Accept", "application/json")
	require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode, body)
	require.Contains(t, body, "Narrow it with a status or an error class")
}

// TestJobsListOpensOnWhatMatters: /jobs opens on the running and due jobs,
// the longest running or waiting first, with how long as a column; the
// tabs count running, ready, scheduled, dead and done jobs, and the done
// jobs are one click (their tab) away.
func TestJobsListOpensOnWhatMatters(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	e.exec(t, `INSERT INTO jobs (queue, kind, status, finished_at, created_at) VALUES
		('q', 'old_done', 'done', now() - interval '1 hour', now() - interval '2 hours')`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, started_at, lease_owner, lease_until, created_at) VALUES
		('q', 'long_run', 'running', now() - interval '25 minutes', 'w', now() + interval '1 minute', now() - interval '30 minutes')`)
	e.exec(t, `INSERT INTO jobs (queue, kind, available_at, created_at) VALUES
		('q', 'waiting', now() - interval '10 minutes', now() - interval '10 minutes'),
		('q', 'later', now() + interval '1 hour', now())`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, finished_at) VALUES ('q', 'failed', 'dead', 'boom', now())`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, finished_at) VALUES ('q', 'new_done', 'done', now())`)

	var m views.JobsPage
	require.Equal(t, http.StatusOK, c.getJSON("/jobs", &m))
	var kinds, since []string
	for _, r := range m.Jobs.Rows {
		kinds, since = append(kinds, r[2].Text), append(since, r[4].Text)
	}
	require.Equal(t, []string{"long_run", "waiting"}, kinds, "running and due jobs, oldest first; no scheduled, dead or done job")
	require.Equal(t, "For", m.Jobs.Columns[4].Label)
	require.True(t, strings.HasPrefix(since[0], "running for 25m"), since[0])
	require.True(t, strings.HasPrefix(since[1], "waiting for 10m"), since[1])
	require.Contains(t, m.Order, "oldest first")

	tabs := map[string]views.JobTab{}
	for _, tab := range m.Tabs {
		tabs[tab.Label] = tab
	}
	require.True(t, tabs["Running + ready"].Current)
	require.Equal(t, "2", tabs["Running + ready"].Count)
	require.Equal(t, "1", tabs["Running"].Count)
	require.Equal(t, "1", tabs["Ready"].Count, "ready counts the due jobs only")
	require.Equal(t, "1", tabs["Scheduled"].Count)
	require.Equal(t, "1", tabs["Dead"].Count)
	require.Equal(t, "/jobs?status=done", tabs["Done"].Href)

	var done views.JobsPage
	require.Equal(t, http.StatusOK, c.getJSON(tabs["Done"].Href, &done))
	require.Len(t, done.Jobs.Rows, 2)
	require.Equal(t, "new_done", done.Jobs.Rows[0][2].Text, "done jobs newest first")
	require.True(t, strings.HasPrefix(done.Jobs.Rows[0][4].Text, "done "), done.Jobs.Rows[0][4].Text)

	var sched views.JobsPage
	require.Equal(t, http.StatusOK, c.getJSON(tabs["Scheduled"].Href, &sched))
	require.Len(t, sched.Jobs.Rows, 1)
	require.Equal(t, "later", sched.Jobs.Rows[0][2].Text)
	require.True(t, strings.HasPrefix(sched.Jobs.Rows[0][4].Text, "due in 59m"), sched.Jobs.Rows[0][4].Text)
}
