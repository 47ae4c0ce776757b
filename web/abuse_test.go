package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// postRoute is what the abuse test needs to know of one POST route: a
// well-formed request to it, and the least role that may change anything
// through it ("" for the sign-in routes, which take no role).
type postRoute struct {
	// path is the route's pattern with its parameters filled in; {incident}
	// stands for an open incident's id.
	path string
	// form is the body of a form route; api routes take json with a
	// bearer token instead.
	form url.Values
	api  bool
	json string
	role string
}

// postRoutes lists every POST route the console serves, by echo pattern.
// TestEveryPostRouteRefusesAbuse fails for a route missing here, so a new
// route is covered once its author says what a good request to it is.
var postRoutes = map[string]postRoute{
	"/login":                 {path: "/login", form: url.Values{"name": {"admin"}, "password": {testPassword}}},
	"/logout":                {path: "/logout", form: url.Values{}},
	"/api/v1/alerts":         {path: "/api/v1/alerts", api: true, json: `{"status": "firing", "alerts": []}`, role: auth.RoleOperator},
	"/actions/:name/preview": {path: "/actions/queue.pause/preview", form: url.Values{"p.queue": {"abuse"}}, role: auth.RoleViewer},
	"/actions/:name": {path: "/actions/queue.pause", role: auth.RoleOperator,
		form: url.Values{"p.queue": {"abuse"}, "reason": {"abuse test"}}},
	"/api/v1/actions/:name": {path: "/api/v1/actions/queue.pause", api: true, role: auth.RoleOperator,
		json: `{"params": {"queue": "abuse"}, "reason": "abuse test"}`},
	"/incidents": {path: "/incidents", form: url.Values{"title": {"abuse test"}}, role: auth.RoleOperator},
	"/incidents/finding": {path: "/incidents/finding", role: auth.RoleOperator,
		form: url.Values{"code": {"lock.root_blocker"}, "title": {"abuse test"}, "evidence": {"abuse"}, "runbook": {"/runbook/blocking"}}},
	"/incidents/:id/close":   {path: "/incidents/{incident}/close", form: url.Values{"summary": {"abuse test"}}, role: auth.RoleOperator},
	"/incidents/:id/capture": {path: "/incidents/{incident}/capture", form: url.Values{"panel": {"blocking_tree"}}, role: auth.RoleOperator},
	"/incidents/:id/notes":   {path: "/incidents/{incident}/notes", form: url.Values{"text": {"abuse test"}}, role: auth.RoleOperator},
}

// TestEveryPostRouteRefusesAbuse walks the POST routes echo has registered
// and checks that each refuses a request without a CSRF token, one with
// another session's token, a body over the limit and, where the route needs
// more than a viewer, a viewer; and that none of these changes anything.
func TestEveryPostRouteRefusesAbuse(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	pool := e.srv.cfg.Pool

	var registered []string
	for _, r := range e.srv.e.Routes() {
		if r.Method == http.MethodPost {
			registered = append(registered, r.Path)
			_, ok := postRoutes[r.Path]
			require.True(t, ok, "POST %s has no entry in postRoutes: add a good request to it and the role it needs", r.Path)
		}
	}
	require.Len(t, registered, len(postRoutes), "postRoutes lists a route the server no longer has: %v", registered)

	// Each client reads a page once signed in, for its session's token.
	operator := e.signedIn(t, auth.RoleOperator)
	operator.page("/incidents")
	resp, _ := operator.post("/incidents", url.Values{"_csrf": {operator.csrf}, "title": {"held open by the abuse test"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	incident := strings.TrimPrefix(resp.Header.Get("Location"), "/incidents/")
	require.Regexp(t, regexp.MustCompile(`^\d+$`), incident)

	other := e.signedIn(t, auth.RoleOperator) // its token is valid, for another session
	other.page("/incidents")
	viewer := e.signedIn(t, auth.RoleViewer)
	viewer.page("/incidents")
	opToken, err := auth.TokenCreate(ctx, pool, "abuse-operator", auth.RoleOperator)
	require.NoError(t, err)
	viewerToken, err := auth.TokenCreate(ctx, pool, "abuse-viewer", auth.RoleViewer)
	require.NoError(t, err)

	// state is the content of every table a POST route may change (the
	// audit trail is counted apart), so a refused request that updated a
	// row fails as surely as one that added one.
	digests := newTableDigester(t, e.owner)
	state := func() map[string]string { return digests.all(t) }
	auditCount := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM audit_events").Scan(&n))
		return n
	}
	// send posts the route's request from c: a form (with the fields
	// given, plus form's) or, for an api route, json with token.
	send := func(c *client, rt postRoute, token string, extra url.Values, body string, header ...string) *http.Response {
		path := strings.ReplaceAll(rt.path, "{incident}", incident)
		if rt.api {
			if body == "" {
				body = rt.json
			}
			resp, _ := c.apiPost(path, token, body, header...)
			return resp
		}
		form := url.Values{}
		for k, v := range rt.form {
			form[k] = v
		}
		for k, v := range extra {
			form[k] = v
		}
		if body != "" {
			form.Set("pad", body)
		}
		resp, _ := c.post(path, form, header...)
		return resp
	}

	oversized := strings.Repeat("x", formBodyLimit+1)
	for pattern, rt := range postRoutes {
		t.Run(strings.NewReplacer("/", "_", ":", "").Replace(pattern), func(t *testing.T) {
			before, audited := state(), auditCount()
			nothingChanged := func(what string) {
				t.Helper()
				require.Equal(t, before, state(), "%s changed something", what)
				require.Equal(t, audited, auditCount(), "%s was audited as an action", what)
			}

			if !rt.api {
				// A session's form without a token, and with another
				// session's.
				resp := send(operator, rt, "", nil, "")
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "no CSRF token")
				nothingChanged("a request without a CSRF token")
				resp = send(operator, rt, "", url.Values{"_csrf": {other.csrf}}, "")
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "another session's CSRF token")
				nothingChanged("a request with a forged CSRF token")
				resp = send(operator, rt, "", nil, oversized, "X-CSRF-Token", operator.csrf)
				require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "a body over the form limit")
				nothingChanged("an oversized form")
			} else {
				// Without a bearer token the API is a cookie request like
				// any other, and needs the CSRF token.
				req, err := http.NewRequest(http.MethodPost, operator.base+rt.path, strings.NewReader(rt.json))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, _ := operator.do(req)
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "a session's API call without a CSRF token")
				nothingChanged("an API call without a CSRF token")
				resp = send(operator, rt, opToken, nil, `{"reason": "`+strings.Repeat("r", apiBodyLimit)+`"}`)
				require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "a body over the API limit")
				nothingChanged("an oversized API body")
			}

			if auth.RoleRank(rt.role) > auth.RoleRank(auth.RoleViewer) {
				var resp *http.Response
				if rt.api {
					resp = send(viewer, rt, viewerToken, nil, "")
				} else {
					resp = send(viewer, rt, "", url.Values{"_csrf": {viewer.csrf}}, "")
				}
				require.Equal(t, http.StatusForbidden, resp.StatusCode, "a viewer, where %s is needed", rt.role)
				require.Equal(t, before, state(), "a viewer changed something")
			}
		})
	}
}

