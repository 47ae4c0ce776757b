package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

func TestParseJump(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]jumpQuery{
		"1234":                 {id: 1234},
		" #1234 ":              {id: 1234},
		"job 77":               {kind: "job", id: 77},
		"J#77":                 {kind: "job", id: 77},
		"pid 4242":             {kind: "pid", id: 4242},
		"p4242":                {kind: "pid", id: 4242},
		"incident 7":           {kind: "incident", id: 7},
		"Inc #7":               {kind: "incident", id: 7},
		"i7":                   {kind: "incident", id: 7},
		"queue emails":         {kind: "queue", name: "emails"},
		"emails-eu":            {kind: "queue", name: "emails-eu"},
		"pid":                  {kind: "queue", name: "pid"},
		"99999999999999999999": {kind: "queue", name: "99999999999999999999"},
	} {
		require.Equal(t, want, parseJump(in), in)
	}
}

func TestMatchQueue(t *testing.T) {
	t.Parallel()
	names := []string{"emails", "emails-eu", "Reports", "billing"}
	exact, near := matchQueue(names, "emails")
	require.Equal(t, "emails", exact)
	require.Empty(t, near)
	exact, _ = matchQueue(names, "reports")
	require.Equal(t, "Reports", exact, "the only name equal but for case")
	exact, near = matchQueue(names, "mail")
	require.Empty(t, exact)
	require.Equal(t, []string{"emails", "emails-eu"}, near)
	exact, near = matchQueue(names, "nothing")
	require.Empty(t, exact)
	require.Empty(t, near)
}

