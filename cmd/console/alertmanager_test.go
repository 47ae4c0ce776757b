package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// startAlertmanager starts a real Alertmanager (Debian's
// prometheus-alertmanager) with config, on loopback, clustering off. It is
// stopped at cleanup (its log is printed when the test failed) and returns
// its address (host:port).
func startAlertmanager(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "alertmanager.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))
	out, err := exec.Command(promBinary(t, "amtool"), "check-config", cfgPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	addr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	startDaemon(t, "prometheus-alertmanager", addr, "--config.file="+cfgPath,
		"--storage.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--cluster.listen-address=", "--log.level=debug")
	return addr
}

// holdLockChain stages a real lock chain whose root is a queue worker
// running a real job; it lasts until the test ends. It returns the root's
// pid and the job's id.
func holdLockChain(t *testing.T, dbURL string) (rootPID int32, jobID int64) {
	t.Helper()
	ctx := context.Background()
	connect := func(name string) *pgx.Conn { return testdb.Connect(t, dbURL, name) }
	admin := connect("test-setup")
	require.NoError(t, admin.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at)
		VALUES ('reports', 'monthly_totals', 'running', 'worker-1', now() + interval '1 hour', now()) RETURNING id`).Scan(&jobID))
	_, err := admin.Exec(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL DEFAULT 0); INSERT INTO accounts (id) VALUES (1)`)
	require.NoError(t, err)
	rootApp := fmt.Sprintf("console-worker job=%d", jobID)
	root, waiter := connect(rootApp), connect("billing")
	require.NoError(t, root.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&rootPID))
	bg, cancel := context.WithTimeout(ctx, 5*time.Minute)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	run := func(c *pgx.Conn, sql string) {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.Exec(bg, sql) }()
	}
	run(root, "WITH held AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT pg_sleep(300) FROM held")
	testdb.WaitBackend(t, admin, rootApp, "wait_event = 'PgSleep'")
	run(waiter, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
	testdb.WaitBackend(t, admin, "billing", "wait_event_type = 'Lock'")
	return rootPID, jobID
}

// A real Prometheus scrapes a real `console serve` with the shipped rules;
// a real Alertmanager, configured from the shipped example route, sends
// the console's alerts to POST /api/v1/alerts. A real lock chain makes
// ConsoleBlockedBackends fire (after its 30s threshold); the console opens
// an incident with the alert's labels and the blocking tree, root and job
// captured at that moment.
func TestAlertmanagerOpensIncidentFromLockChain(t *testing.T) {
	testdb.SkipShort(t, "Prometheus and Alertmanager processes of their own")
	t.Parallel()
	ctx := context.Background()
	c := serveForPrometheus(t)
	pool, consoleURL := c.pool, c.url
	hook, err := auth.TokenCreateWith(ctx, pool, "alertmanager", auth.RoleOperator, auth.TokenOptions{Scope: auth.ScopeAlerts})
	require.NoError(t, err)

	shipped, err := os.ReadFile("../../deploy/alertmanager/alertmanager.yml")
	require.NoError(t, err)
	tokenFile := filepath.Join(t.TempDir(), "console-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(hook), 0o600))
	amConfig := strings.NewReplacer("https://console.example.internal", consoleURL,
		"/etc/alertmanager/console-token", tokenFile).Replace(string(shipped))
	amConfig = regexp.MustCompile(`(?m)^(\s+group_wait: )\S+$`).ReplaceAllString(amConfig, "${1}1s")
	amConfig = regexp.MustCompile(`(?m)^(\s+group_interval: )\S+$`).ReplaceAllString(amConfig, "${1}1s")
	amConfig = regexp.MustCompile(`(?m)^(\s+repeat_interval: )\S+$`).ReplaceAllString(amConfig, "${1}1s")
	am := startAlertmanager(t, amConfig)

	c.startPrometheus(t, fmt.Sprintf("alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [%q]\n", am))

	rootPID, jobID := holdLockChain(t, c.dbURL)

	// The chain must be 30s old before the rule fires; serve refreshes its
	// diagnostics at most every 15s: two minutes leave room on a loaded
	// machine.
	// The incident opens first; the runbook step's panels are captured into
	// it right after, in the same notification.
	// Another shipped alert may fire first on the shared test server
	// (checkpoint pressure from other tests' CREATE DATABASE): this one
	// then joins the incident that alert opened.
	var inc audit.Incident
	var evidence []audit.Evidence
	waitFor(t, 150*time.Second, "an incident opened or joined by ConsoleBlockedBackends, with its blocking tree", func() bool {
		var id int64
		err := pool.QueryRow(ctx, `SELECT incident_id FROM alert_notifications
			WHERE alertname = 'ConsoleBlockedBackends' AND status = 'firing' AND incident_id IS NOT NULL`).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		require.NoError(t, err)
		got, err := audit.IncidentGet(ctx, pool, id)
		require.NoError(t, err)
		inc = *got
		evidence, err = audit.EvidenceList(ctx, pool, id)
		require.NoError(t, err)
		for _, e := range evidence {
			if strings.Contains(string(e.Data), fmt.Sprintf(`"pid": %d`, rootPID)) {
				return true
			}
		}
		return false
	})
	require.Equal(t, "open", inc.Status)
	var captured int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
		WHERE action = 'incident.capture' AND reason LIKE 'alert ConsoleBlockedBackends firing%'`).Scan(&captured))
	require.Positive(t, captured)
	tree := ""
	for _, e := range evidence {
		tree += string(e.Data)
	}
	require.Contains(t, tree, fmt.Sprintf(`"pid": %d`, rootPID), "the blocking tree captured names the root blocker: %+v", evidence)
	require.Contains(t, tree, fmt.Sprintf(`"job_id": %d`, jobID), "and the job it runs")
	md, err := audit.IncidentMarkdown(ctx, pool, inc.ID)
	require.NoError(t, err)
	require.Contains(t, md, `alert ConsoleBlockedBackends firing: {alertname="ConsoleBlockedBackends"`)
	require.Contains(t, md, `severity="critical"`)

	// Alertmanager repeats the notification every repeat_interval (1s
	// here) while it fires; the console acts on it once.
	waitFor(t, 60*time.Second, "three webhook notifications from Alertmanager", func() bool {
		resp, err := http.Get("http://" + am + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		m := regexp.MustCompile(`(?m)^alertmanager_notifications_total\{integration="webhook"\} (\d+)`).FindSubmatch(b)
		if m == nil {
			return false
		}
		sent, err := strconv.Atoi(string(m[1]))
		return err == nil && sent >= 3
	})
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM alert_notifications WHERE alertname = 'ConsoleBlockedBackends' AND status = 'firing'").Scan(&n))
	require.Equal(t, 1, n)
	var captures int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM audit_events
		WHERE action = 'incident.capture' AND reason LIKE 'alert ConsoleBlockedBackends firing%'`).Scan(&captures))
	require.Equal(t, captured, captures, "no capture per repeated notification")
}
