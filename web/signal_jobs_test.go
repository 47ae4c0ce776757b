package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
)

// lockedParamRE finds the parameters a preview posts back as hidden inputs.
var lockedParamRE = regexp.MustCompile(`<input type="hidden" name="(p\.[a-z_]+)" value="([^"]*)"`)

// previewForm posts an action's preview with params as c and returns the
// form that executes it (the preview's locked parameters, its seal and
// reason) and the preview page.
func previewForm(t *testing.T, c *client, name string, params url.Values, reason string) (url.Values, string) {
	t.Helper()
	_, _ = c.get("/actions/" + name)
	form := url.Values{"_csrf": {c.csrf}}
	for k, v := range params {
		form["p."+k] = v
	}
	resp, body := c.post("/actions/"+name+"/preview", form)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	for _, m := range lockedParamRE.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	form.Set("preview", sealOf(t, body))
	form.Set("reason", reason)
	return form, body
}

// Cancelling the root blocker through the pages: the preview says the
// root's job goes dead (its last attempt) and the two jobs queued behind
// it go on; the result says what happened to each and leads on to the
// jobs, the runbook step, the open incident and capturing the tree now.
func TestCancelRootSaysWhatHappensToTheJobs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	root, pid, waiting := workerChain(t, e, 1, 2)
	inc, err := audit.IncidentOpen(context.Background(), e.owner, audit.IncidentOpenParams{Title: "reports stuck", OpenedBy: "olga"})
	require.NoError(t, err)
	op := e.signedIn(t, "operator")

	form, body := previewForm(t, op, "backend.cancel", url.Values{"pid": {fmt.Sprint(pid)}}, "the report job holds the ledger row")
	require.Contains(t, body, fmt.Sprintf("job #%d (<code>report</code>, queue <code>reports</code>) fails this attempt and goes dead: attempt 1, max attempts 1", root))
	require.Contains(t, body, fmt.Sprintf("the 2 waiting jobs #%d, #%d go on once the lock is released", waiting[0], waiting[1]))

	resp, body := op.post("/actions/backend.cancel", form)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="action-done"`)
	require.Contains(t, body, "the chain cleared")
	require.Contains(t, body, fmt.Sprintf("job #%d (<code>report</code>, queue <code>reports</code>) went dead: attempt 1 of 1 failed", root))
	require.Contains(t, body, fmt.Sprintf("waiting jobs: #%d, #%d went on", waiting[0], waiting[1]))
	require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM jobs WHERE id = $1 AND status = 'dead'", root))

	for _, want := range []string{
		fmt.Sprintf(`href="/jobs/%d" data-testid="result-follow">Open job #%d</a>`, root, root),
		fmt.Sprintf(`href="/jobs/%d" data-testid="result-follow">Open job #%d</a>`, waiting[1], waiting[1]),
		`href="/runbook/blocking" data-testid="result-follow">Back to the runbook: blocking</a>`,
		fmt.Sprintf(`href="/incidents/%d" data-testid="result-follow">Open incident #%d</a>`, inc.ID, inc.ID),
		fmt.Sprintf(`href="/actions/incident.capture?incident_id=%d&amp;panel=blocking_tree" data-testid="result-follow">Capture the after-state into incident #%d</a>`, inc.ID, inc.ID),
	} {
		require.Contains(t, body, want)
	}
}
