package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
)

// countingReader is a request body that counts what the server read of it.
type countingReader struct {
	r    io.Reader
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// TestBodyLimits: a 60 MB anonymous upload is refused with 413 once the
// form limit is read (nothing is spooled to disk), a 5 MB user
// name is refused before it reaches the limiter or the log, and a long name
// that fits the body limit is logged cut to an account name's length.
func TestBodyLimits(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := setupWith(t, setupOpts{log: &logs})
	c := e.client(t)
	_, _ = c.get("/login")

	// Streamed (no Content-Length), so only the reading limit can stop it.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("name", "admin")
		part, _ := mw.CreateFormFile("upload", "big.bin")
		chunk := make([]byte, 1<<20)
		for range 60 {
			if _, err := part.Write(chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		mw.Close()
		pw.Close()
	}()
	body := &countingReader{r: pr}
	req, err := http.NewRequest(http.MethodPost, c.base+"/login", body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, text := c.do(req)
	pr.CloseWithError(io.ErrClosedPipe)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, text)
	// The client's count includes what loopback socket buffers absorbed
	// (a few MB); reading the whole upload would be 60 MB.
	require.Less(t, body.read.Load(), int64(16<<20), "the server stopped reading at the limit")

	resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {strings.Repeat("n", 5<<20)}, "password": {"x"}})
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	long := strings.Repeat("m", 60<<10)
	resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {long}, "password": {"x"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	lines := logs.lines(t, "request refused", resp.Header.Get("X-Request-Id"))
	require.Len(t, lines, 1)
	require.LessOrEqual(t, len(lines[0]["name"].(string)), auth.MaxNameLength+len("…"), "the name is logged cut")

	// The API takes up to about 1 MB.
	api := e.client(t)
	resp, _ = api.apiPost("/api/v1/actions/queue.pause", "pgc_x", `{"reason": "`+strings.Repeat("r", 2<<20)+`"}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// TestLoginLimitIgnoresForgedForwardedFor: without trusted proxies the
// client address is the socket's, so a new X-Forwarded-For per attempt does
// not reset the per-address limit, and the log shows the real address.
func TestLoginLimitIgnoresForgedForwardedFor(t *testing.T) {
	t.Parallel()
	var logs logBuffer
	e := setupWith(t, setupOpts{log: &logs})
	// The limiter's clock stands still: at a high load each bcrypt
	// sign-in can take seconds, and a minute of them would free a slot.
	at := time.Now()
	e.srv.limiterNow = func() time.Time { return at }
	c := e.client(t)
	_, _ = c.get("/login")
	var resp *http.Response
	for i := range loginLimits["addr"].Burst + 1 {
		resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {fmt.Sprint("user", i)}, "password": {"guess"}},
			"X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
	}
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "a forged X-Forwarded-For must not bypass the limit")
	lines := logs.lines(t, "request refused", resp.Header.Get("X-Request-Id"))
	require.Len(t, lines, 1)
	require.Equal(t, "127.0.0.1", lines[0]["client"])
}

// TestLoginLimitBehindTrustedProxy: behind a trusted proxy the client is
// the address the proxy appended, so clients are limited apart; the
// account limit holds whatever the address.
func TestLoginLimitBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	e := setupWith(t, setupOpts{configure: func(c *Config) { c.TrustedProxies = []string{"10.0.0.1"} }})
	post := func(name, forwardedFor string) int {
		form := url.Values{"name": {name}, "password": {"guess"}}
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-CSRF-Token", "none")
		req.RemoteAddr = "10.0.0.1:4000"
		req.Header.Set("X-Forwarded-For", forwardedFor)
		rec := httptest.NewRecorder()
		// The pre-session cookie and its token, as a browser would send.
		pre := auth.NewSecret()
		req.AddCookie(&http.Cookie{Name: csrfCookieName(false), Value: pre})
		req.Header.Set("X-CSRF-Token", e.srv.csrfFor("pre-session\x00"+pre))
		e.srv.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	for i := range loginLimits["account"].Burst {
		require.Equal(t, http.StatusUnauthorized, post("admin", fmt.Sprintf("198.51.100.%d, 192.0.2.%d", i, i)))
	}
	require.Equal(t, http.StatusTooManyRequests, post("admin", "192.0.2.200"), "the account limit holds across addresses")
	require.Equal(t, http.StatusUnauthorized, post("someone", "192.0.2.201"), "another account from another client is not limited")

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "192.0.2.9, 10.0.0.1")
	require.Equal(t, "192.0.2.9", e.srv.clientIP(r), "trusted hops are skipped from the right")
	r.RemoteAddr = "192.0.2.50:1"
	require.Equal(t, "192.0.2.50", e.srv.clientIP(r), "an untrusted peer's header is ignored")
}

// TestParallelLoginsReserveFirst: 20 parallel wrong passwords for one
// account reach bcrypt at most Burst times; the rest are refused up front.
func TestParallelLoginsReserveFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.client(t)
	_, _ = c.get("/login")
	var wg sync.WaitGroup
	var checked, limited atomic.Int32
	for range 20 {
		wg.Go(func() {
			form := url.Values{"_csrf": {c.csrf}, "name": {"admin"}, "password": {"guess"}}
			req, _ := http.NewRequest(http.MethodPost, c.base+"/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := c.hc.Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusUnauthorized:
				checked.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, checked.Load(), int32(loginLimits["account"].Burst))
	require.EqualValues(t, 20, checked.Load()+limited.Load())
}

// TestOpenRedirectRefused: a signed-in user is never sent off the site.
func TestOpenRedirectRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	for _, next := range []string{"/%09/evil.example", "//evil.example", "/\\evil.example", "/%5Cevil.example",
		"https://evil.example/", "/%2F/evil.example", "/\t/evil.example", "javascript:alert(1)"} {
		resp, _ := c.get("/login?next=" + url.QueryEscape(next))
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Equal(t, "/", resp.Header.Get("Location"), "next=%q", next)
	}
	resp, _ := c.get("/login?next=" + url.QueryEscape("/jobs?queue=emails&status=dead"))
	require.Equal(t, "/jobs?queue=emails&status=dead", resp.Header.Get("Location"))
}

// FuzzCleanNext: whatever next is, the result stays on the site as a
// browser reads it (tabs and newlines dropped, backslashes as slashes).
func FuzzCleanNext(f *testing.F) {
	for _, s := range []string{"/", "/jobs?queue=a&status=dead", "/%09/evil.example", "//evil.example",
		"/\\evil.example", "/%5C%5Cevil", "https://evil.example", "/\t/x", "/\n/x", "/%2F%2Fevil", "/a b",
		"/queues/a%2Fb", "/login?next=//evil", "\\\\evil", "/.//evil", "/%E2%80%AE", "?x=1", "#frag", "/x#//evil",
		"/%0d%0aSet-Cookie:x=y", "http:/evil", "/\u0085/evil", "///evil"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://console.example/app")
	f.Fuzz(func(t *testing.T, next string) {
		out := cleanNext(next)
		require.True(t, strings.HasPrefix(out, "/"), "%q -> %q", next, out)
		browser := strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(out)
		require.False(t, strings.HasPrefix(browser, "//"), "%q -> %q", next, out)
		for _, r := range out {
			require.False(t, r < 0x20 || r == 0x7f, "control character in %q", out)
		}
		u, err := url.Parse(out)
		require.NoError(t, err)
		require.Empty(t, u.Scheme)
		require.Empty(t, u.Host)
		require.Equal(t, "console.example", base.ResolveReference(u).Host)
		require.Equal(t, out, cleanNext(out), "clean output is stable")
	})
}

// TestCSRFBoundToSession: a token is good only in the session it was
// issued for, changes at sign-in and sign-out, and a state change from
// another origin is refused.
func TestCSRFBoundToSession(t *testing.T) {
	t.Parallel()
	e := setup(t)
	a, b := e.client(t), e.client(t)
	_, _ = a.get("/login")
	preLogin := a.csrf
	a.login("operator")
	_, _ = a.get("/")
	require.NotEqual(t, preLogin, a.csrf, "the token changes at sign-in")
	b.login("operator")
	_, _ = b.get("/")
	require.NotEqual(t, a.csrf, b.csrf)

	resp, _ := b.post("/logout", url.Values{"_csrf": {a.csrf}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another session's token is refused")
	resp, _ = a.post("/logout", url.Values{"_csrf": {preLogin}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "the pre-sign-in token is dead after sign-in")
	resp, body := a.post("/logout", url.Values{"_csrf": {a.csrf}}, "Origin", "https://evil.example")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "not this console")
	resp, _ = a.post("/logout", url.Values{"_csrf": {a.csrf}}, "Sec-Fetch-Site", "cross-site")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp, _ = a.post("/logout", url.Values{"_csrf": {a.csrf}}, "Origin", "null")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an opaque origin from a sandboxed page is refused")

	resp, _ = a.post("/logout", url.Values{"_csrf": {a.csrf}}, "Origin", a.base, "Sec-Fetch-Site", "same-origin")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	signedIn := a.csrf
	_, _ = a.get("/login")
	require.NotEqual(t, signedIn, a.csrf, "the token changes at sign-out")
	require.NotEqual(t, preLogin, a.csrf, "the pre-session is new after sign-out")
}

// TestCookiesOverTLS: over https the cookies are __Host-, Secure and
// HttpOnly, and HSTS is sent; the same holds behind a trusted proxy that
// says https, and not for a client that merely claims it.
func TestCookiesOverTLS(t *testing.T) {
	t.Parallel()
	e := setupWith(t, setupOpts{tls: true})
	c := e.client(t)
	resp, _ := c.get("/login")
	require.Equal(t, "max-age=31536000", resp.Header.Get("Strict-Transport-Security"))
	csrfCk := cookieNamed(resp, "__Host-console_csrf")
	require.NotNil(t, csrfCk)
	require.True(t, csrfCk.Secure)
	require.True(t, csrfCk.HttpOnly)
	require.Equal(t, "/", csrfCk.Path)
	require.Empty(t, csrfCk.Domain)
	resp, _ = c.post("/login", url.Values{"_csrf": {c.csrf}, "name": {"viewer"}, "password": {testPassword}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	session := cookieNamed(resp, "__Host-console_session")
	require.NotNil(t, session)
	require.True(t, session.Secure)
	resp, _ = c.get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the __Host- session cookie signs in")

	p := setupWith(t, setupOpts{configure: func(c *Config) { c.TrustedProxies = []string{"10.0.0.1"} }})
	get := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Forwarded-Proto", "https")
		rec := httptest.NewRecorder()
		p.srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := get("10.0.0.1:1")
	require.Contains(t, rec.Header().Get("Set-Cookie"), "__Host-console_csrf=")
	require.Contains(t, rec.Header().Get("Set-Cookie"), "Secure")
	require.NotEmpty(t, rec.Header().Get("Strict-Transport-Security"))
	rec = get("192.0.2.1:1")
	require.NotContains(t, rec.Header().Get("Set-Cookie"), "Secure", "X-Forwarded-Proto from anyone else is ignored")
	require.Empty(t, rec.Header().Get("Strict-Transport-Security"))
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, ck := range resp.Cookies() {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

// TestHTTPServerTimeouts: the server HTTPServer builds drops a client that
// never finishes its headers, and has every timeout set by default.
func TestHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	hs := e.srv.HTTPServer(HTTPTimeouts{})
	require.Equal(t, DefaultHTTPTimeouts.ReadHeader, hs.ReadHeaderTimeout)
	require.NotZero(t, hs.ReadTimeout)
	require.NotZero(t, hs.WriteTimeout)
	require.NotZero(t, hs.IdleTimeout)
	require.NotZero(t, hs.MaxHeaderBytes)

	slow := e.srv.HTTPServer(HTTPTimeouts{ReadHeader: 200 * time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go slow.Serve(ln)
	t.Cleanup(func() { slow.Close() })
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n"))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = io.ReadAll(bufio.NewReader(conn))
	require.NoError(t, err, "the server closes the connection of a client that stalls in its headers")
}

// TestReadyzAnswersWithinASecond: with the schema table locked, /readyz
// still answers, 503, within its one-second budget, without error text.
func TestReadyzAnswersWithinASecond(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "LOCK TABLE console_schema_version IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	start := time.Now()
	resp, body := e.client(t).get("/readyz")
	took := time.Since(start)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.JSONEq(t, `{"status":"unavailable"}`, body)
	require.Less(t, took, 1900*time.Millisecond, "readyz must answer within about a second")
}

// TestMetricsExposeAuditHead: /metrics carries the audit chain's head.
func TestMetricsExposeAuditHead(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 2 {
		_, err := audit.RecordTx(context.Background(), e.srv.cfg.Pool, audit.Event{Actor: "ann", Role: "operator",
			Action: "queue.pause", Outcome: audit.OutcomeSucceeded})
		require.NoError(t, err)
	}
	_, body := e.client(t).get("/metrics")
	require.Contains(t, body, "console_audit_head_seq 2")
}
