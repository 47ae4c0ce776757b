package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// exec runs SQL on the test database as its owner (fixtures).
func (e *env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := e.owner.Exec(t.Context(), sql, args...)
	require.NoError(t, err)
}

// getJSON fetches path as JSON into v and returns the status.
func (c *client) getJSON(path string, v any) int {
	c.t.Helper()
	resp, body := c.get(path, "Accept", "application/json")
	if resp.StatusCode == http.StatusOK {
		require.NoError(c.t, json.Unmarshal([]byte(body), v), body)
	}
	return resp.StatusCode
}

// seedQueues makes queue "email" with ready, running (one lease expired)
// and dead jobs, queue "billing" paused with limits and no jobs, and one
// live and one stale worker.
func seedQueues(t *testing.T, e *env) {
	t.Helper()
	e.exec(t, `INSERT INTO jobs (queue, kind, payload) SELECT 'email', 'send', jsonb_build_object('to', 'u' || g || '@example.com') FROM generate_series(1, 3) g`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, attempts, started_at)
		VALUES ('email', 'send', 'running', 'w-live', now() - interval '1 minute', 3, 1, now() - interval '2 minutes'),
		       ('email', 'send', 'running', 'w-live', now() + interval '1 minute', 1, 1, now())`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, attempts, max_attempts, last_error, error_class, finished_at, errors)
		SELECT 'email', 'send', 'dead', 8, 8, 'dial tcp: connection refused', 'net.OpError: connection refused', now() - g * interval '1 minute',
		       jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(), 'error', 'dial tcp: connection refused', 'class', 'net.OpError: connection refused'))
		FROM generate_series(1, 4) g`)
	e.exec(t, `INSERT INTO jobs (queue, kind, status, attempts, last_error, error_class, finished_at)
		VALUES ('email', 'send', 'dead', 1, 'cancelled by operator', 'cancelled', now())`)
	e.exec(t, `INSERT INTO queue_settings (queue, paused, max_workers, rate_per_second, updated_by) VALUES ('billing', true, 4, 2.5, 'olga')`)
	e.exec(t, `INSERT INTO workers (id, host, pid, queues, concurrency, in_flight, in_flight_by_queue, version, last_seen_at)
		VALUES ('w-live', 'app-1', 4242, '{email,billing}', 8, 2, '{"email": 2}', 'v1', now()),
		       ('w-stale', 'app-2', 777, '{email}', 4, 1, '{"email": 1}', 'v1', now() - interval '5 minutes')`)
}

func TestReadPagesNeedLogin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	for _, path := range []string{"/queues", "/queues/email", "/jobs", "/jobs/1", "/deadletters", "/workers", "/outbox", "/schedules", "/audit"} {
		resp, _ := c.get(path)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, path)
		require.True(t, strings.HasPrefix(resp.Header.Get("Location"), "/login?next="), path)
		resp, _ = c.get(path, "Accept", "application/json")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
}

func TestReadPagesInNavigation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	body := c.page("/queues")
	for _, href := range []string{"/queues", "/jobs", "/deadletters", "/outbox", "/workers", "/schedules", "/audit"} {
		require.Contains(t, body, `href="`+href+`"`, href)
	}
	require.Contains(t, body, `aria-current="page"`)
}

func TestQueuesPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	t.Run("Empty", func(t *testing.T) {
		body := c.page("/queues")
		require.Contains(t, body, `data-testid="queues"`)
		require.Contains(t, body, `data-testid="empty"`)
		require.Contains(t, body, "No queues yet.")
	})

	seedQueues(t, e)

	t.Run("Full", func(t *testing.T) {
		body := c.page("/queues")
		require.Contains(t, body, "<html")
		require.Contains(t, body, `data-testid="panel-queues"`)
		require.Contains(t, body, `href="/queues/email"`)
		require.Contains(t, body, `data-testid="action-queue.pause"`)
		require.Contains(t, body, `data-testid="action-queue.resume"`, "billing is paused")
		require.Contains(t, body, "paused · max 4 workers · max 2.5/s")
		require.Contains(t, body, `data-testid="queue-trends"`)
		require.Contains(t, body, `data-testid="tile-queue-email"`)
		require.Contains(t, body, `data-refresh-url="/queues" data-refresh-select="#queues-live"`, "the numbers refresh themselves")
	})

	t.Run("JSON", func(t *testing.T) {
		var m views.QueuesPage
		require.Equal(t, http.StatusOK, c.getJSON("/queues", &m))
		require.Len(t, m.Queues.Rows, 2)
		rows := map[string][]views.Cell{}
		for _, r := range m.Queues.Rows {
			rows[r[0].Text] = r
		}
		email := rows["email"]
		require.Equal(t, "3", email[1].Text, "ready")
		require.Equal(t, "2", email[3].Text, "running")
		require.Equal(t, "1", email[4].Text, "expired leases")
		require.Equal(t, "5", email[5].Text, "dead")
		require.NotEmpty(t, rows["billing"])
	})

	t.Run("Fragment", func(t *testing.T) {
		body := c.page("/queues", "HX-Request", "true")
		require.NotContains(t, body, "<html")
		require.Contains(t, body, `data-testid="panel-queues"`)
	})

	t.Run("ViewerSeesNoActions", func(t *testing.T) {
		v := e.signedIn(t, "viewer")
		body := v.page("/queues")
		require.NotContains(t, body, `data-testid="action-queue.pause"`)
	})

	t.Run("Detail", func(t *testing.T) {
		body := c.page("/queues/email")
		for _, id := range []string{"queue-detail", "queue-trends", "tile-ready", "tile-oldest", "tile-running", "tile-dead", "queue-counts", "queue-settings", "panel-deadletters", "panel-workers", "queue-jobs"} {
			require.Contains(t, body, `data-testid="`+id+`"`, id)
		}
		require.Contains(t, body, "w-live")
		require.Contains(t, body, "net.OpError: connection refused")
		require.Contains(t, body, `href="/jobs?queue=email"`)

		var m views.QueueDetail
		require.Equal(t, http.StatusOK, c.getJSON("/queues/email", &m))
		require.Equal(t, "email", m.Name)
		require.Len(t, m.DeadLetters.Rows, 2)
		require.Len(t, m.Workers.Rows, 2)
		require.NotEmpty(t, m.Actions)

		resp, body := c.get("/queues/billing")
		require.Equal(t, http.StatusOK, resp.StatusCode, "a queue with settings only")
		require.Contains(t, body, "paused: no claims")
		require.Contains(t, body, `data-testid="action-queue.resume"`)
	})

	t.Run("DetailAllDone", func(t *testing.T) {
		e.exec(t, `INSERT INTO jobs (queue, kind, status, attempts, started_at, finished_at)
			SELECT 'reports', 'build', 'done', 1, now() - interval '1 minute', now() FROM generate_series(1, 2)`)
		var m views.QueueDetail
		require.Equal(t, http.StatusOK, c.getJSON("/queues/reports", &m), "a queue whose jobs are all done")
		require.Equal(t, "reports", m.Name)
		counts := map[string]string{}
		for _, f := range m.Counts {
			counts[f.Label] = f.Value
		}
		require.Equal(t, map[string]string{"Ready": "0", "Running": "0", "Dead": "0", "Done (approx)": "~2"},
			map[string]string{"Ready": counts["Ready"], "Running": counts["Running"], "Dead": counts["Dead"], "Done (approx)": counts["Done (approx)"]})
		resp, body := c.get("/queues/reports")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, `data-testid="queue-detail"`)
	})

	t.Run("DetailNotFound", func(t *testing.T) {
		resp, body := c.get("/queues/nope")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, body, `data-testid="error"`)
		require.Contains(t, body, `no queue named &#34;nope&#34;`)
		resp, body = c.get("/queues/nope", "Accept", "application/json")
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		require.Contains(t, body, `"error"`)
	})
}

func TestDeadLettersPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	body := c.page("/deadletters")
	require.Contains(t, body, `data-testid="deadletters"`)
	require.Contains(t, body, "No dead jobs.")

	seedQueues(t, e)
	body = c.page("/deadletters")
	require.Contains(t, body, `data-testid="panel-deadletters"`)
	require.Contains(t, body, `data-testid="action-deadletters.requeue"`)
	require.Contains(t, body, `/actions/deadletters.requeue?error_class=net.OpError%3A+connection+refused&amp;queue=email`)
	require.Contains(t, body, `/jobs?error_class=net.OpError%3A+connection+refused&amp;queue=email&amp;status=dead`)

	var m views.DeadLettersPage
	require.Equal(t, http.StatusOK, c.getJSON("/deadletters", &m))
	require.Equal(t, "5", m.Total)
	require.Len(t, m.Groups.Rows, 2)
	require.Equal(t, "net.OpError: connection refused", m.Groups.Rows[0][1].Text, "largest group first")
	require.Equal(t, "4", m.Groups.Rows[0][2].Text)

	require.Equal(t, http.StatusOK, c.getJSON("/deadletters?queue=billing", &m))
	require.Empty(t, m.Groups.Rows)

	resp, body := c.get("/deadletters?queue=%00")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "queue contains a control character")

	body = c.page("/deadletters", "HX-Request", "true")
	require.NotContains(t, body, "<html")
}

func TestWorkersPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")

	body := c.page("/workers")
	require.Contains(t, body, "No worker process has registered.")

	seedQueues(t, e)
	body = c.page("/workers")
	require.Contains(t, body, `data-testid="workers"`)
	require.Contains(t, body, `data-testid="panel-workers"`)
	require.Contains(t, body, "stale: no heartbeat for")
	require.Contains(t, body, "app-2")

	var m views.WorkersPage
	require.Equal(t, http.StatusOK, c.getJSON("/workers", &m))
	require.Equal(t, 1, m.Live)
	require.Equal(t, 1, m.Stale)
	require.Len(t, m.Workers.Rows, 2)
	require.Equal(t, "w-live", m.Workers.Rows[0][2].Text, "most recently seen first")
	require.Equal(t, "billing, email (2)", m.Workers.Rows[0][5].Text)

	body = c.page("/workers", "HX-Request", "true")
	require.NotContains(t, body, "<html")

	// Liveness evidence beside the heartbeat: the worker's session on the
	// server, and a worker another one found dead.
	e.exec(t, `INSERT INTO workers (id, host, pid, queues, concurrency, version, last_seen_at, backend_pid, backend_started_at)
		SELECT 'w-open', 'app-3', 1, '{email}', 4, 'v1', now(), pid, backend_start
		FROM pg_stat_activity WHERE pid = pg_backend_pid()`)
	e.exec(t, `INSERT INTO workers (id, host, pid, queues, concurrency, version, last_seen_at, backend_pid, backend_started_at)
		VALUES ('w-gone', 'app-4', 2, '{email}', 4, 'v1', now(), 1, now())`)
	e.exec(t, `INSERT INTO workers (id, host, pid, queues, concurrency, version, last_seen_at, stopped_at, reclaimed_at, reclaimed_jobs)
		VALUES ('w-dead', 'app-5', 3, '{email}', 4, 'v1', now() - interval '3 minutes', now() - interval '2 minutes', now() - interval '2 minutes', 8)`)
	require.Equal(t, http.StatusOK, c.getJSON("/workers", &m))
	rows := map[string][]views.Cell{}
	for _, r := range m.Workers.Rows {
		rows[r[2].Text] = r
	}
	const state, session = 1, 9
	require.Equal(t, "Session", m.Workers.Columns[session].Label)
	require.Regexp(t, `^open \(backend \d+\)$`, rows["w-open"][session].Text)
	require.Equal(t, "gone (backend 1)", rows["w-gone"][session].Text)
	require.Equal(t, "warning", rows["w-gone"][session].Sev)
	require.Regexp(t, `^found dead 2m0\ds ago$`, rows["w-dead"][state].Text)
	require.Regexp(t, `^gone: found dead 2m0\ds ago, 8 running jobs reclaimed$`, rows["w-dead"][session].Text)
	require.Equal(t, "none recorded", rows["w-live"][session].Text)
}

func TestQueueLimits(t *testing.T) {
	t.Parallel()
	four, rate := 4, 0.5
	tests := []struct {
		name   string
		paused bool
		max    *int
		rate   *float64
		want   string
	}{
		{"None", false, nil, nil, "running, no limits"},
		{"Paused", true, nil, nil, "paused"},
		{"All", true, &four, &rate, "paused · max 4 workers · max 0.5/s"},
		{"MaxOnly", false, &four, nil, "max 4 workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, queueLimits(tt.paused, tt.max, tt.rate))
		})
	}
}

