package web

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// paramRecorder learns which query and form parameters each route's
// handlers read: handlers read them by name through echo.Context
// (QueryParam, FormValue; paramsOf for the filters), and a middleware the
// test installs wraps the context to note each name. A route that reads
// the parameters as a whole (QueryParams, FormParams) is noted too, and
// the sweep refuses it: its names could not be listed.
type paramRecorder struct {
	mu    sync.Mutex
	names map[string]map[string]bool // route pattern → parameter names
	whole map[string]bool            // route patterns that read them whole
}

func newParamRecorder() *paramRecorder {
	return &paramRecorder{names: map[string]map[string]bool{}, whole: map[string]bool{}}
}

func (r *paramRecorder) note(route, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names[route] == nil {
		r.names[route] = map[string]bool{}
	}
	r.names[route][name] = true
}

func (r *paramRecorder) noteWhole(route string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.whole[route] = true
}

// of returns the names route's handlers read, sorted.
func (r *paramRecorder) of(route string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.names[route] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (r *paramRecorder) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error { return next(recordingContext{Context: c, r: r}) }
}

// recordingContext is the context handlers get during the sweep.
type recordingContext struct {
	echo.Context
	r *paramRecorder
}

func (c recordingContext) QueryParam(name string) string {
	c.r.note(c.Path(), name)
	return c.Context.QueryParam(name)
}

func (c recordingContext) FormValue(name string) string {
	c.r.note(c.Path(), name)
	return c.Context.FormValue(name)
}

func (c recordingContext) QueryParams() url.Values {
	c.r.noteWhole(c.Path())
	return c.Context.QueryParams()
}

func (c recordingContext) FormParams() (url.Values, error) {
	c.r.noteWhole(c.Path())
	return c.Context.FormParams()
}

// sweepPaths gives each route with path parameters a well-formed path;
// {job} and {incident} stand for a job's and an open incident's ids.
// TestEveryParameterRefusesHostileValues fails for a route missing here.
var sweepPaths = map[string]string{
	"/static/:hash/:name":      "/static/_/app.css",
	"/runbook/:slug":           "/runbook/queues",
	"/panels/:name":            "/panels/blocking_tree",
	"/database/:page":          "/database/activity",
	"/queues/:name":            "/queues/sweep",
	"/jobs/:id":                "/jobs/{job}",
	"/jobs/:id/payload":        "/jobs/{job}/payload",
	"/incidents/:id":           "/incidents/{incident}",
	"/incidents/:id/export.md": "/incidents/{incident}/export.md",
	"/incidents/:id/close":     "/incidents/{incident}/close",
	"/incidents/:id/capture":   "/incidents/{incident}/capture",
	"/incidents/:id/notes":     "/incidents/{incident}/notes",
	"/actions/:name":           "/actions/queue.pause",
	"/actions/:name/preview":   "/actions/queue.pause/preview",
	"/api/v1/actions/:name":    "/api/v1/actions/queue.pause",
	"/debug/pprof/*":           "/debug/pprof/cmdline",
	"/api/v1/alerts":           "/api/v1/alerts",
	"/incidents":               "/incidents",
	"/incidents/finding":       "/incidents/finding",
	"/login":                   "/login",
	"/logout":                  "/logout",
	"/status/database":         "/status/database",
	"/api/v1/findings":         "/api/v1/findings",
	"/api/v1/history":          "/api/v1/history",
	"/debug/pprof":             "/debug/pprof",
	"/runbook":                 "/runbook",
	"/healthz":                 "/healthz",
	"/readyz":                  "/readyz",
	"/metrics":                 "/metrics",
	"/":                        "/",
	"/queues":                  "/queues",
	"/jobs":                    "/jobs",
	"/deadletters":             "/deadletters",
	"/workers":                 "/workers",
	"/outbox":                  "/outbox",
	"/schedules":               "/schedules",
	"/audit":                   "/audit",
	"/jump":                    "/jump",
	"/history":                 "/history",
	"/lock-episodes":           "/lock-episodes",
	"/api/v1/lock-episodes":    "/api/v1/lock-episodes",
	"/actions":                 "/actions",
}