// TestJump checks where the jump box goes through the real server: a job,
// an incident, a queue, a number that is both a job and an incident, a
// live session by pid, and what it says when nothing matches.
func TestJump(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.exec(t, `INSERT INTO jobs (id, queue, kind) OVERRIDING SYSTEM VALUE VALUES (5, 'emails-eu', 'send'), (900, 'emails-us', 'send')`)
	inc, err := audit.IncidentOpen(ctx, e.srv.cfg.Pool, audit.IncidentOpenParams{Title: "disk", OpenedBy: "admin"})
	require.NoError(t, err)
	c := e.signedIn(t, "viewer")
	jump := func(q string) (*http.Response, string) {
		return c.get("/jump?q=" + url.QueryEscape(q))
	}
	redirects := func(q, to string) {
		t.Helper()
		resp, body := jump(q)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "%s: %s", q, body)
		require.Equal(t, to, resp.Header.Get("Location"), q)
	}
	redirects("900", "/jobs/900")
	redirects("job 5", "/jobs/5")
	redirects(fmt.Sprintf("incident %d", inc.ID), fmt.Sprintf("/incidents/%d", inc.ID))
	redirects("emails-eu", "/queues/emails-eu")
	redirects("queue emails-us", "/queues/emails-us")

	// Job 1 does not exist; a number shared by a job and the incident asks.
	e.exec(t, `INSERT INTO jobs (id, queue, kind) OVERRIDING SYSTEM VALUE VALUES ($1, 'emails-eu', 'send')`, inc.ID)
	resp, body := jump(fmt.Sprint(inc.ID))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="jump-choices"`)
	require.Contains(t, body, fmt.Sprintf(`href="/jobs/%d"`, inc.ID))
	require.Contains(t, body, fmt.Sprintf(`href="/incidents/%d"`, inc.ID))

	_, body = jump("emails")
	require.Contains(t, body, "No queue is named exactly")
	require.Contains(t, body, `href="/queues/emails-eu"`)
	require.Contains(t, body, `href="/queues/emails-us"`)
	_, body = jump("job 424242")
	require.Contains(t, body, "No job has id 424242")
	_, body = jump("pid 1")
	require.Contains(t, body, "No active session has pid 1 any more")
	_, body = jump("nope")
	require.Contains(t, body, `No queue is named &#34;nope&#34;`)
	_, body = jump(strings.Repeat("x", maxFilterText+1))
	require.Contains(t, body, "characters")

	// A session idle in a transaction is found by its pid.
	conn, err := e.srv.cfg.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid int
	require.NoError(t, conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = conn.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	defer conn.Exec(context.Background(), "ROLLBACK")
	resp, body = jump(fmt.Sprintf("pid %d", pid))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="jump-backend"`)
	require.Contains(t, body, "idle in transaction")
}

func TestIncidentPillView(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 7, 10, 0, 0, time.UTC)
	p := incidentPillView(audit.Incident{ID: 4, Title: "replica lag", WindowStart: now.Add(-12 * time.Minute)}, now)
	require.Equal(t, &views.IncidentPill{Title: "Incident #4: replica lag", Href: "/incidents/4",
		Opened: views.Age{Text: "12m00s ago", UTC: "2026-12-03T06:58:00Z"}}, p)
}

// TestIncidentPillAbsentWhenDatabaseFails: a database that cannot answer
// costs the page its pill, quickly, and nothing else.
func TestIncidentPillAbsentWhenDatabaseFails(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	_, err := audit.IncidentOpen(ctx, e.srv.cfg.Pool, audit.IncidentOpenParams{Title: "disk", OpenedBy: "admin"})
	require.NoError(t, err)
	require.NotNil(t, e.srv.incidentPill(ctx))
	e.srv.cfg.Pool.Close()
	e.srv.openIncidents.Invalidate()
	start := time.Now()
	require.Nil(t, e.srv.incidentPill(ctx))
	require.Less(t, time.Since(start), incidentPillWait+time.Second)
}

// TestColumnHeadings: every column of the diagnostics catalog has a
// heading in words, not its catalog name.
func TestColumnHeadings(t *testing.T) {
	t.Parallel()
	for _, ck := range diagnostics.Catalog() {
		for _, col := range ck.Columns {
			h := views.ColumnLabel(col.Name)
			require.NotEmpty(t, h, col.Name)
			require.NotContains(t, h, "_", "%s.%s: %q", ck.Name, col.Name, h)
			require.Equal(t, strings.ToUpper(h[:1]), h[:1], "%s.%s: %q starts with a capital", ck.Name, col.Name, h)
			require.NotRegexp(t, `\b(tup|blks|xact|lsn|fpi|ms|n)\b`, h, "%s.%s: %q", ck.Name, col.Name, h)
		}
	}
	require.Equal(t, "Dead rows", views.ColumnLabel("n_dead_tup"))
	require.Equal(t, "Some new thing", views.ColumnLabel("some_new_thing_seconds"), "an unknown name is spelled out")
}

// The jump page offers a session what the blocking tree offers a root like
// it: "Cancel job #N" first when a worker runs a job in it, and the
// signals only where the guards would let them through; the console's own
// connection gets the reason instead of buttons.
func TestJumpBackendOffersFollowTheGuards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	c := e.signedIn(t, "operator")
	worker := testdb.Connect(t, e.url, "console-worker job=77")
	_, err := worker.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = worker.Exec(ctx, "SELECT 1")
	require.NoError(t, err)
	defer worker.Exec(context.Background(), "ROLLBACK")
	_, body := c.get(fmt.Sprintf("/jump?q=pid+%d", worker.PgConn().PID()))
	require.Contains(t, body, `data-testid="jump-backend"`)
	cancelJob := strings.Index(body, "Cancel job #77")
	require.Positive(t, cancelJob, "a worker's session offers cancelling its job:\n%s", body)
	signal := strings.Index(body, `data-testid="action-backend.cancel"`)
	require.Greater(t, signal, cancelJob, "the job's cancel comes before the signals")
	require.NotContains(t, body, `data-testid="refused-`)

	require.NoError(t, e.srv.cfg.Diagnostics.BlockingTree(ctx).Err)
	own := e.srv.cfg.Diagnostics.OwnPIDs()
	require.NotEmpty(t, own)
	m := jumpBackendView(diagnostics.Backend{PID: own[0], State: "idle in transaction"}, auth.RoleOperator, time.Now(), e.srv.backendGuard(ctx))
	require.Len(t, m.Actions, 1, "one refusal instead of both signals: %+v", m.Actions)
	require.Equal(t, fmt.Sprintf("Not offered: backend %d is the console's own connection.", own[0]), m.Actions[0].Refused)
	require.Empty(t, m.Actions[0].Href)
}
