package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// serveInProcess runs `console serve` with getenv until the test ends and
// returns the URL it serves on and the lines it printed before serving.
func serveInProcess(t *testing.T, getenv env, args ...string) (string, []string) {
	t.Helper()
	out := serveBackground(t, getenv, args...)
	deadline := time.Now().Add(90 * time.Second)
	for {
		lines, closed := out.snapshot()
		for i, l := range lines {
			if m := servingRE.FindStringSubmatch(l); m != nil {
				return m[1], lines[:i+1]
			}
		}
		if closed {
			t.Fatalf("serve exited before serving:\n%s", strings.Join(lines, "\n"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start in time:\n%s", strings.Join(lines, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeAndWorkerAsRuntimeRoles runs `console serve` as console_web and
// `console worker` as console_worker on a schema owned by a separate
// migration role, with nothing granted beyond `console roles sql`, and
// checks the roles hold exactly the reviewed rights (testdb.ConsoleGrants).
func TestServeAndWorkerAsRuntimeRoles(t *testing.T) {
	ctx := context.Background()
	dbURL := testdb.OwnedURL(t)
	out, err := runCmd(t, envMap(), "roles", "sql")
	require.NoError(t, err)
	require.Equal(t, actions.RolesSQL(), out)
	testdb.Roles(t, dbURL, out)
	require.Empty(t, testdb.ConsoleGrantsDiff(t, dbURL), "the roles hold exactly the rights reviewed, no more")
	owner := testdb.Pool(t, testdb.AsUser(t, dbURL, testdb.OwnerRole))

	t.Run("ServeAsConsoleWeb", func(t *testing.T) {
		webURL := testdb.AsUser(t, dbURL, "console_web")
		token, err := auth.TokenCreate(ctx, owner, "ci", auth.RoleOperator)
		require.NoError(t, err)
		base, started := serveInProcess(t, envMap("DATABASE_URL", webURL))
		require.Contains(t, started, "history recording: on (every 10s)")
		require.Contains(t, started, "lock episodes: looking for lock waits every 1s")

		post := func(key string) (int, string) {
			req, err := http.NewRequest(http.MethodPost, base+"/api/v1/actions/queue.pause",
				strings.NewReader(`{"params": {"queue": "emails"}, "reason": "runtime role check"}`))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		code, body := post("pause-emails-1")
		require.Equal(t, http.StatusOK, code, body)
		var got struct {
			AuditID int64 `json:"audit_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &got))
		require.Positive(t, got.AuditID)
		code, again := post("pause-emails-1")
		require.Equal(t, http.StatusOK, code, again)
		require.JSONEq(t, body, again, "the keyed request is replayed")

		// Alertmanager's webhook records the notification it acts on.
		req, err := http.NewRequest(http.MethodPost, base+"/api/v1/alerts", strings.NewReader(`{"version": "4", "alerts": [
			{"status": "firing", "labels": {"alertname": "QueueBacklog"}, "fingerprint": "f1", "startsAt": "2026-01-01T00:00:00Z"}]}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "POST /api/v1/alerts: %s", b)

		for _, path := range []string{"/api/v1/findings", "/readyz", "/api/v1/history?check=queues&from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z", "/history?window=15m", "/lock-episodes", "/api/v1/lock-episodes?since=1h"} {
			req, err := http.NewRequest(http.MethodGet, base+path, nil)
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
		}
	})

	t.Run("WorkerAsConsoleWorker", func(t *testing.T) {
		_, err := queues.EnqueueManyTx(ctx, owner, []queues.EnqueueParams{
			{Queue: "runtime", Kind: "sleep", Payload: map[string]int{"ms": 10}},
			{Queue: "runtime", Kind: "sleep", Payload: map[string]int{"ms": 10}},
			{Queue: "runtime", Kind: recorder.KindPruneHistory},
		})
		require.NoError(t, err)
		startWorker(t, testdb.AsUser(t, dbURL, "console_worker"), "--queues runtime --concurrency 2 --poll 100ms")
		require.Eventually(t, func() bool {
			var n int
			require.NoError(t, owner.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&n))
			return n == 3
		}, 60*time.Second, 50*time.Millisecond, "the worker ran the jobs, prune_history too, as console_worker")
	})

	t.Run("HistoryOffSaysWhyAtStart", func(t *testing.T) {
		super := testdb.Pool(t, dbURL)
		_, err := super.Exec(ctx, "REVOKE INSERT ON history_samples FROM console_web")
		require.NoError(t, err)
		t.Cleanup(func() { testdb.Roles(t, dbURL, out) })
		_, started := serveInProcess(t, envMap("DATABASE_URL", testdb.AsUser(t, dbURL, "console_web")))
		require.Contains(t, started, "history recording: off: the role console_web may not read and insert into history_samples; "+
			"run `console roles sql` as a superuser in this database (it grants them to console_web)")
	})

	t.Run("MigrateStatusAsTheRuntimeRole", func(t *testing.T) {
		_, err := runCmd(t, envMap("DATABASE_URL", testdb.AsUser(t, dbURL, "console_web")), "migrate", "status")
		require.NoError(t, err, "the runtime role may read the schema version")
	})
}

func TestProxyRolesFlag(t *testing.T) {
	c, err := parseServe([]string{"--proxy-roles", "alice=admin, group:sre=operator"}, envMap())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"alice": "admin", "group:sre": "operator"}, c.ProxyRoles)
	require.False(t, c.ProxyRoleHeader)
	for _, bad := range []string{"alice", "alice=root", "=admin", "group:=viewer"} {
		_, err := parseServe([]string{"--proxy-roles", bad}, envMap())
		require.ErrorContains(t, err, "--proxy-roles", bad)
	}
	c, err = parseServe(nil, envMap("CONSOLE_PROXY_ROLE_HEADER", "1", "CONSOLE_SIGNAL_ANY_DATABASE", "1"))
	require.NoError(t, err)
	require.True(t, c.ProxyRoleHeader)
	require.True(t, c.SignalAnyDatabase)
}
