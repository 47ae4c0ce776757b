package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestServeAndWorkerThroughTransactionPooler runs `console serve` and
// `console worker` with DATABASE_URL pointing at PgBouncer in transaction
// mode and --pooler transaction, without a direct URL: pages render, an
// action runs through the API, the flight recorder writes history and the
// worker works its queue by polling.
func TestServeAndWorkerThroughTransactionPooler(t *testing.T) {
	ctx := context.Background()
	dbURL := testdb.URL(t)
	through := testdb.PgBouncer(t, dbURL)
	direct := testdb.Pool(t, dbURL)

	t.Run("RefusedWithoutPoolerMode", func(t *testing.T) {
		_, err := runCmd(t, envMap("DATABASE_URL", through), "serve", "--addr", "127.0.0.1:0")
		require.ErrorContains(t, err, "start with --pooler transaction")
	})

	t.Run("Serve", func(t *testing.T) {
		token, err := auth.TokenCreate(ctx, direct, "ci", auth.RoleOperator)
		require.NoError(t, err)
		base, _ := serveInProcess(t, envMap("DATABASE_URL", through, "CONSOLE_POOLER", "transaction"), "--history-interval", "1s")
		send := func(method, path, body string) (int, string, error) {
			req, err := http.NewRequest(method, base+path, strings.NewReader(body))
			if err != nil {
				return 0, "", err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), err
		}
		do := func(method, path, body string) (int, string) {
			code, b, err := send(method, path, body)
			require.NoError(t, err)
			return code, b
		}
		for _, path := range []string{"/", "/queues", "/jobs", "/workers", "/schedules", "/audit", "/history", "/api/v1/findings", "/readyz"} {
			code, body := do(http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, code, "%s: %s", path, body)
		}
		// Panels side by side, a few times over: the diagnostics pool's
		// connections take turns on the pooler's server sessions, where a
		// statement prepared by one is missing for, or clashes with, another.
		panels := []string{"connections", "activity", "lock_waits", "idle_in_transaction", "blocking_tree", "queue_health"}
		var wg sync.WaitGroup
		failed := make(chan string, 3*len(panels))
		for range 3 {
			for _, name := range panels {
				wg.Go(func() {
					code, body, err := send(http.MethodGet, "/panels/"+name, "")
					if err != nil || code != http.StatusOK || strings.Contains(body, "SQLSTATE") {
						failed <- fmt.Sprintf("panel %s: %d %v %s", name, code, err, body)
					}
				})
			}
		}
		wg.Wait()
		close(failed)
		for f := range failed {
			t.Error(f)
		}
		code, body := do(http.MethodPost, "/api/v1/actions/queue.pause", `{"params": {"queue": "emails"}, "reason": "pooler check"}`)
		require.Equal(t, http.StatusOK, code, body)
		require.Equal(t, 1, testdb.Count(t, direct, "SELECT count(*) FROM queue_settings WHERE queue = 'emails' AND paused"))
		require.Equal(t, 1, testdb.Count(t, direct, "SELECT count(*) FROM audit_events WHERE action = 'queue.pause'"))
		testdb.Eventually(t, 30*time.Second, "a history sample recorded through the pooler", func() bool {
			return testdb.Count(t, direct, "SELECT count(*) FROM history_samples") > 0
		})
	})

	t.Run("Worker", func(t *testing.T) {
		params := make([]queues.EnqueueParams, 20)
		for i := range params {
			params[i] = queues.EnqueueParams{Queue: "pooled", Kind: "sleep", Payload: map[string]int{"ms": 10}}
		}
		_, err := queues.EnqueueManyTx(ctx, direct, params)
		require.NoError(t, err)
		startWorker(t, through, "--queues pooled --concurrency 2 --poll 100ms --pooler transaction")
		testdb.Eventually(t, 60*time.Second, "the worker behind the pooler ran every job", func() bool {
			return testdb.Count(t, direct, "SELECT count(*) FROM jobs WHERE queue = 'pooled' AND status = 'done'") == len(params)
		})
	})
}

// TestPoolerSettings: --pooler and --direct-url (and their variables) are
// checked at start, with a sentence that says what to do.
func TestPoolerSettings(t *testing.T) {
	const db = "postgres://u@127.0.0.1:6432/app"
	c, err := parseServe(nil, envMap("DATABASE_URL", db, "CONSOLE_POOLER", "transaction"))
	require.NoError(t, err)
	require.True(t, c.Pooler.transaction())
	c, err = parseServe([]string{"--pooler", "transaction", "--direct-url", "postgres://u@127.0.0.1:5432/app", "--migrate"}, envMap("DATABASE_URL", db))
	require.NoError(t, err)
	require.Equal(t, "postgres://u@127.0.0.1:5432/app", c.Pooler.DirectURL)
	for _, tc := range []struct {
		args []string
		env  env
		want string
	}{
		{[]string{"--pooler", "session"}, envMap("DATABASE_URL", db), `--pooler "session" (CONSOLE_POOLER): use none`},
		{nil, envMap("DATABASE_URL", db, "CONSOLE_DIRECT_DATABASE_URL", db), "is for --pooler transaction only"},
		{[]string{"--pooler", "transaction"}, envMap(), "--pooler transaction needs DATABASE_URL"},
		{[]string{"--pooler", "transaction", "--migrate"}, envMap("DATABASE_URL", db), "migrations cannot run through a transaction pooler"},
		{[]string{"--pooler", "transaction", "--direct-url", "mysql://h/db"}, envMap("DATABASE_URL", db), "expected postgres://"},
	} {
		_, err := parseServe(tc.args, tc.env)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}

// TestMigrateBesideTransactionPooler: `console migrate up` behind a
// transaction pooler refuses to run through it (tern holds a session
// advisory lock) and migrates on the direct URL when one is given.
func TestMigrateBesideTransactionPooler(t *testing.T) {
	dbURL := testdb.EmptyURL(t)
	through := testdb.PgBouncer(t, dbURL)
	_, err := runCmd(t, envMap("DATABASE_URL", through, "CONSOLE_POOLER", "transaction"), "migrate", "up")
	require.ErrorContains(t, err, "migrations cannot run through a transaction pooler")
	out, err := runCmd(t, envMap("DATABASE_URL", through, "CONSOLE_POOLER", "transaction", "CONSOLE_DIRECT_DATABASE_URL", dbURL), "migrate", "up")
	require.NoError(t, err)
	require.Contains(t, out, "up to date")
	out, err = runCmd(t, envMap("DATABASE_URL", through, "CONSOLE_POOLER", "transaction"), "migrate", "status")
	require.NoError(t, err, "status reads through the pooler")
	require.NotContains(t, out, "pending")
}
