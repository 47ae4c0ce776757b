package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// TestServeOnAStandby: `console serve` attached to a real streaming
// standby starts, serves pages with the read-only banner naming the
// primary, takes an API token, refuses an action with 409 and the sentence,
// and its scheduler and history writer stand down with one line each; once
// the standby is promoted the console leaves read-only mode by itself.
func TestServeOnAStandby(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	primary := testdb.NewServer(t, nil)
	admin, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE console")
	require.NoError(t, err)
	admin.Close(ctx)
	token := seedConsole(t, primary.URL("console"), "ann", auth.RoleOperator)

	standby := testdb.Standby(t, primary, nil, "console_standby")
	base, stdout, stderr := serveAttachedLogs(t, standby.URL("console"))
	require.Contains(t, stdout.String(), "the database is a standby (read-only)")
	require.NotContains(t, stdout.String(), "one-time password", "nothing is written at start")

	get := func(path string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		return do(t, req)
	}
	openIncident := func() (int, string) {
		body := `{"params": {"title": "replica drill"}, "reason": "drill"}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/actions/incident.open", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return do(t, req)
	}

	sentence := fmt.Sprintf("Read-only: connected to a standby of 127.0.0.1:%d; actions are off", primary.Port())
	for _, path := range []string{"/", "/queues", "/database/replication", "/incidents"} {
		status, body := get(path)
		require.Equal(t, http.StatusOK, status, "%s: %s", path, body)
		require.Contains(t, body, sentence, "%s shows the banner", path)
	}
	status, body := get("/api/v1/findings")
	require.Equal(t, http.StatusOK, status, body)

	status, body = openIncident()
	require.Equal(t, http.StatusConflict, status, body)
	var refusal struct{ Error, Code string }
	require.NoError(t, json.Unmarshal([]byte(body), &refusal))
	require.Equal(t, sentence, refusal.Error)
	require.Equal(t, "read_only", refusal.Code)

	// A password sign-in works on the standby: the session lives in this
	// process, since the standby cannot store it, and sign-out ends it.
	_, login := browserGet(t, http.DefaultClient, base+"/login")
	require.Contains(t, login, "A standby cannot store sessions: a sign-in here lasts until this console stops")
	browser := signInWithPassword(t, base, "ann", "correct horse battery")
	status, body = browserGet(t, browser, base+"/queues")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, sentence)
	require.Contains(t, body, "ann (operator)", "signed in as ann")
	_, page := browserGet(t, browser, base+"/incidents")
	resp, err := browser.PostForm(base+"/logout", url.Values{"_csrf": {csrfOf(t, page)}})
	require.NoError(t, err)
	resp.Body.Close()
	_, body = browserGet(t, browser, base+"/queues")
	require.True(t, strings.Contains(body, `data-testid="login"`), "signed out: the next page asks for a sign-in")

	// The scheduler stands down with one line; the history writer, off
	// from the start, says nothing.
	testdb.Eventually(t, 30*time.Second, "the scheduler stands down", func() bool {
		return strings.Contains(stderr.String(), "scheduler standing down")
	})

	promote := testdb.Connect(t, standby.URL("console"), "promote")
	_, err = promote.Exec(ctx, "SELECT pg_promote()")
	require.NoError(t, err)
	testdb.Eventually(t, 30*time.Second, "the banner goes once the standby is promoted", func() bool {
		_, body := get("/queues")
		return !strings.Contains(body, "Read-only:")
	})
	status, body = openIncident()
	require.Equal(t, http.StatusOK, status, body)
	testdb.Eventually(t, 30*time.Second, "the scheduler and the history writer resume", func() bool {
		return strings.Contains(stderr.String(), "scheduler resuming") && strings.Contains(stderr.String(), "history recording is on")
	})

	log := stderr.String()
	for msg, n := range map[string]int{
		"read-only mode: the database is a standby": 1,
		"read-only mode left":                       1,
		"scheduler standing down":                   1,
		"scheduler resuming":                        1,
		"history recording is on":                   1,
		"history recording is off":                  0,
		"scheduler step failed":                     0,
		"request failed":                            0,
	} {
		require.Equal(t, n, countLogLines(log, msg), "log lines with %q:\n%s", msg, log)
	}
}

// do sends req and returns the status and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// countLogLines counts the JSON log lines whose message starts with msg.
func countLogLines(log, msg string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		var l struct{ Msg string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, msg) {
			n++
		}
	}
	return n
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrfOf is the CSRF token of a page's forms.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	require.NotNil(t, m, "no form with a CSRF token: %s", page)
	return m[1]
}

// signInWithPassword signs name in at base as a browser would (its cookies
// in a jar) and returns that browser.
func signInWithPassword(t *testing.T, base, name, password string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	_, form := browserGet(t, c, base+"/login")
	resp, err := c.PostForm(base+"/login", url.Values{"_csrf": {csrfOf(t, form)}, "name": {name}, "password": {password}, "next": {"/"}})
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the sign-in leads to the overview: %s", b)
	require.NotContains(t, string(b), `data-testid="login-error"`, "signed in")
	return c
}

// browserGet fetches url with c's cookies.
func browserGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