// hostileQuery are the values put, as written (already URL-encoded), in
// each query parameter and path segment: integers out of every range,
// 100 KB, NUL, invalid UTF-8, a double-encoded slash and an overlong
// UTF-8 slash.
var hostileQuery = []string{"9223372036854775808", "-1", "2147483648", strings.Repeat("A", 100<<10),
	"a%00b", "%ff%fe", "%252F..%252F", "%c0%af"}

// hostileHeader are the same values as a header carries them, decoded.
var hostileHeader = []string{"9223372036854775808", "-1", "2147483648", strings.Repeat("A", 100<<10),
	"a\x00b", "\xff\xfe", "%2F..%2F", "\xc0\xaf"}

// sweptHeaders are the request headers the console reads, each set to a
// hostile value (Authorization and Cookie separately: either alone decides
// who the request is from).
var sweptHeaders = []string{"X-Request-Id", IdempotencyKeyHeader, "X-Forwarded-For", "X-Forwarded-Proto",
	"X-Forwarded-Host", "X-Forwarded-User", "X-Forwarded-Groups", "X-Forwarded-Role", "HX-Request", "HX-Boosted",
	"HX-History-Restore-Request", "HX-Current-URL", "Accept", "Origin", "Sec-Fetch-Site", "X-CSRF-Token", "Content-Type"}

// maxLogLine bounds every log line the console writes, whatever a client
// sends.
const maxLogLine = 4 << 10

