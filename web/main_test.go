package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// testPassword is every test operator's password.
const testPassword = "correct horse battery"

// env is a console under test: a real server on a fresh database, with one
// operator of each role. The server runs as console_web with the rights
// `console roles sql` grants and nothing more, on a schema owned by
// testdb.OwnerRole, so a page or action that needs a grant the script lacks
// fails its test.
type env struct {
	srv  *Server
	http *httptest.Server
	// url is the database as its owner, not a superuser: sessions a test
	// stages with it (lock holders, idle transactions) are ones the console
	// may cancel and terminate.
	url string
	// superURL is the database as a superuser, for the fixtures only a
	// superuser may make.
	superURL string
	// owner is a pool on url, for fixtures the console's role may not write.
	owner *pgxpool.Pool
}

// setupOpts adjusts setupWith.
type setupOpts struct {
	thresholds *diagnostics.Thresholds
	// log receives the server's and its action runner's log (JSON); nil
	// discards them.
	log io.Writer
	// configure adjusts the server's Config before New.
	configure func(*Config)
	// tls serves over https (httptest's own certificate).
	tls bool
	// url is a database from privateDatabase (a superuser's URL) to use
	// instead of a fresh one on the shared test server (a test that
	// freezes its server brings its own).
	url string
	// settle is the action runner's SettleTimeout (its default when 0),
	// for a test whose backend.cancel leaves a chain that never clears,
	// so that it waits less than the default's whole time.
	settle time.Duration
	// private gives the test a PostgreSQL server of its own: the blocking
	// tree and its findings span every database of a server, so a test
	// that reads them on the shared one can meet other tests' lock chains.
	private bool
}

func setup(t testing.TB) *env { return setupWith(t, setupOpts{}) }

// consoleDatabase is the database of a console under test: testdb.OwnedURL's
// with `console roles sql` run on it and the test operators added, once per
// binary rather than at every setup.
var consoleDatabase = testdb.Template{Name: "console", Owned: true, Build: func(tb testing.TB, url string) {
	testdb.Roles(tb, url, actions.RolesSQL())
	addTestOperators(tb, url)
}}

func setupWith(t testing.TB, o setupOpts) *env {
	t.Helper()
	superURL, ready := o.url, false
	switch {
	case superURL == "" && !o.private:
		superURL, ready = consoleDatabase.URL(t), true
	case superURL == "":
		superURL = privateDatabase(t, testdb.NewServer(t, nil))
	}
	if !ready {
		testdb.Roles(t, superURL, actions.RolesSQL())
		addTestOperators(t, superURL)
	}
	url := testdb.AsUser(t, superURL, testdb.OwnerRole)
	webURL := testdb.AsUser(t, superURL, "console_web")
	pool := testdb.Pool(t, webURL)
	diag, err := diagnostics.Open(context.Background(), webURL, diagnostics.Config{Thresholds: o.thresholds, OnDemand: true})
	require.NoError(t, err)
	t.Cleanup(diag.Close)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.log != nil {
		logger = slog.New(slog.NewJSONHandler(o.log, nil))
	}
	runner, err := actions.NewRunner(pool, actions.RunnerConfig{Diagnostics: diag, Logger: logger, SettleTimeout: o.settle})
	require.NoError(t, err)
	cfg := Config{Pool: pool, Diagnostics: diag, Actions: runner, Database: "console@test/db", Version: "test",
		Logger: logger}
	if o.configure != nil {
		o.configure(&cfg)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(s.Handler())
	if o.tls {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	return &env{srv: s, http: hs, url: url, superURL: superURL, owner: testdb.Pool(t, url)}
}

// testPasswordHash is testPassword's bcrypt hash, made once, at bcrypt's
// lowest cost: a sign-in checks the password at the cost its hash says,
// and at auth.OperatorAdd's a check costs tens of milliseconds of CPU
// (about as much as the rest of a test's sign-in). The cost is the
// stored hash's, not the console's: auth's tests keep OperatorAdd's.
var testPasswordHash = sync.OnceValues(func() ([]byte, error) {
	return bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
})

// addTestOperators stores one operator of each role, named after it, with
// testPassword, as auth.OperatorAdd would (its own tests are in
// internal/auth) but with testPasswordHash, on the database at superURL.
func addTestOperators(t testing.TB, superURL string) {
	t.Helper()
	hash, err := testPasswordHash()
	require.NoError(t, err)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, superURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, role := range []string{auth.RoleViewer, auth.RoleOperator, auth.RoleAdmin} {
		_, err = conn.Exec(ctx,
			"INSERT INTO operators (name, password_hash, role) VALUES ($1, $2, $3)", role, string(hash), role)
		require.NoError(t, err, "add operator %s", role)
	}
}

// client is a browser-like client: cookie jar, no redirect following, and
// the CSRF token of the last page it read.
type client struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func (e *env) client(t *testing.T) *client {
	jar, _ := cookiejar.New(nil)
	hc := *e.http.Client() // a copy: the server's client is shared
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &client{t: t, base: e.http.URL, hc: &hc}
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (c *client) do(req *http.Request) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	if m := csrfRE.FindSubmatch(b); m != nil {
		c.csrf = string(m[1])
	}
	return resp, string(b)
}

func (c *client) get(path string, header ...string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+path, nil)
	require.NoError(c.t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

func (c *client) post(path string, form url.Values, header ...string) (*http.Response, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

// signedIn returns a new client signed in as the operator named after role.
func (e *env) signedIn(t *testing.T, role string) *client {
	t.Helper()
	c := e.client(t)
	c.login(role)
	return c
}

// queryInt runs a query returning one integer (a count, a limit) on the
// test database.
func (e *env) queryInt(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), sql, args...).Scan(&n), sql)
	return n
}

// page GETs path and returns its body, failing the test unless the answer
// is 200.
func (c *client) page(path string, header ...string) string {
	c.t.Helper()
	resp, body := c.get(path, header...)
	require.Equal(c.t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	return body
}

// login signs in as the operator named after role.
func (c *client) login(role string) {
	c.t.Helper()
	resp, _ := c.get("/login")
	require.Equal(c.t, http.StatusOK, resp.StatusCode)
	resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {role}, "password": {testPassword}, "next": {"/"}})
	require.Equal(c.t, http.StatusSeeOther, resp.StatusCode, "login as %s", role)
	require.Equal(c.t, "/", resp.Header.Get("Location"))
}

// privateDatabase creates a database on srv, a server of the test's own
// (which it may freeze, or where no other test runs), owned and migrated by
// testdb.OwnerRole as testdb.OwnedURL does, and returns its superuser URL.
func privateDatabase(t testing.TB, srv *pgserver.Server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, "CREATE ROLE "+testdb.OwnerRole+" LOGIN NOSUPERUSER NOCREATEROLE")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE console OWNER "+testdb.OwnerRole)
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, testdb.AsUser(t, srv.URL("console"), testdb.OwnerRole))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	return srv.URL("console")
}
