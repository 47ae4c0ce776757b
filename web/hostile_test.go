package web

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// serve sends one request straight to the server's handler, from remote.
func (e *env) serve(method, target, remote string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Method = method
	req.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return rec
}

// TestRequestMetricsLabelsAreBounded sends requests with made-up methods
// and paths and checks that the request metrics gain no series for them
// (method "other", route "unmatched" or a registered pattern) and that
// their log lines clip the method.
func TestRequestMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := setupWith(t, setupOpts{log: &logs})
	const n = 40
	for i := range n {
		method := fmt.Sprintf("X%03d%s", i, strings.Repeat("M", 2000))
		path := fmt.Sprintf("/made-up/%d/%s", i, strings.Repeat("p", 1000))
		e.serve(method, path, "192.0.2.1:1000")
		e.serve(method, "/healthz", "192.0.2.1:1000")
		e.serve(http.MethodGet, fmt.Sprintf("/jobs/%d/x%d", i, i), "192.0.2.1:1000")
	}

	families, err := e.srv.cfg.Gatherer.Gather()
	require.NoError(t, err)
	series := 0
	for _, f := range families {
		if f.GetName() != "console_http_requests_total" && f.GetName() != "console_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					require.True(t, standardMethods[l.GetValue()] || l.GetValue() == "other", "method label %.40q", l.GetValue())
				case "route":
					require.True(t, e.srv.routePatterns[l.GetValue()] || l.GetValue() == "unmatched", "route label %.40q", l.GetValue())
				case "code":
					require.Regexp(t, `^\d{3}$`, l.GetValue())
				}
			}
		}
	}
	require.Less(t, series, 20, "%d requests with made-up methods and paths made %d series", 3*n, series)

	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		require.Less(t, len(sc.Bytes()), 2048, "a log line of %d bytes: %.200s", len(sc.Bytes()), sc.Text())
	}
	require.Positive(t, lines)
}

// TestRequestIDIsTheConsoles: a client's X-Request-Id is replaced unless a
// trusted proxy sent it and it is short and plain.
func TestRequestIDIsTheConsoles(t *testing.T) {
	t.Parallel()
	e := setupWith(t, setupOpts{configure: func(c *Config) { c.TrustedProxies = []string{"10.1.2.3"} }})
	id := func(remote, sent string) string {
		rec := e.serve(http.MethodGet, "/healthz", remote, "X-Request-Id", sent)
		got := rec.Header().Get("X-Request-Id")
		require.Regexp(t, `^[A-Za-z0-9._:-]{1,64}$`, got)
		return got
	}
	require.Equal(t, "lb-7f3a:42", id("10.1.2.3:5000", "lb-7f3a:42"), "a trusted proxy's plain id is kept")
	for _, bad := range []string{strings.Repeat("a", 65), strings.Repeat("a", 40<<10), "a b", `a"b`, "a\tb", "é"} {
		require.NotEqual(t, bad, id("10.1.2.3:5000", bad), "a trusted proxy's odd id %.40q is replaced", bad)
	}
	for _, sent := range []string{"lb-7f3a:42", "abcdefghijklmnop", strings.Repeat("a", 40<<10)} {
		require.NotEqual(t, sent, id("198.51.100.7:5000", sent), "an untrusted client's id %.40q is replaced", sent)
	}
}

// TestOutOfRangeInputIsABadRequest: an audit cursor beyond what the list
// takes and an Idempotency-Key the key store cannot hold are 400s that say
// what is accepted, not a 500 or a 503 a client would retry.
func TestOutOfRangeInputIsABadRequest(t *testing.T) {
	t.Parallel()
	e := setup(t)
	viewer := e.signedIn(t, auth.RoleViewer)
	for _, before := range []string{"9223372036854775807", "9223372036854775808", "2147483648", "-1", "0"} {
		resp, body := viewer.get("/audit?before="+before, "Accept", "application/json")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "before=%s: %s", before, body)
		require.Contains(t, body, "from 1 to 2147483647", "before=%s", before)
	}
	viewer.page("/audit?before=2147483647")

	token, err := auth.TokenCreate(t.Context(), e.srv.cfg.Pool, "hostile-operator", auth.RoleOperator)
	require.NoError(t, err)
	body := `{"params": {"queue": "hostile"}, "reason": "idempotency key test"}`
	for _, key := range []string{strings.Repeat("k", 50000), strings.Repeat("k", 256), "kéy"} {
		resp, answer := viewer.apiPost("/api/v1/actions/queue.pause", token, body, IdempotencyKeyHeader, key)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a %d-byte key: %s", len(key), answer)
		require.Contains(t, answer, "use 1 to 255 printable ASCII characters")
	}
	require.Zero(t, e.queryInt(t, "SELECT count(*) FROM idempotency_requests"))
	require.Zero(t, e.queryInt(t, "SELECT count(*) FROM queue_settings WHERE paused"), "a refused key ran the action")
	resp, answer := viewer.apiPost("/api/v1/actions/queue.pause", token, body, IdempotencyKeyHeader, strings.Repeat("k", 255))
	require.Equal(t, http.StatusOK, resp.StatusCode, answer)
}

// TestStalledDatabasePagesAnswer200 freezes the database and checks that
// every page served with its frame (the overview, a runbook step, a panel
// alone or refreshed by htmx) answers 200, saying the database is not
// answering, while /readyz and a write answer 503.
func TestStalledDatabasePagesAnswer200(t *testing.T) {
	t.Parallel()
	srv := testdb.NewServer(t, nil)
	e := setupWith(t, setupOpts{url: privateDatabase(t, srv)})
	c := e.signedIn(t, auth.RoleOperator)
	c.hc.Timeout = 20 * time.Second
	c.page("/incidents")
	c.page("/panels/blocking_tree")

	freezeServer(t, srv)
	waitUntil(t, 30*time.Second, "the console to see the database is not answering", func() bool {
		_, body := c.get("/status/database", "Accept", "application/json")
		return strings.Contains(body, `"answering":false`)
	})
	for _, tc := range []struct {
		path   string
		header []string
		says   string
	}{
		{"/panels/blocking_tree", nil, "Database not answering"},
		{"/panels/blocking_tree", []string{"HX-Request", "true"}, "Database not answering"},
		{"/", nil, `<nav class="side"`},
		{"/runbook/queues", nil, `<nav class="side"`},
	} {
		resp, body := c.get(tc.path, tc.header...)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s %v with the database frozen: %.300s", tc.path, tc.header, body)
		require.True(t, strings.Contains(body, tc.says), "GET %s %v does not say %q: %.300s", tc.path, tc.header, tc.says, body)
	}
	resp, _ := c.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "/readyz")
	resp, body := c.post("/incidents", url.Values{"_csrf": {c.csrf}, "title": {"written during the stall"}})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a write: %.300s", body)
}
