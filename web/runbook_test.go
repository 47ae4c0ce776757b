package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
)

// TestRunbookContentIsWired: every panel a step or page names is a query of
// the diagnostics catalog, every action is registered, every catalog step
// and targeted-runbook step exists.
func TestRunbookContentIsWired(t *testing.T) {
	catalog := map[string]bool{}
	for _, c := range diagnostics.Catalog() {
		catalog[c.Name] = true
		_, ok := runbookStepBySlug(c.Step)
		require.True(t, ok, "catalog query %s names step %q", c.Name, c.Step)
	}
	require.Len(t, runbookSteps, 12)
	for i, st := range runbookSteps {
		require.Equal(t, i+1, st.Number)
		require.NotEmpty(t, st.Purpose, st.Slug)
		require.NotEmpty(t, st.LookFor, st.Slug)
		require.NotEmpty(t, st.Traps, st.Slug)
		require.NotEmpty(t, diagnostics.StepPanels(st.Slug), "step %s shows no panel", st.Slug)
		for _, a := range st.Actions {
			_, ok := actions.Lookup(a)
			require.True(t, ok, "step %s names action %q", st.Slug, a)
		}
	}
	for _, tg := range runbookTargets {
		require.True(t, strings.HasPrefix(tg.Slug, "rb-"))
		for _, s := range tg.Steps {
			_, ok := runbookStepBySlug(s)
			require.True(t, ok, "%s names step %q", tg.Slug, s)
		}
		for _, a := range tg.Actions {
			_, ok := actions.Lookup(a)
			require.True(t, ok, "%s names action %q", tg.Slug, a)
		}
	}
	for _, dp := range databasePages {
		for _, p := range dp.panels {
			require.True(t, catalog[p], "database page %s names panel %q", dp.slug, p)
		}
	}
}

func TestRunbookPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	body := c.page("/runbook")
	require.Contains(t, body, `data-testid="runbook-steps"`)
	require.Contains(t, body, `data-testid="step-blocking"`)

	body = c.page("/runbook/blocking")
	require.Contains(t, body, `data-testid="runbook-step-blocking"`)
	require.Contains(t, body, `data-testid="slot-blocking_tree"`)
	require.Contains(t, body, `data-testid="step-prev"`)
	require.Contains(t, body, `data-testid="step-next"`)
	// Offered, or shown refused with its reason when the evidence names a
	// root in another test's database of the shared server.
	require.Regexp(t, `data-testid="(action|refused)-backend\.cancel"`, body, "an operator may cancel")
	require.NotRegexp(t, `data-testid="(action|refused)-backend\.terminate"`, body, "terminate is for admins")

	body = c.page("/runbook/window")
	require.NotContains(t, body, `data-testid="step-prev"`, "the first step has no previous")

	body = c.page("/runbook/rb-g")
	require.Contains(t, body, `data-testid="runbook-rb-g"`)

	body = c.page("/runbook/blocking", "Accept", "application/json")
	require.Contains(t, body, `"slug":"blocking"`)

	resp, _ := c.get("/runbook/step-13")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestPanelsAndDatabasePages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	for _, ck := range diagnostics.Catalog() {
		resp, body := c.get("/panels/"+ck.Name, "HX-Request", "true")
		require.Equal(t, http.StatusOK, resp.StatusCode, ck.Name)
		require.Contains(t, body, `data-testid="panel-`+ck.Name+`"`)
		require.NotContains(t, body, `data-status="error"`, "%s failed: %s", ck.Name, body)
	}
	body := c.page("/panels/queue_health", "Accept", "application/json")
	require.Contains(t, body, `"sql"`)
	require.Contains(t, body, `"status":"ok"`)
	resp, _ := c.get("/panels/drop_table")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	for _, dp := range databasePages {
		body := c.page("/database/" + dp.slug)
		require.Contains(t, body, `data-testid="database-`+dp.slug+`"`)
	}
	resp, _ = c.get("/database/nowhere")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestIncidentPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	body := c.page("/incidents")
	require.Contains(t, body, `data-testid="incident-open-form"`)
	require.Contains(t, body, `data-testid="empty"`)

	resp, body := c.post("/incidents", url.Values{"_csrf": {c.csrf}, "title": {""}})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, "title")
	resp, body = c.post("/incidents", url.Values{"_csrf": {c.csrf}, "title": {"x"}, "started": {"yesterday"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "is not a UTC time")

	resp, _ = c.post("/incidents", url.Values{"_csrf": {c.csrf}, "title": {"queue backlog"}, "impact": {"emails late"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.Equal(t, "/incidents/1", loc)

	_, err := e.srv.cfg.Pool.Exec(context.Background(), "INSERT INTO jobs (queue, kind) VALUES ('mail', 'send'), ('mail', 'send')")
	require.NoError(t, err)
	resp, _ = c.post("/incidents/1/capture", url.Values{"_csrf": {c.csrf}, "panel": {"queue_health"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, body = c.post("/incidents/1/capture", url.Values{"_csrf": {c.csrf}, "panel": {"nope"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, `no diagnostics panel named &#34;nope&#34;`)
	resp, body = c.post("/incidents/1/notes", url.Values{"_csrf": {c.csrf}, "text": {"  "}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "the note is empty")
	resp, _ = c.post("/incidents/1/notes", url.Values{"_csrf": {c.csrf}, "text": {"paused mail | then | resumed"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// The capture is listed once, drawn as the live panel is; the note
	// joins the timeline.
	resp, body = c.get(loc)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 1, strings.Count(body, `data-testid="timeline-evidence"`))
	require.NotContains(t, body, "incident.capture incident:1", "a capture is its evidence, not also an action")
	require.Contains(t, body, `data-testid="timeline-action"`, "the incident.open action")
	require.Contains(t, body, `data-testid="timeline-panel"`)
	live := c.page("/panels/queue_health")
	require.Equal(t, theadOf(t, live), theadOf(t, body), "the capture has the live panel's headings")
	require.Regexp(t, `<div class="cv">mail ?</div>`, body, "and its cells")
	require.Contains(t, body, `data-testid="timeline-note"`)
	require.Contains(t, body, "paused mail | then | resumed")

	// The export starts with a summary and shows the capture as a table
	// under the panel's headings.
	resp, body = c.get("/incidents/1/export.md")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/markdown")
	require.Contains(t, body, "queue backlog")
	summary, timeline := strings.Index(body, "## Summary"), strings.Index(body, "## Timeline")
	require.True(t, summary >= 0 && summary < timeline, "summary before timeline:\n%s", body)
	require.Contains(t, body[summary:timeline], `Kept: 1 capture (Queues, leases and dead letters), 1 note, `)
	require.Contains(t, body[summary:timeline], "Impact: emails late.")
	require.Regexp(t, `\| Queue \|[^\n]*\n\|( --- \|)+\n\| mail \|`, body)
	require.Contains(t, body, `paused mail \| then \| resumed`, "the note, its pipes escaped in the timeline's cell")
	require.NotContains(t, body, `incident.capture`)
	require.Contains(t, body, "Captured by operator: captured queue_health into incident 1.", "the capture's reason stays with its evidence")

	resp, _ = c.post("/incidents/1/close", url.Values{"_csrf": {c.csrf}, "summary": {"drained"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = c.get(loc)
	require.NotContains(t, body, `data-testid="incident-close-form"`)

	resp, _ = c.get("/incidents/abc")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = c.get("/incidents/99")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	viewer := e.signedIn(t, "viewer")
	_, _ = viewer.get("/incidents")
	resp, _ = viewer.post("/incidents", url.Values{"_csrf": {viewer.csrf}, "title": {"x"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestPanelUnderLockSaysWhoHoldsIt: with the jobs table locked ACCESS
// EXCLUSIVE by another session, the queue panel answers with who holds the
// lock instead of hanging, and the overview still renders.
func TestPanelUnderLockSaysWhoHoldsIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, e.url)
	require.NoError(t, err)
	defer holder.Close(ctx)
	var pid int32
	require.NoError(t, holder.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))
	_, err = holder.Exec(ctx, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	c := e.signedIn(t, "viewer")
	body := c.page("/panels/queue_health", "HX-Request", "true")
	require.Contains(t, body, `data-testid="panel-locked"`)
	require.Contains(t, body, fmt.Sprint(pid))

	body = c.page("/")
	require.Contains(t, body, `data-testid="findings"`)
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
}

// theadRE is a table's heading row, as templ writes it.
var theadRE = regexp.MustCompile(`(?s)<thead>.*?</thead>`)

// theadOf is the first table heading of body.
func theadOf(t *testing.T, body string) string {
	t.Helper()
	h := theadRE.FindString(body)
	require.NotEmpty(t, h, "no table heading in the page")
	return h
}
