package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/static"
)

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	body := c.page("/healthz")
	require.JSONEq(t, `{"status":"ok","version":"test"}`, body)

	body = c.page("/readyz")
	var ready map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &ready))
	require.Equal(t, "ok", ready["status"])
}

func TestReadyzReportsSchemaBehind(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.owner.Exec(t.Context(), "UPDATE console_schema_version SET version = 1")
	require.NoError(t, err)
	resp, body := e.client(t).get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.JSONEq(t, `{"status":"unavailable"}`, body, "anonymous callers learn ready or not, no error text")
	viewer := e.signedIn(t, "viewer")
	resp, body = viewer.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "schema is behind", "a signed-in caller is told what failed")
}

func TestAnonymousIsSentToLogin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	resp, _ := c.get("/")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/login?next=%2F", resp.Header.Get("Location"))

	resp, body := c.get("/", "Accept", "application/json")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, `"error"`)

	resp, _ = c.get("/", "HX-Request", "true")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, "/login", resp.Header.Get("HX-Redirect"))

	// A wrong token is a 401, not a sign-in page it could loop on.
	resp, body = c.get("/queues", "Authorization", "Bearer pgc_wrong")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, "not recognised")
	require.Equal(t, "/", cleanNext("/login?next=/"))
}

func TestLoginLogout(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)

	_, _ = c.get("/login")
	resp, body := c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {"viewer"}, "password": {"wrong password"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, body, `data-testid="login-error"`)
	require.Contains(t, body, "Wrong name or password")

	c.login("viewer")
	body = c.page("/")
	for _, id := range []string{"topbar", "dbinfo", "footer", "logout"} {
		require.Contains(t, body, `data-testid="`+id+`"`)
	}
	require.Contains(t, body, "console@test/db")

	resp, _ = c.post("/logout", url.Values{"_csrf": {c.csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = c.get("/")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out: back to login")
}

func TestLoginIsRateLimited(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	_, _ = c.get("/login")
	var resp *http.Response
	var body string
	for i := 0; i < 6; i++ {
		resp, body = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {"admin"}, "password": {"guess"}})
	}
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Contains(t, body, "Too many failed attempts")
	// Even the right password waits now.
	resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {"admin"}, "password": {testPassword}})
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}

func TestPostWithoutCSRFIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "admin")
	resp, body := c.post("/logout", url.Values{})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "CSRF token")
	resp, _ = c.post("/logout", url.Values{"_csrf": {"x" + c.csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = c.post("/logout", url.Values{}, "X-CSRF-Token", c.csrf)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := setup(t)
	resp, _ := e.client(t).get("/login")
	h := resp.Header
	require.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	require.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline")
	require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"))
	require.Equal(t, "DENY", h.Get("X-Frame-Options"))
	var session, csrf *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == csrfCookieName(false) {
			csrf = ck
		}
		if ck.Name == sessionCookieName(false) {
			session = ck
		}
	}
	require.Nil(t, session)
	require.NotNil(t, csrf)
	require.True(t, csrf.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, csrf.SameSite)
}

func TestStaticAssetsAreImmutable(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	for _, name := range []string{static.HTMX, "app.css", "app.js", "favicon.svg"} {
		resp, body := c.get(static.Path(name))
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		require.Contains(t, resp.Header.Get("Cache-Control"), "immutable", name)
		require.NotEmpty(t, body)
	}
	resp, _ := c.get("/static/abc/../../etc/passwd")
	require.NotEqual(t, http.StatusOK, resp.StatusCode)
	resp, _ = c.get("/static/abc/missing.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	_, _ = c.get("/healthz")
	body := c.page("/metrics")
	require.Contains(t, body, `console_http_requests_total{code="200",method="GET",route="/healthz"}`)
}

func TestRenderAnswersJSONAndFragments(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	resp, body := c.get("/", "Accept", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
	require.Contains(t, body, `"generated_at"`)

	body = c.page("/", "HX-Request", "true")
	require.NotContains(t, body, "<html", "an htmx request gets the fragment only")
	require.Contains(t, body, `data-testid="findings"`)

	resp, body = c.get("/no-such-page")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, body, `data-testid="error"`)
}

// logBuffer collects a server's JSON log lines; safe for the server's
// goroutines and the test.
type logBuffer struct{ logbuf.Buffer }

// lines returns the log lines with message msg whose request_id is id. The
// request's line is written after its answer, so it waits up to 10s for one.
func (b *logBuffer) lines(t *testing.T, msg, id string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text := b.String()
		var out []map[string]any
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			var line map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
			if line["msg"] == msg && line["request_id"] == id {
				out = append(out, line)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Every refused request gets one "request refused" line with its request
// id, the actor, the status and the reason.
func TestRefusedRequestsAreLogged(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := setupWith(t, setupOpts{log: &logs})
	ctx := context.Background()
	opToken, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci-operator", auth.RoleOperator)
	require.NoError(t, err)
	viewerToken, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci-viewer", auth.RoleViewer)
	require.NoError(t, err)
	browser := e.signedIn(t, "operator")
	api := e.client(t)
	anonymous := e.client(t)
	_, _ = anonymous.get("/login")

	for _, tc := range []struct {
		name   string
		do     func() *http.Response
		status int
		actor  string
		reason string
	}{
		{"CSRF", func() *http.Response { r, _ := browser.post("/logout", url.Values{}); return r },
			http.StatusForbidden, "operator", "CSRF token"},
		{"BadToken", func() *http.Response { r, _ := api.apiPost("/api/v1/actions/queue.pause", "pgc_nope", `{}`); return r },
			http.StatusUnauthorized, "", "not recognised"},
		{"Role", func() *http.Response {
			r, _ := api.apiPost("/api/v1/actions/queue.pause", viewerToken, `{"params": {"queue": "q"}, "reason": "x"}`)
			return r
		}, http.StatusForbidden, "ci-viewer", "forbidden"},
		{"NoReason", func() *http.Response {
			r, _ := api.apiPost("/api/v1/actions/queue.pause", opToken, `{"params": {"queue": "q"}}`)
			return r
		}, http.StatusUnprocessableEntity, "ci-operator", "say why"},
		{"Guard", func() *http.Response {
			r, _ := api.apiPost("/api/v1/actions/backend.cancel", opToken,
				`{"params": {"pid": 999999, "backend_start": "2020-01-01T00:00:00Z"}, "reason": "x"}`)
			return r
		}, http.StatusConflict, "ci-operator", "target changed"},
		{"ActionForm", func() *http.Response {
			r, _ := browser.post("/actions/queue.pause", url.Values{"_csrf": {browser.csrf}, "p.queue": {"q"}})
			return r
		}, http.StatusUnprocessableEntity, "operator", "Execute needs a preview"},
		{"LoginRateLimited", func() *http.Response {
			var r *http.Response
			for range 6 {
				r, _ = anonymous.post("/login", url.Values{"_csrf": {anonymous.csrf}, "name": {"admin"}, "password": {"guess"}})
			}
			return r
		}, http.StatusTooManyRequests, "", "too many failed sign-ins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tc.do()
			require.Equal(t, tc.status, resp.StatusCode)
			id := resp.Header.Get("X-Request-Id")
			require.NotEmpty(t, id)
			lines := logs.lines(t, "request refused", id)
			require.Len(t, lines, 1)
			line := lines[0]
			require.Equal(t, "WARN", line["level"])
			require.EqualValues(t, tc.status, line["status"])
			require.Equal(t, tc.actor, line["actor"])
			require.Contains(t, line["reason"], tc.reason)
		})
	}
}