// TestOversizedBodiesAreNotRead posts 32 MiB to every POST route, as
// anyone and as an operator, with its length declared and without (chunked),
// in a shape the route's decoder would keep reading (a form value or a JSON
// string that never ends): each route reads at most its body limit (64 KB
// for forms, 1 MB for the API) and no post allocates its size. Not
// parallel, so no other test allocates meanwhile.
func TestOversizedBodiesAreNotRead(t *testing.T) {
	testdb.SkipShort(t, "bodies of tens of MiB to every route")
	e := setup(t)
	operator := e.signedIn(t, auth.RoleOperator)
	operator.page("/incidents")
	var mu sync.Mutex
	read := map[string]int64{} // the most the console read of one body, by path
	counted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &countingBody{ReadCloser: r.Body}
		r.Body = body
		e.srv.Handler().ServeHTTP(w, r)
		mu.Lock()
		read[r.URL.Path] = max(read[r.URL.Path], body.n.Load())
		mu.Unlock()
	}))
	t.Cleanup(counted.Close)
	const size = 32 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sent := 0
	for pattern, rt := range postRoutes {
		path := strings.ReplaceAll(rt.path, "{incident}", "1")
		ctype, prefix, limit := "application/x-www-form-urlencoded", "reason=", int64(formBodyLimit)
		if rt.api {
			ctype, prefix, limit = "application/json", `{"reason": "`, apiBodyLimit
		}
		for _, c := range []*client{e.client(t), operator} {
			for _, declared := range []bool{true, false} {
				req, err := http.NewRequest(http.MethodPost, counted.URL+path, io.LimitReader(&endlessText{prefix: prefix}, size))
				require.NoError(t, err)
				req.ContentLength = -1 // chunked: no length to refuse up front
				if declared {
					req.ContentLength = size
				}
				req.Header.Set("Content-Type", ctype)
				req.Header.Set("X-CSRF-Token", operator.csrf)
				resp, err := c.hc.Do(req)
				if err == nil { // the server may close the connection before the client has sent it all
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
					resp.Body.Close()
					require.NotEqual(t, http.StatusOK, resp.StatusCode, "POST %s took a 32 MiB body", pattern)
				}
				sent++
			}
		}
		mu.Lock()
		n := read[path]
		mu.Unlock()
		require.LessOrEqual(t, n, limit+1, "POST %s read %d bytes of a body over its limit of %d", pattern, n, limit)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(64<<20), "%d oversized posts allocated %d MiB: some route reads the body", sent, allocated>>20)
}

// endlessText is a body a decoder keeps reading: prefix (the start of a
// form value or of a JSON string), then letters for ever.
type endlessText struct {
	prefix string
	off    int
}

func (e *endlessText) Read(p []byte) (int, error) {
	n := copy(p, e.prefix[min(e.off, len(e.prefix)):])
	e.off += n
	for i := n; i < len(p); i++ {
		p[i] = 'a'
	}
	return len(p), nil
}

// countingBody counts the bytes read of a request body.
type countingBody struct {
	io.ReadCloser
	n atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
