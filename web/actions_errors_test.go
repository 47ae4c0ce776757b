package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// previewParamRE finds the parameters a preview page sends back with
// Execute, guard values included.
var previewParamRE = regexp.MustCompile(`type="hidden" name="p\.([a-z_]+)" value="([^"]*)"`)

// TestActionRefusalsReadPlain: a refused action says on its form what
// happened and what to do next, in a sentence, without the error kind's name
// tacked on (the JSON API keeps it: TestActionsAPI).
func TestActionRefusalsReadPlain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	op := e.signedIn(t, "operator")
	previewForm := func(pid int) url.Values {
		_, _ = op.get("/actions/backend.cancel")
		return url.Values{"_csrf": {op.csrf}, "p.pid": {strconv.Itoa(pid)}}
	}

	t.Run("NoSuchPID", func(t *testing.T) {
		resp, body := op.post("/actions/backend.cancel/preview", previewForm(1))
		require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
		require.Equal(t, "No session has pid 1 any more; it may have finished. Refresh the blocking tree.", actionError(t, body))
	})
	t.Run("EndedSincePreview", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, e.url)
		require.NoError(t, err)
		pid := int(conn.PgConn().PID())
		form := previewForm(pid)
		resp, body := op.post("/actions/backend.cancel/preview", form)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		for _, m := range previewParamRE.FindAllStringSubmatch(body, -1) {
			form.Set("p."+m[1], html.UnescapeString(m[2]))
		}
		form.Set("preview", sealOf(t, body))
		form.Set("reason", "the session is in the way")
		require.NoError(t, conn.Close(ctx))
		waitUntil(t, 10*time.Second, "the session to end", func() bool {
			var n int
			require.NoError(t, e.srv.cfg.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n))
			return n == 0
		})
		resp, body = op.post("/actions/backend.cancel", form)
		require.Equal(t, http.StatusConflict, resp.StatusCode, body)
		require.Contains(t, actionError(t, body), "the session with pid "+strconv.Itoa(pid)+" has ended since the preview; it may have finished. Refresh the blocking tree.")
		require.NotContains(t, actionError(t, body), "target changed")
		require.NotContains(t, actionError(t, body), "refused too", "the target is gone; a second refusal saying so adds nothing")
	})
}

var actionErrorRE = regexp.MustCompile(`data-testid="action-error">([^<]*)<`)

// actionError is the text of the error an action's form shows.
func actionError(t *testing.T, body string) string {
	t.Helper()
	m := actionErrorRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page shows no action error")
	return html.UnescapeString(m[1])
}