func TestQueuesModel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	stats := []queues.QueueStat{
		{Queue: "a", Ready: 10, Scheduled: 1224, OldestReadySeconds: 252, Dead: 2, DoneApprox: 1e6},
		{Queue: "b", Paused: true},
		{Queue: "c", Ready: 5000, Scheduled: 10_000},
	}
	m := queuesModel(stats, "operator", now)
	require.Len(t, m.Queues.Rows, 3)
	a := m.Queues.Rows[0]
	require.Equal(t, "1,234", a[1].Text)
	require.Equal(t, "10", a[2].Text, "an exact due count")
	require.Equal(t, "≤ 5,000", m.Queues.Rows[2][2].Text, "scheduled jobs past the cap: due is an upper bound")
	require.Contains(t, m.Queues.Rows[2][2].Title, "estimated")
	require.Equal(t, "/jobs?queue=a&status=ready", a[1].Href)
	require.Equal(t, "/deadletters?queue=a", a[5].Href)
	require.Equal(t, "~1,000,000", a[6].Text)
	require.Equal(t, "4m12s", a[7].Text)
	require.Equal(t, "–", m.Queues.Rows[1][7].Text, "nothing due: no age")
	require.Equal(t, "queue.pause", a[9].Actions[0].Name)
	require.Equal(t, "queue.resume", m.Queues.Rows[1][9].Actions[0].Name)
	require.Empty(t, queuesModel(stats, "viewer", now).Queues.Rows[0][9].Actions)
}

func TestWorkerState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	stopped := now.Add(-time.Minute)
	tests := []struct {
		name      string
		w         queues.Worker
		sev, text string
	}{
		{"Live", queues.Worker{LastSeenAt: now, Alive: true}, "ok", "live"},
		{"Stale", queues.Worker{LastSeenAt: now.Add(-90 * time.Second)}, "warning", "stale: no heartbeat for 1m30s"},
		{"Stopped", queues.Worker{LastSeenAt: stopped, StoppedAt: &stopped}, "warning", "stopped 1m00s ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, s := workerState(tt.w, now)
			require.Equal(t, tt.sev, h.Sev)
			require.Equal(t, tt.text, s.Text)
		})
	}
}

func TestQueueTrends(t *testing.T) {
	t.Parallel()
	th := diagnostics.Thresholds{QueueBacklogAge: 5 * time.Minute, ExpiredLeases: 1, DeadLetters: 10, DeadLetterWindow: time.Hour}
	tests := []struct {
		name string
		q    queues.QueueStat
		want string
	}{
		{"Idle", queues.QueueStat{Queue: "a"}, "ok"},
		{"Young", queues.QueueStat{Queue: "a", Ready: 5, OldestReadySeconds: 10}, "ok"},
		{"Old", queues.QueueStat{Queue: "a", Ready: 5, OldestReadySeconds: 301}, "warning"},
		{"PausedWithWork", queues.QueueStat{Queue: "a", Scheduled: 1, Paused: true}, "warning"},
		{"PausedEmpty", queues.QueueStat{Queue: "a", Paused: true}, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, queueBacklogState(tt.q, th))
		})
	}

	trend := map[string]trend{"ready": trendOf(1, 5, 9), "oldest_ready_seconds": trendOf(10, 200, 400)}
	q := queues.QueueStat{Queue: "email", Ready: 9, OldestReadySeconds: 400, Running: 2, ExpiredLeases: 1, Dead: 3}
	tile := queueTrendTile(q, trend, th)
	require.Equal(t, "queue-email", tile.ID)
	require.Equal(t, "warning", tile.State)
	require.Equal(t, "/queues/email", tile.Href)
	require.NotEmpty(t, tile.Spark.Points)
	require.Equal(t, "alert at 5m00s waited", tile.Threshold)

	tiles := queueDetailTrends(q, trend, th)
	require.Len(t, tiles, 4)
	require.Equal(t, "6m40s", tiles[1].Value)
	require.NotEmpty(t, tiles[1].Spark.Threshold, "the backlog age threshold is drawn")
	require.Equal(t, "warning", tiles[2].State, "an expired lease reached the threshold")
	require.Equal(t, "/deadletters?queue=email", tiles[3].Href)
	require.Empty(t, tiles[3].Spark.Points, "no samples, no sparkline")
}

func TestPanelError(t *testing.T) {
	t.Parallel()
	p := views.Panel{ID: "x", Status: "ok", Rows: [][]views.Cell{{{Text: "a"}}}}
	timedOut := panelError(p, fmt.Errorf("list workers: %w", context.DeadlineExceeded))
	require.Equal(t, "timed_out", timedOut.Status)
	require.Empty(t, timedOut.Rows)
	require.Equal(t, "The database did not answer within 5s; reload to try again.", timedOut.Message)
	failed := panelError(p, errors.New("boom"))
	require.Equal(t, "error", failed.Status)
	require.Equal(t, "Could not read this panel: boom", failed.Message)
	require.Len(t, p.Rows, 1, "the input is not changed")
}
