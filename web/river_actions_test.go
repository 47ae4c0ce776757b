package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// A River discard burst on the dead letters page: an operator's row links
// to river.retry for its queue and class, and retrying the class through
// the API (with a reason) goes through River's client, which gives each
// job one more attempt, and the audit row names the four jobs. A viewer's
// page has no such link.
func TestRiverRetryFromDeadLetters(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	ctx := context.Background()
	e := riverSetup(t)
	const class = "ship order ?: carrier timeout"

	viewer := sourcePage(t, e.signedIn(t, auth.RoleViewer), "/deadletters").Panels[0]
	for _, col := range viewer.Columns {
		require.NotEqual(t, "Action", col.Label, "a viewer may not retry")
	}
	op := e.signedIn(t, auth.RoleOperator)
	groups := sourcePage(t, op, "/deadletters").Panels[0]
	cell := cellOf(t, groups, groups.Rows[0], "Action")
	require.Contains(t, cell.Href, "river.retry")
	require.Contains(t, cell.Href, "queue=default")
	require.Contains(t, cell.Href, "error_class=ship+order")

	token, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci-operator", auth.RoleOperator)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"params": map[string]any{"queue": "default", "error_class": class}, "reason": "carrier is back"})
	require.NoError(t, err)
	resp, out := e.client(t).apiPost("/api/v1/actions/river.retry", token, string(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, out)

	var result struct {
		AuditID int64                   `json:"audit_id"`
		Result  actions.RiverJobsResult `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &result))
	require.Len(t, result.Result.IDs, 4)
	var auditResult string
	require.NoError(t, e.srv.cfg.Pool.QueryRow(ctx, "SELECT result::text FROM audit_events WHERE id = $1 AND action = 'river.retry' AND reason = 'carrier is back'",
		result.AuditID).Scan(&auditResult))
	for _, id := range result.Result.IDs {
		require.Contains(t, auditResult, `"id": `+itoa64(id), "the audit row names job %d", id)
	}
	require.Equal(t, 4, testdb.Count(t, e.srv.cfg.Pool, "SELECT count(*) FROM river_job WHERE kind = 'fail' AND max_attempts = 2"),
		"River gave each retried job one more attempt")
	require.True(t, strings.Contains(op.page("/audit"), "river.retry"), "the audit page lists the retry")
}
