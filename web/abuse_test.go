package web

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
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
	"/incidents":             {path: "/incidents", form: url.Values{"title": {"abuse test"}}, role: auth.RoleOperator},
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

// TestOversizedBodiesAreNotRead streams a 32 MiB body to every POST route,
// anonymously and as a signed-in operator, and checks how much the whole
// process allocated meanwhile: a route that read such a body, or parsed it
// as a form, would allocate at least its size. Not parallel, so no other
// test allocates meanwhile.
func TestOversizedBodiesAreNotRead(t *testing.T) {
	e := setup(t)
	operator := e.signedIn(t, auth.RoleOperator)
	operator.page("/incidents")
	const size = 32 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sent := 0
	for pattern, rt := range postRoutes {
		path := strings.ReplaceAll(rt.path, "{incident}", "1")
		for _, c := range []*client{e.client(t), operator} {
			ctype := "application/x-www-form-urlencoded"
			if rt.api {
				ctype = "application/json"
			}
			req, err := http.NewRequest(http.MethodPost, c.base+path, io.LimitReader(zeros{}, size))
			require.NoError(t, err)
			req.ContentLength = size
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
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(64<<20), "%d oversized posts allocated %d MiB: some route reads the body", sent, allocated>>20)
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
