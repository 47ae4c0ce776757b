package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
)

// apiPost sends a JSON body to the actions API with a bearer token and
// extra headers as name, value pairs.
func (c *client) apiPost(path, token, body string, header ...string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(body))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

func TestActionsAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	opToken, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci-operator", auth.RoleOperator)
	require.NoError(t, err)
	viewerToken, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci-viewer", auth.RoleViewer)
	require.NoError(t, err)
	c := e.client(t)
	paused := func() bool {
		var p bool
		_ = e.srv.cfg.Pool.QueryRow(ctx, "SELECT coalesce((SELECT paused FROM queue_settings WHERE queue = 'emails'), false)").Scan(&p)
		return p
	}

	resp, body := c.apiPost("/api/v1/actions/queue.pause", opToken, `{"params": {"queue": "emails"}, "reason": "SMTP down", "dry_run": true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"preview"`)
	require.False(t, paused(), "a dry run changes nothing")

	resp, body = c.apiPost("/api/v1/actions/queue.pause", opToken, `{"params": {"queue": "emails"}, "reason": "SMTP down"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var out struct {
		AuditID int64 `json:"audit_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.Positive(t, out.AuditID)
	require.True(t, paused())

	for _, tc := range []struct {
		name, token, path, body string
		status                  int
		says                    string
	}{
		{"ViewerForbidden", viewerToken, "/api/v1/actions/queue.resume", `{"params": {"queue": "emails"}, "reason": "x"}`, http.StatusForbidden, "forbidden"},
		{"ReasonMissing", opToken, "/api/v1/actions/queue.resume", `{"params": {"queue": "emails"}}`, http.StatusUnprocessableEntity, "say why"},
		{"BadParam", opToken, "/api/v1/actions/queue.throttle", `{"params": {"queue": "emails", "max_workers": "lots"}, "reason": "x"}`, http.StatusUnprocessableEntity, "max_workers"},
		{"WrongType", opToken, "/api/v1/actions/incident.open", `{"params": {"title": "x", "impact": 5}, "reason": "x"}`,
			http.StatusUnprocessableEntity, "impact: must be a string, not a number"},
		{"UnknownAction", opToken, "/api/v1/actions/database.drop", `{"reason": "x"}`, http.StatusNotFound, "no action"},
		{"NotJSON", opToken, "/api/v1/actions/queue.resume", `pause it`, http.StatusBadRequest, "must be JSON"},
		{"GuardRefuses", opToken, "/api/v1/actions/backend.cancel",
			`{"params": {"pid": 999999, "backend_start": "2020-01-01T00:00:00Z"}, "reason": "x"}`, http.StatusConflict, "target changed"},
		{"BadToken", "pgc_nope", "/api/v1/actions/queue.resume", `{"reason": "x"}`, http.StatusUnauthorized, "not recognised"},
		{"TrailingGarbage", opToken, "/api/v1/actions/queue.resume", `{"params": {"queue": "emails"}, "reason": "x"} rm -rf`,
			http.StatusBadRequest, "nothing after it"},
		{"TwoObjects", opToken, "/api/v1/actions/queue.resume", `{"reason": "x"}{"reason": "y"}`, http.StatusBadRequest, "nothing after it"},
		{"NULInReason", opToken, "/api/v1/actions/queue.resume", `{"params": {"queue": "emails"}, "reason": "x\u0000y"}`,
			http.StatusUnprocessableEntity, "reason: must be UTF-8 text without NUL"},
		{"NULInParam", opToken, "/api/v1/actions/queue.resume", `{"params": {"queue": "e\u0000"}, "reason": "x"}`,
			http.StatusUnprocessableEntity, "queue: contains a NUL"},
		{"HugeRate", opToken, "/api/v1/actions/queue.throttle", `{"params": {"queue": "emails", "rate_per_second": 1e19}, "reason": "x"}`,
			http.StatusUnprocessableEntity, "rate_per_second: 1e19 is out of range: give a number between 0.001 and 1e+06"},
		{"FutureBeforeNow", opToken, "/api/v1/actions/incident.open", `{"params": {"title": "t", "window_start": "2999-01-01T00:00:00Z"}, "reason": "x"}`,
			http.StatusUnprocessableEntity, "window_start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := c.apiPost(tc.path, tc.token, tc.body)
			require.Equal(t, tc.status, resp.StatusCode, body)
			require.Contains(t, body, tc.says)
		})
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "", "application/json-patch+json"} {
		t.Run("ContentType"+ct, func(t *testing.T) {
			resp, body := c.apiPost("/api/v1/actions/queue.resume", opToken, `{"params": {"queue": "emails"}, "reason": "x"}`,
				"Content-Type", ct)
			require.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, body)
			require.Contains(t, body, "application/json")
		})
	}
	resp, body = c.apiPost("/api/v1/actions/queue.pause", opToken, `{"params": {"queue": "emails"}, "reason": "x", "dry_run": true}`,
		"Content-Type", "application/json; charset=utf-8")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.True(t, paused(), "nothing refused changed the queue")
}