// TestEveryParameterRefusesHostileValues sweeps every route echo has
// registered, signed in as an admin and anonymously: each query (and form)
// parameter its handlers read, each path parameter and each header the
// console reads gets each hostile value. No answer may be a 5xx, no log
// line may exceed maxLogLine, and no table may change but for audited
// refusals. The parameter names are learnt in a first pass, from what the
// handlers ask for (paramRecorder), so a new parameter is swept without
// anyone listing it.
func TestEveryParameterRefusesHostileValues(t *testing.T) {
	testdb.SkipShort(t, "the sweep of every route with every hostile value (about 4,000 requests)")
	t.Parallel()
	var logs logBuffer
	e := setupWith(t, setupOpts{log: &logs})
	rec := newParamRecorder()
	e.srv.e.Use(rec.middleware)
	ctx := context.Background()
	pool := e.srv.cfg.Pool

	admin := e.signedIn(t, auth.RoleAdmin)
	admin.page("/incidents")
	resp, _ := admin.post("/incidents", url.Values{"_csrf": {admin.csrf}, "title": {"held open by the sweep"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	incident := strings.TrimPrefix(resp.Header.Get("Location"), "/incidents/")
	var job int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status) VALUES ('sweep', 'send', 'ready') RETURNING id`).Scan(&job))
	admin.page("/incidents")
	anonymous := e.client(t)
	anonymous.page("/login")
	cookies := map[*client]string{admin: cookieHeader(t, admin), anonymous: cookieHeader(t, anonymous)}

	type route struct{ method, pattern, path string }
	var routes []route
	for _, r := range e.srv.e.Routes() {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			require.Equal(t, "echo_route_not_found", r.Method, "the sweep sends GET and POST only")
			continue
		}
		path, ok := sweepPaths[r.Path]
		require.True(t, ok, "%s %s has no entry in sweepPaths: add a well-formed path to it", r.Method, r.Path)
		path = strings.NewReplacer("{job}", fmt.Sprint(job), "{incident}", incident).Replace(path)
		routes = append(routes, route{r.Method, r.Path, path})
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].method+routes[i].path < routes[j].method+routes[j].path })

	// send serves one request from c (its cookies and CSRF token), with
	// the query, the headers and, for a POST, an empty form.
	send := func(c *client, method, path, query string, header ...string) *httptest.ResponseRecorder {
		target := path
		if query != "" {
			target += "?" + query
		}
		var req *http.Request
		if method == http.MethodPost {
			req = httptest.NewRequest(method, "/", strings.NewReader(url.Values{"_csrf": {c.csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req = httptest.NewRequest(method, "/", nil)
		}
		req.URL = &url.URL{Path: path, RawQuery: query}
		if u, err := url.ParseRequestURI(target); err == nil {
			req.URL = u
		} else {
			req.URL.RawPath = path
		}
		req.RequestURI = target
		req.RemoteAddr = "192.0.2.9:4000"
		req.Header.Set("Cookie", cookies[c])
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		e.srv.Handler().ServeHTTP(w, req)
		return w
	}
	clients := []*client{admin, anonymous}
	skip := func(c *client, r route) bool {
		// Signing out would end the admin's session for the rest of the
		// sweep; it is swept anonymously.
		return c == admin && r.pattern == "/logout"
	}

	// First pass: a well-formed request to every route, so the handlers
	// say which parameters they read.
	for _, r := range routes {
		for _, c := range clients {
			if !skip(c, r) {
				send(c, r.method, r.path, "")
			}
		}
	}
	rec.mu.Lock()
	require.Empty(t, rec.whole, "these routes read their parameters whole, so the sweep cannot list them; read them by name (paramsOf)")
	rec.mu.Unlock()
	require.Contains(t, rec.of("/audit"), "before", "the first pass learnt the audit page's parameters")
	require.Contains(t, rec.of("/jobs"), "queue")

	before := newTableDigester(t, e.owner).all(t)
	auditBefore := e.queryInt(t, "SELECT coalesce(max(id), 0) FROM audit_events")
	logsBefore := len(logs.String())

	type attempt struct {
		c      *client
		r      route
		path   string
		query  string
		header []string
		what   string
	}
	var attempts []attempt
	for _, r := range routes {
		for _, c := range clients {
			if skip(c, r) {
				continue
			}
			for _, name := range rec.of(r.pattern) {
				for _, v := range hostileQuery {
					attempts = append(attempts, attempt{c: c, r: r, path: r.path, query: url.QueryEscape(name) + "=" + v,
						what: fmt.Sprintf("query %s=%.20s", name, v)})
				}
			}
			patternSegs, pathSegs := strings.Split(r.pattern, "/"), strings.Split(r.path, "/")
			for i, seg := range patternSegs {
				if !strings.HasPrefix(seg, ":") && seg != "*" {
					continue
				}
				for _, v := range hostileQuery {
					segs := slices.Clone(pathSegs)
					segs[i] = v
					attempts = append(attempts, attempt{c: c, r: r, path: strings.Join(segs, "/"),
						what: fmt.Sprintf("path %s=%.20s", seg, v)})
				}
			}
			for _, v := range hostileHeader {
				var h []string
				for _, name := range sweptHeaders {
					h = append(h, name, v)
				}
				attempts = append(attempts,
					attempt{c: c, r: r, path: r.path, header: h, what: fmt.Sprintf("headers=%.20q", v)},
					attempt{c: c, r: r, path: r.path, header: []string{"Authorization", "Bearer " + v}, what: fmt.Sprintf("Authorization=%.20q", v)},
					attempt{c: c, r: r, path: r.path, header: []string{"Cookie", "console_session=" + v + "; console_csrf=" + v}, what: fmt.Sprintf("Cookie=%.20q", v)})
			}
		}
	}
	require.Less(t, len(attempts), 5000, "the sweep is bounded")

	// The admin's POSTs may do what they ask when a hostile value is
	// also a valid one (an incident closed with the summary "-1"): they
	// run one at a time, and each that is refused must leave every table
	// as it was; the rest (GETs, anonymous POSTs) run four at a time and
	// must change nothing at all.
	digests := newTableDigester(t, e.owner)
	start := time.Now()
	var mu sync.Mutex
	var failures, done []string
	check := func(a attempt, w *httptest.ResponseRecorder) {
		if w.Code >= 500 {
			mu.Lock()
			defer mu.Unlock()
			failures = append(failures, fmt.Sprintf("%s %s (%s, anonymous=%v): %d %.200s", a.r.method, a.r.pattern, a.what,
				a.c == anonymous, w.Code, w.Body.String()))
		}
	}
	work := make(chan attempt)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range work {
				check(a, send(a.c, a.r.method, a.path, a.query, a.header...))
			}
		}()
	}
	var posts []attempt
	for _, a := range attempts {
		if a.c == admin && a.r.method == http.MethodPost {
			posts = append(posts, a)
			continue
		}
		work <- a
	}
	close(work)
	wg.Wait()
	require.Equal(t, before, digests.all(t), "a hostile GET or anonymous request changed a table")
	state := before
	for _, a := range posts {
		w := send(a.c, a.r.method, a.path, a.query, a.header...)
		check(a, w)
		now := digests.all(t)
		if w.Code < 400 {
			done = append(done, fmt.Sprintf("%s %s (%s): %d", a.r.method, a.r.pattern, a.what, w.Code))
			state = now
			continue
		}
		require.Equal(t, state, now, "%s %s (%s) was refused with %d but changed a table", a.r.method, a.r.pattern, a.what, w.Code)
	}
	t.Logf("%d hostile requests to %d routes in %s; the admin's POSTs that did what they asked: %q", len(attempts), len(routes),
		time.Since(start).Round(time.Millisecond), done)
	require.Empty(t, failures, "%d of %d hostile requests answered 5xx", len(failures), len(attempts))

	sc := bufio.NewScanner(strings.NewReader(logs.String()[logsBefore:]))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		require.LessOrEqual(t, len(sc.Bytes()), maxLogLine, "a log line of %d bytes: %.300s", len(sc.Bytes()), sc.Text())
	}

	// Refused attempts are audited as refused, or as failed when the audit
	// trail itself refuses what they carry (a 100 KB title).
	require.Zero(t, e.queryInt(t, "SELECT count(*) FROM audit_events WHERE id > $1 AND outcome NOT IN ('refused', 'failed', 'succeeded')", auditBefore))
	// A finding's incident button opens or notes the incident and captures
	// up to three panels: four actions for one POST.
	allowed := len(done)
	for _, d := range done {
		if strings.HasPrefix(d, "POST /incidents/finding ") {
			allowed += 3
		}
	}
	require.LessOrEqual(t, e.queryInt(t, "SELECT count(*) FROM audit_events WHERE id > $1 AND outcome = 'succeeded'", auditBefore), allowed,
		"more actions succeeded than the admin's POSTs that did what they asked")
	v, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.True(t, v.OK, "the audit chain holds: %s", v.Reason)
}

// cookieHeader is the Cookie header c's jar sends to the test server.
func cookieHeader(t *testing.T, c *client) string {
	u, err := url.Parse(c.base)
	require.NoError(t, err)
	var parts []string
	for _, ck := range c.hc.Jar.Cookies(u) {
		parts = append(parts, ck.Name+"="+ck.Value)
	}
	return strings.Join(parts, "; ")
}

// tableDigester digests the content of every table of the test database,
// by table: the md5 of its rows as JSON, in order, in one query. The audit
// trail's tables are left out (refusals are audited; a test checks the new
// rows itself), and so is when an API token was last used, which every use
// moves.
type tableDigester struct {
	pool  *pgxpool.Pool
	query string
}

func newTableDigester(t testing.TB, pool *pgxpool.Pool) *tableDigester {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
		AND tablename NOT IN ('audit_events', 'audit_chain_head') ORDER BY tablename`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	var parts []string
	for _, table := range tables {
		parts = append(parts, fmt.Sprintf(`SELECT %s::text, coalesce(md5(string_agg(r, E'\n' ORDER BY r)), '')
			FROM (SELECT (to_jsonb(t) - 'last_used_at')::text AS r FROM %q AS t) AS s`, quoteLiteral(table), table))
	}
	return &tableDigester{pool: pool, query: strings.Join(parts, " UNION ALL ")}
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// all returns each table's digest.
func (d *tableDigester) all(t testing.TB) map[string]string {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), d.query)
	require.NoError(t, err)
	out := map[string]string{}
	var table, digest string
	_, err = pgx.ForEachRow(rows, []any{&table, &digest}, func() error {
		out[table] = digest
		return nil
	})
	require.NoError(t, err)
	return out
}
