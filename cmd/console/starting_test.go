package main

import (
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// outputLog collects a process's output lines for tests that wait on them.
type outputLog struct {
	mu     sync.Mutex
	lines  []string
	closed bool // the output ended
}

func (o *outputLog) follow(r io.Reader) {
	for l := range lineChan(r) {
		o.mu.Lock()
		o.lines = append(o.lines, l)
		o.mu.Unlock()
	}
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// snapshot returns the lines so far and whether the output has ended.
func (o *outputLog) snapshot() ([]string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lines), o.closed
}

// find returns the first submatch of re in the output so far, or "".
func (o *outputLog) find(re *regexp.Regexp) string {
	lines, _ := o.snapshot()
	for _, l := range lines {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[len(m)-1]
		}
	}
	return ""
}

func (o *outputLog) String() string {
	lines, _ := o.snapshot()
	return strings.Join(lines, "\n")
}

// serveBackground runs `console serve --addr 127.0.0.1:0` with getenv in
// this process until the test ends (it must then stop cleanly within 60s)
// and returns its output as it comes; a failed test logs it.
func serveBackground(t *testing.T, getenv env, args ...string) *outputLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), getenv, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	out := &outputLog{}
	go out.follow(pr)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "serve stops cleanly")
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop within 60s")
		}
		if t.Failed() {
			t.Logf("serve's output:\n%s", out)
		}
	})
	return out
}

// seedConsole migrates the database at dbURL and adds the operator name
// (password "correct horse battery") and an API token of role, which it
// returns.
func seedConsole(t *testing.T, dbURL, name, role string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	_, err = auth.OperatorAdd(ctx, conn, name, role, "correct horse battery")
	require.NoError(t, err)
	token, err := auth.TokenCreate(ctx, conn, "ci", role)
	require.NoError(t, err)
	return token
}

// fillSlots opens superuser connections to url until the server refuses one
// with "too many clients" (SQLSTATE 53300), and returns them; they are
// closed at cleanup if the test has not closed them.
func fillSlots(t *testing.T, url string) []*pgx.Conn {
	t.Helper()
	ctx := context.Background()
	var conns []*pgx.Conn
	t.Cleanup(func() { closeAll(conns) })
	for range 500 {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			var pgErr *pgconn.PgError
			require.True(t, errors.As(err, &pgErr) && pgErr.Code == "53300", "fill the server: %v", err)
			return conns
		}
		conns = append(conns, c)
	}
	t.Fatal("the server took 500 connections without refusing one")
	return nil
}

func closeAll(conns []*pgx.Conn) {
	for _, c := range conns {
		c.Close(context.Background())
	}
}

// get fetches url with an optional bearer token and returns the status and
// body; a transport error fails the test.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// A console started while every connection slot is taken does not exit: it
// serves a page that says the database refuses connections and why, tries
// again, and serves findings once slots are freed, without a restart. Once
// in, it keeps working when the slots fill up again: its diagnostics
// connections stay open, and the findings name the storm.
func TestServeWaitsForAFullServer(t *testing.T) {
	settings := maps.Clone(testdb.ServerSettings)
	settings["max_connections"] = "24"
	srv := testdb.NewServer(t, settings)
	dbURL := srv.URL("postgres")
	ctx := context.Background()
	token := seedConsole(t, dbURL, "alice", auth.RoleViewer)

	fillers := fillSlots(t, dbURL)
	out := serveBackground(t, envMap("DATABASE_URL", dbURL))

	listening := regexp.MustCompile(`listening on (http://\S+);`)
	testdb.Eventually(t, 30*time.Second, "serve listens and says it waits for the database", func() bool {
		return out.find(listening) != "" && strings.Contains(out.String(), "waiting for the database")
	})
	base := out.find(listening)
	require.Contains(t, out.String(), "SQLSTATE 53300")

	status, body := get(t, base+"/", "")
	require.Equal(t, http.StatusOK, status, "the starting page is a page, not an error a proxy would replace")
	require.Contains(t, body, `data-testid="starting-reason"`)
	require.Contains(t, body, "too many clients")
	require.Contains(t, body, "reserved_connections", "the page says what to do")
	require.NotContains(t, body, target(dbURL), "anyone may read the page: it names no address or user")
	status, body = get(t, base+"/api/v1/findings", token)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, body, `"error":"starting"`)
	require.NotContains(t, body, target(dbURL))
	status, _ = get(t, base+"/healthz", "")
	require.Equal(t, http.StatusOK, status)

	closeAll(fillers)
	serving := regexp.MustCompile(`console is serving on (http://\S+)`)
	testdb.Eventually(t, 60*time.Second, "serve connects once slots are free", func() bool {
		return out.find(serving) != ""
	})
	require.Equal(t, base, out.find(serving), "the same address from the first answer on")
	status, body = get(t, base+"/api/v1/findings", token)
	require.Equal(t, http.StatusOK, status, body)

	// Its diagnostics connections are open whole before the next storm.
	check, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	testdb.Eventually(t, 30*time.Second, "the diagnostics pools hold their floor", func() bool {
		var n int
		require.NoError(t, check.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
			diagnostics.ApplicationName).Scan(&n))
		return n == 4
	})

	// The storm again: every slot taken, the console already in.
	filled := time.Now()
	fillSlots(t, dbURL)
	testdb.Eventually(t, 60*time.Second, "findings of a round after the fill name the storm", func() bool {
		status, body := get(t, base+"/api/v1/findings", token)
		require.Equal(t, http.StatusOK, status, "the console keeps answering while the server is full: %s", body)
		return strings.Contains(body, `"code":"connections.near_max"`) && roundAfter(body, filled)
	})
}

var generatedAtRE = regexp.MustCompile(`"generated_at":"([^"]+)"`)

// roundAfter reports whether the findings document body was generated
// after t.
func roundAfter(body string, t time.Time) bool {
	m := generatedAtRE.FindStringSubmatch(body)
	if m == nil {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, m[1])
	return err == nil && at.After(t)
}

// Only refusals that pass by themselves are tried again; a wrong password
// or database name fails the start at once.
func TestRefusalPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"TooManyClients", &pgconn.PgError{Code: "53300"}, true},
		{"StartingUp", &pgconn.PgError{Code: "57P03"}, true},
		{"AdminShutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"ConnectionFailure", &pgconn.PgError{Code: "08006"}, true},
		{"PoolerRefusesAStartupParameter", &pgconn.PgError{Code: "08P01"}, false},
		{"WrongPassword", &pgconn.PgError{Code: "28P01"}, false},
		{"NoSuchDatabase", &pgconn.PgError{Code: "3D000"}, false},
		{"ConnectionRefused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"Timeout", context.DeadlineExceeded, true},
		{"NoSuchHost", &net.DNSError{Err: "no such host", Name: "db.invalid", IsNotFound: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := connectError("postgres://u@db:5432/app", tc.err)
			require.Equal(t, tc.want, refusalPasses(wrapped), "%v", wrapped)
		})
	}
}