// An API client that retries an action with the same Idempotency-Key gets
// the first answer replayed and the action runs once; the same key with
// another body is refused; keys are per caller.
func TestActionsAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	pool := e.srv.cfg.Pool
	ciToken, err := auth.TokenCreate(ctx, pool, "ci", auth.RoleOperator)
	require.NoError(t, err)
	cdToken, err := auth.TokenCreate(ctx, pool, "cd", auth.RoleOperator)
	require.NoError(t, err)
	c := e.client(t)
	const path = "/api/v1/actions/incident.open"
	const body = `{"params": {"title": "Checkout errors"}, "reason": "pager: 5xx on checkout"}`
	outcome := func(o string) float64 { return testutil.ToFloat64(e.srv.metrics.idempotency.WithLabelValues(o)) }

	first, firstBody := c.apiPost(path, ciToken, body, IdempotencyKeyHeader, "open-checkout-1")
	require.Equal(t, http.StatusOK, first.StatusCode, firstBody)
	require.Empty(t, first.Header.Get(IdempotencyReplayedHeader))
	var out struct {
		AuditID int64 `json:"audit_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(firstBody), &out))
	require.Positive(t, out.AuditID)

	again, againBody := c.apiPost(path, ciToken, body, IdempotencyKeyHeader, "open-checkout-1")
	require.Equal(t, http.StatusOK, again.StatusCode, againBody)
	require.Equal(t, "true", again.Header.Get(IdempotencyReplayedHeader))
	require.JSONEq(t, firstBody, againBody)
	require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM audit_events WHERE action = 'incident.open'"), "the action ran once")
	require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM incidents"))
	require.Equal(t, 1.0, outcome("new"))
	require.Equal(t, 1.0, outcome("replayed"))

	t.Run("DifferentBody", func(t *testing.T) {
		resp, got := c.apiPost(path, ciToken, `{"params": {"title": "Checkout down"}, "reason": "pager"}`,
			IdempotencyKeyHeader, "open-checkout-1")
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
		require.Contains(t, got, "different request")
		require.Equal(t, 1.0, outcome("mismatch"))
		require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM audit_events WHERE action = 'incident.open'"))
	})
	t.Run("KeysArePerCaller", func(t *testing.T) {
		resp, got := c.apiPost(path, cdToken, body, IdempotencyKeyHeader, "open-checkout-1")
		require.Equal(t, http.StatusOK, resp.StatusCode, got)
		require.Empty(t, resp.Header.Get(IdempotencyReplayedHeader))
		require.Equal(t, 2, e.queryInt(t, "SELECT count(*) FROM incidents"))
		require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM idempotency_requests WHERE scope = 'console:token:cd' AND state = 'completed'"))
	})
	t.Run("RefusalIsNotStored", func(t *testing.T) {
		// A refused attempt is audited but its answer is not kept: the
		// retry is judged again (and, the same refusal within the refusal
		// window, folded into the first one's window instead of audited).
		for range 2 {
			resp, got := c.apiPost(path, ciToken, `{"params": {"title": "x"}}`, IdempotencyKeyHeader, "no-reason")
			require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, got)
			require.Contains(t, got, "say why")
		}
		require.Equal(t, 1, e.queryInt(t, "SELECT count(*) FROM audit_events WHERE outcome = 'refused'"))
		require.Equal(t, 0, e.queryInt(t, "SELECT count(*) FROM idempotency_requests WHERE idempotency_key = 'no-reason'"))
	})
}

func TestActionsUI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	op := e.signedIn(t, "operator")

	resp, body := op.get("/actions")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="actions"`)
	require.Contains(t, body, "queue.throttle")

	resp, body = op.get("/actions/queue.throttle?queue=emails&max_workers=2")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="action-form-edit"`)
	require.Contains(t, body, `value="emails"`)
	require.Contains(t, body, "Queue emails now: running, max workers no limit, rate no limit", "the form shows the present limits")

	// Where the set of values is known, the form offers it.
	resp, body = op.get("/actions/incident.capture")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<option value="blocking_tree">`)
	resp, body = op.get("/actions/backend.cancel?pid=42&backend_start=2026-01-01T00:00:00Z")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, "backend start", "a guard is never shown")
	require.Contains(t, body, `type="hidden" name="p.backend_start"`, "but carried")

	form := url.Values{"_csrf": {op.csrf}, "p.queue": {"emails"}, "p.max_workers": {"2"}}
	resp, body = op.post("/actions/queue.throttle/preview", form, "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="action-preview"`)
	require.NotContains(t, body, "<html", "htmx gets the fragment")
	form.Set("preview", sealOf(t, body))

	resp, body = op.post("/actions/queue.throttle", form, "HX-Request", "true")
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, body, `data-testid="action-error"`)
	require.Contains(t, body, "say why")

	form.Set("reason", "SMTP provider throttling us")
	resp, body = op.post("/actions/queue.throttle", form)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="action-done"`)
	require.Contains(t, body, `data-testid="audit-link"`)

	viewer := e.signedIn(t, "viewer")
	_, _ = viewer.get("/actions/queue.pause?queue=emails")
	resp, body = viewer.post("/actions/queue.pause", url.Values{"_csrf": {viewer.csrf}, "p.queue": {"emails"}, "reason": {"x"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "queue.pause needs the operator role")

	resp, _ = op.get("/actions/nope")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
