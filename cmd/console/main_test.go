package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
)

// TestMain doubles as the console binary: with CONSOLE_TEST_MAIN=1 the test
// binary runs main(), so process tests exercise the real command without a
// separate build.
func TestMain(m *testing.M) {
	if os.Getenv("CONSOLE_TEST_MAIN") == "1" {
		os.Args = append([]string{"console"}, strings.Fields(os.Getenv("CONSOLE_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	testdb.Main(m)
}

func envMap(kv ...string) env {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func runCmd(t *testing.T, getenv env, args ...string) (string, error) {
	t.Helper()
	return runCmdWithin(t, 30*time.Second, getenv, args...)
}

// runCmdWithin is runCmd with its own deadline, for commands that run
// fixed-length phases (the bench modes).
func runCmdWithin(t *testing.T, within time.Duration, getenv env, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	err := run(ctx, args, getenv, strings.NewReader(""), &out, io.Discard)
	return out.String(), err
}

func TestHelpAndUsage(t *testing.T) {
	out, err := runCmd(t, envMap(), "help")
	require.NoError(t, err)
	for _, want := range []string{"console migrate up|status", "--addr", "DATABASE_URL", "--pg-bin"} {
		require.Contains(t, out, want)
	}
	// -h and --help print the same help and succeed, before a command
	// (serve's flags) or after one.
	for _, args := range [][]string{{"--help"}, {"-h"}, {"worker", "--help"}, {"migrate", "up", "-h"}, {"bench", "burn", "--help"},
		{"audit", "--help"}, {"operator", "-h"}, {"bench", "--help"}} {
		got, err := runCmd(t, envMap(), args...)
		require.NoError(t, err, "%v", args)
		require.Equal(t, out, got, "%v", args)
	}
	_, err = runCmd(t, envMap(), "frobnicate")
	require.ErrorAs(t, err, new(usageError))
	_, err = runCmd(t, envMap(), "serve", "--metrics", "sometimes")
	require.ErrorContains(t, err, "use open, token or off")
	_, err = runCmd(t, envMap(), "migrate")
	require.ErrorAs(t, err, new(usageError))
	for _, bad := range [][]string{{"--attempts", "0"}, {"--lock-timeout", "-1s"}} {
		_, err = runCmd(t, envMap(), append([]string{"migrate", "up"}, bad...)...)
		require.ErrorAs(t, err, new(usageError), "%v", bad)
		require.ErrorContains(t, err, bad[0]+" "+bad[1])
	}
	for _, d := range []string{"0s", "-1s", "2h"} {
		_, err = runCmd(t, envMap(), "worker", "--drain", d)
		require.ErrorAs(t, err, new(usageError), "--drain %s", d)
		require.ErrorContains(t, err, "--drain (CONSOLE_DRAIN) "+d)
	}
	_, err = runCmd(t, envMap(), "serve", "--tls-cert", "cert.pem")
	require.ErrorContains(t, err, "--tls-cert and --tls-key go together")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	_, err = runCmd(t, envMap("DATABASE_URL", "postgres://u@127.0.0.1:1/db"), "serve", "--tls-cert", missing, "--tls-key", missing)
	require.ErrorContains(t, err, "give a PEM certificate and its private key")
}

func TestRedact(t *testing.T) {
	require.Equal(t, "postgres://u:xxxxx@h:5432/db", redact("postgres://u:secret@h:5432/db"))
	require.Equal(t, "postgres://h/db?password=xxxxx", redact("postgres://h/db?password=secret"))
	require.Equal(t, "u@h:5432/db", target("postgres://u:secret@h:5432/db"))
	var out bytes.Buffer
	serveConfig{Addr: "a", DatabaseURL: "postgres://u:hunter2@h/db", StandbyURLs: []string{"postgres://r:pw2@s/db"}}.print(&out)
	require.NotContains(t, out.String(), "hunter2")
	require.NotContains(t, out.String(), "pw2")
}

// Each failure gives one line that says what is wrong and what to do.
func TestClearFailures(t *testing.T) {
	t.Run("WrongURL", func(t *testing.T) {
		_, err := runCmd(t, envMap("DATABASE_URL", "mysql://u:pw@h/db"), "migrate", "status")
		require.ErrorContains(t, err, "expected postgres://")
		_, err = runCmd(t, envMap("DATABASE_URL", "postgres://u:pw@h:notaport/db"), "migrate", "status")
		require.Error(t, err)
		require.NotContains(t, err.Error(), ":pw@", "the password must not be printed")
	})
	t.Run("Unreachable", func(t *testing.T) {
		_, err := runCmd(t, envMap("DATABASE_URL", "postgres://u:pw@127.0.0.1:1/db"), "migrate", "status")
		require.ErrorContains(t, err, "connection refused; is PostgreSQL running there")
	})
	t.Run("SchemaBehind", func(t *testing.T) {
		url := testdb.EmptyURL(t)
		out, err := runCmd(t, envMap("DATABASE_URL", url), "migrate", "status")
		require.NoError(t, err)
		require.Contains(t, out, "schema version 0 of")
		require.Contains(t, out, "console migrate up")
		_, err = runCmd(t, envMap("DATABASE_URL", url), "serve", "--addr", "127.0.0.1:0")
		require.ErrorContains(t, err, "run `console migrate up` or start with --migrate")
		out, err = runCmd(t, envMap("DATABASE_URL", url), "migrate", "up")
		require.NoError(t, err)
		require.Contains(t, out, "up to date")
		out, err = runCmd(t, envMap("DATABASE_URL", url), "migrate", "status")
		require.NoError(t, err)
		require.NotContains(t, out, "pending")
	})
	t.Run("NoServerBinaries", func(t *testing.T) {
		_, err := runCmd(t, envMap(), "serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--pg-bin", t.TempDir())
		require.ErrorContains(t, err, "no postgres in")
	})
	t.Run("CommandNeedsDatabaseURL", func(t *testing.T) {
		for cmd, want := range map[string]string{
			"migrate status": "migrate needs DATABASE_URL",
			"findings":       "findings needs DATABASE_URL",
			"token list":     "this command needs DATABASE_URL",
		} {
			_, err := runCmd(t, envMap(), strings.Fields(cmd)...)
			require.ErrorContains(t, err, want, cmd)
		}
	})
	t.Run("AccountCommandNeedsName", func(t *testing.T) {
		_, err := runCmd(t, envMap(), "token", "revoke")
		require.ErrorContains(t, err, "token revoke needs --name (see `console token list`)")
		_, err = runCmd(t, envMap(), "operator", "disable", "--name", "")
		require.ErrorContains(t, err, "operator disable needs --name")
	})
	t.Run("ImageNeedsDatabaseURL", func(t *testing.T) {
		_, err := runCmd(t, envMap("CONSOLE_REQUIRE_DATABASE_URL", "1"), "serve")
		require.ErrorContains(t, err, "DATABASE_URL is required here")
	})
	t.Run("PortBusy", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		_, err = runCmd(t, envMap(), "serve", "--addr", ln.Addr().String(), "--data-dir", t.TempDir())
		require.ErrorContains(t, err, "choose another --addr")
	})
}

// TestServeSIGTERMWhileStarting: a SIGTERM while `console serve` waits in
// a start step (here: counting operators behind a lock) ends it with exit 0
// and a line that says it never served, not with the step's "context
// canceled".
func TestServeSIGTERMWhileStarting(t *testing.T) {
	url := testdb.URL(t)
	release := testdb.HoldLock(t, url, "operators")
	cmd, out := startConsoleOutput(t, url, "serve --addr 127.0.0.1:0")
	testdb.WaitBackend(t, testdb.Pool(t, url), "console", "wait_event_type = 'Lock'")
	require.NoError(t, exitOnSIGTERM(t, cmd, "serve"), "serve stopped while starting exits 0")
	require.Contains(t, out.String(), "stopped before the console started serving")
	require.NotContains(t, out.String(), "serving on")
	release()
}

func TestFindingsCommand(t *testing.T) {
	url := testdb.URL(t)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "INSERT INTO queue_settings (queue, paused) VALUES ('billing', true)")
	conn.Close(context.Background())
	require.NoError(t, err)

	out, err := runCmd(t, envMap("DATABASE_URL", url), "findings", "--json")
	require.NoError(t, err)
	var rep struct {
		GeneratedAt string `json:"generated_at"`
		Findings    []struct {
			Code    string         `json:"code"`
			Subject map[string]any `json:"subject"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotEmpty(t, rep.GeneratedAt)
	found := false
	for _, f := range rep.Findings {
		if f.Code == "queue.paused" && f.Subject["queue"] == "billing" {
			found = true
		}
	}
	require.True(t, found, "a paused queue is a finding: %s", out)

	out, err = runCmd(t, envMap("DATABASE_URL", url), "findings")
	require.NoError(t, err)
	require.Contains(t, out, "queue.paused")

	_, err = runCmd(t, envMap("DATABASE_URL", url), "findings", "--threshold", "no.such=1")
	require.ErrorAs(t, err, new(usageError))
	_, err = runCmd(t, envMap("DATABASE_URL", url), "findings", "--threshold", "tx.long_running=soon")
	require.ErrorContains(t, err, "tx.long_running")
}

// TestAuditVerifyCommand: an intact chain passes and prints its head; a
// row rewritten by the table's owner, who then rehashes the whole chain and
// its head in SQL, fails with a non-zero exit; a head written down earlier
// is checked with --expect-head; a keyed trail needs its key.
func TestAuditVerifyCommand(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	keyFile := filepath.Join(t.TempDir(), "audit.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(strings.Repeat("s", 40)+"\n"), 0o600))
	getenv := envMap("DATABASE_URL", url, "CONSOLE_AUDIT_KEY_FILE", keyFile)
	require.NoError(t, loadAuditKey(getenv))
	t.Cleanup(func() { audit.SetKey(nil) })

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for i := 0; i < 3; i++ {
		_, err := audit.RecordTx(ctx, conn, audit.Event{Actor: "ann", Role: "operator", Action: "queue.pause",
			Target: fmt.Sprintf("queue:q%d", i), Outcome: audit.OutcomeSucceeded})
		require.NoError(t, err)
	}
	out, err := runCmd(t, getenv, "audit", "verify")
	require.NoError(t, err)
	require.Contains(t, out, "3 events verified (3 keyed, 0 unkeyed)")
	m := regexp.MustCompile(`head: (3:[0-9a-f]{64})`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	head := m[1]

	out, err = runCmd(t, getenv, "audit", "verify", "--expect-head", head)
	require.NoError(t, err)
	require.Contains(t, out, "expected head "+head+" found unchanged")
	_, err = runCmd(t, getenv, "audit", "verify", "--expect-head", "3:"+strings.Repeat("0", 64))
	require.ErrorContains(t, err, "BROKEN")
	_, err = runCmd(t, getenv, "audit", "verify", "--expect-head", "three")
	require.ErrorContains(t, err, "SEQ:HASH")

	_, err = runCmd(t, envMap("DATABASE_URL", url), "audit", "verify")
	require.ErrorContains(t, err, "CONSOLE_AUDIT_KEY")
	_, err = runCmd(t, envMap("DATABASE_URL", url, "CONSOLE_AUDIT_KEY", "short"), "audit", "verify")
	require.ErrorContains(t, err, "at least 32")

	_, err = conn.Exec(ctx, `ALTER TABLE audit_events DISABLE TRIGGER USER;
		UPDATE audit_events SET reason = 'rewritten' WHERE seq = 2;
		DO $$
		DECLARE r audit_events; prev bytea := ''; h bytea;
		BEGIN
			FOR r IN SELECT * FROM audit_events ORDER BY seq LOOP
				h := sha256(prev || convert_to(audit_event_canonical(r), 'UTF8'));
				UPDATE audit_events SET prev_hash = prev, hash = h WHERE id = r.id;
				prev := h;
			END LOOP;
			UPDATE audit_chain_head SET last_hash = prev;
		END $$;
		ALTER TABLE audit_events ENABLE TRIGGER USER`)
	require.NoError(t, err)
	_, err = runCmd(t, getenv, "audit", "verify")
	require.ErrorContains(t, err, "BROKEN")

	out, err = runCmd(t, envMap(), "roles", "sql")
	require.NoError(t, err)
	require.Contains(t, out, "pg_signal_backend")
	require.Contains(t, out, "pg_monitor")
}

// TestBenchSmoke runs every bench mode at a tiny size so none can rot, and
// checks what each one proves (counts, exactly-once, every event in the
// stream), never how fast: the figures belong in BENCHMARKS.md.
func TestBenchSmoke(t *testing.T) {
	testdb.SkipShort(t, "every bench mode at a tiny size")
	admin := testdb.AdminURL(t)
	bench := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		// The enqueue mode alone runs 18 s of fixed commit phases and 60
		// idle samples, whatever --jobs says.
		out, err := runCmdWithin(t, 3*time.Minute, envMap("DATABASE_URL", admin), append(append([]string{"bench"}, args...), "--pool", "4", "--workers", "20", "--json")...)
		require.NoError(t, err)
		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Equal(t, args[0], res["mode"])
		require.Contains(t, res, "synchronous_commit")
		return res
	}
	positive := func(t *testing.T, res map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			require.Greater(t, res[k].(float64), 0.0, k)
		}
	}
	t.Run("Burn", func(t *testing.T) {
		res := bench(t, "burn", "--jobs", "300", "--batch", "7")
		require.Equal(t, float64(300), res["jobs"])
		require.Equal(t, true, res["exactly_once"])
		positive(t, res, "jobs_per_second", "seconds")
		// CPU time is counted in scheduler ticks: a 300-job burn may fall
		// within one, so only its presence and sign are certain.
		require.GreaterOrEqual(t, res["engine_cpu_us_per_job"], 0.0)
	})
	t.Run("Floor", func(t *testing.T) {
		res := bench(t, "floor", "--jobs", "200", "--batch", "10")
		require.Equal(t, float64(200), res["jobs"])
		positive(t, res, "jobs_per_second", "seed_jobs_per_second", "engine_over_seed", "seed_start_bytes")
		require.Equal(t, res["seed_start_bytes"], res["engine_start_bytes"],
			"both phases start from the table a fresh database has, as the burn-down does")
	})
	t.Run("Continuous", func(t *testing.T) {
		res := bench(t, "continuous", "--duration", "1s")
		positive(t, res, "jobs", "jobs_per_second", "idle_p50_ms", "idle_p99_ms")
		require.GreaterOrEqual(t, res["jobs_inserted"].(float64), res["jobs"].(float64))
		require.LessOrEqual(t, res["idle_p50_ms"].(float64), res["idle_p99_ms"].(float64))
	})
	t.Run("Enqueue", func(t *testing.T) {
		res := bench(t, "enqueue", "--jobs", "500")
		positive(t, res, "raw_rows_per_second", "copy_rows_per_second", "batch_rows_per_second", "single_rows_per_second", "copy_ratio")
	})
	t.Run("Relay", func(t *testing.T) {
		res := bench(t, "relay", "--jobs", "300", "--batch", "50")
		require.Equal(t, float64(300), res["stream_messages"])
		positive(t, res, "events_per_second")
	})
	t.Run("Scale", func(t *testing.T) {
		res := bench(t, "scale", "--small", "10000", "--large", "20000", "--requests", "3")
		require.Equal(t, float64(3), res["requests"], "--requests sets the timed requests per page")
		for _, op := range []string{"claim", "findings", "queues", "queue_detail", "deadletters", "requeue_preview", "jobs_dead", "panel_queue_health"} {
			positive(t, res, op+"_small_ms", op+"_large_ms", op+"_ratio")
		}
	})
	t.Run("Bloat", func(t *testing.T) {
		res := bench(t, "bloat", "--duration", "1s")
		positive(t, res, "jobs_per_second", "held_jobs_per_second", "ratio")
	})
	t.Run("Pressure", func(t *testing.T) {
		res := bench(t, "pressure", "--duration", "2s", "--hold", "2s")
		for _, phase := range []string{"clean", "pressure"} {
			// Enqueue-to-start is not checked for presence: on a slow
			// machine no job inserted inside a 2 s window may start in it
			// (the prefilled backlog comes first).
			positive(t, res, "jobs_"+phase, "jobs_per_second_"+phase, "claims_"+phase, "claim_p99_ms_"+phase)
			require.Equal(t, 2.0, res["seconds_"+phase])
			minute, ok := res[phase+"_minute_1"].(map[string]any)
			require.True(t, ok, "a phase of 2 s has one minute: %v", res)
			require.Equal(t, res["jobs_"+phase], minute["jobs"], "the minutes add up to the phase")
			require.NotContains(t, res, phase+"_minute_2")
			require.LessOrEqual(t, res["claim_p50_ms_"+phase].(float64), res["claim_p99_ms_"+phase].(float64))
			require.LessOrEqual(t, res["start_p50_ms_"+phase].(float64), res["start_p99_ms_"+phase].(float64))
			require.Contains(t, res["dead_tuples_series_"+phase], "0s ")
		}
		require.GreaterOrEqual(t, res["jobs_inserted"].(float64), res["jobs_clean"].(float64)+res["jobs_pressure"].(float64))
		positive(t, res, "kept_percent", "claim_p99_ratio", "holder_xid_age")
	})
	// A fixed arrival rate: no prefill, so no more jobs arrive in a phase
	// than the rate allows and none starts that did not arrive in it; kept
	// is the share of the pressure phase's arrivals that started.
	t.Run("PressureRate", func(t *testing.T) {
		res := bench(t, "pressure", "--duration", "2s", "--hold", "2s", "--rate", "300")
		require.Equal(t, 300.0, res["rate"])
		for _, phase := range []string{"clean", "pressure"} {
			positive(t, res, "arrived_"+phase, "jobs_"+phase)
			require.LessOrEqual(t, res["arrived_"+phase].(float64), 601.0, "more jobs arrived than 2 s at 300/s")
			require.LessOrEqual(t, res["jobs_"+phase].(float64), res["arrived_"+phase].(float64), "a job started that did not arrive in the phase")
		}
		require.Equal(t, res["completed_percent_pressure"], res["kept_percent"])
		require.LessOrEqual(t, res["kept_percent"].(float64), 100.0)
	})
	t.Run("Refusals", func(t *testing.T) {
		_, err := runCmd(t, envMap(), "bench", "sideways")
		require.ErrorAs(t, err, new(usageError))
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "scale", "--force", "--small", "1000", "--large", "2000")
		require.ErrorContains(t, err, "scratch database")
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "scale", "--databases", "only_one")
		require.ErrorAs(t, err, new(usageError))
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "burn", "--databases", "a,b")
		require.ErrorAs(t, err, new(usageError))
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "continuous", "--hold", "1s")
		require.ErrorContains(t, err, "--hold is for bench pressure only")
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "continuous", "--rate", "100")
		require.ErrorContains(t, err, "--rate is for bench pressure only")
		_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "pressure", "--rate", "-1")
		require.ErrorAs(t, err, new(usageError))
		for _, n := range []string{"0", "100000"} {
			_, err = runCmd(t, envMap("DATABASE_URL", testdb.URL(t)), "bench", "scale", "--requests", n)
			require.ErrorAs(t, err, new(usageError), "--requests %s", n)
		}
	})
}

func TestTokenAndOperatorCommands(t *testing.T) {
	url := testdb.URL(t)
	out, err := runCmd(t, envMap("DATABASE_URL", url), "token", "create", "--name", "ci", "--role", "operator")
	require.NoError(t, err)
	fields := strings.Fields(out)
	require.True(t, strings.HasPrefix(fields[len(fields)-1], "pgc_"), "the token is the last word: %q", out)

	var buf bytes.Buffer
	err = run(context.Background(), []string{"operator", "add", "--name", "ann", "--role", "admin"},
		envMap("DATABASE_URL", url), strings.NewReader("a long enough password\n"), &buf, io.Discard)
	require.NoError(t, err)
	require.Contains(t, buf.String(), "operator ann saved with role admin")

	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "create", "--name", "temp", "--role", "viewer", "--expires", "24h")
	require.NoError(t, err)
	require.Contains(t, out, "expires ")
	temp := strings.Fields(out)[len(strings.Fields(out))-1]
	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^temp\s+viewer\s+-\s+live\s`, out)
	require.Regexp(t, `(?m)^ci\s+operator\s+-\s+live\s`, out)
	require.NotContains(t, out, temp, "the list never shows a secret")
	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "create", "--name", "am", "--scope", "alerts")
	require.NoError(t, err)
	require.Contains(t, out, "token am (role operator, does not expire, scope alerts) created")
	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^am\s+operator\s+alerts\s+live\s`, out)
	_, err = runCmd(t, envMap("DATABASE_URL", url), "token", "create", "--name", "weak", "--role", "viewer", "--scope", "alerts")
	require.ErrorContains(t, err, "needs the operator role")
	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "revoke", "--name", "ci")
	require.NoError(t, err)
	require.Contains(t, out, "token ci revoked")
	out, err = runCmd(t, envMap("DATABASE_URL", url), "token", "list")
	require.NoError(t, err)
	require.Regexp(t, `(?m)^ci\s+operator\s+-\s+revoked\s`, out)
	_, err = runCmd(t, envMap("DATABASE_URL", url), "token", "revoke", "--name", "ci")
	require.ErrorContains(t, err, `no live token is named "ci"`)
	_, err = runCmd(t, envMap("DATABASE_URL", url), "token", "create", "--name", "x", "--expires", "-1h")
	require.ErrorContains(t, err, "positive duration")

	out, err = runCmd(t, envMap("DATABASE_URL", url), "operator", "disable", "--name", "ann")
	require.NoError(t, err)
	require.Contains(t, out, "operator ann disabled")
	pool := testdb.Pool(t, url)
	var disabled bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT disabled FROM operators WHERE name = 'ann'").Scan(&disabled))
	require.True(t, disabled)
	_, err = runCmd(t, envMap("DATABASE_URL", url), "operator", "disable", "--name", "nobody")
	require.ErrorContains(t, err, `no operator is named "nobody"`)
}

// TestEmbeddedLifecycle runs the real command as a child process: it starts
// the embedded PostgreSQL, serves, stops cleanly on SIGTERM leaving no server
// behind, and a second start reuses the data.
func TestEmbeddedLifecycle(t *testing.T) {
	dir, err := pgserver.TempDir("console-lifecycle-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	dataDir := filepath.Join(dir, "var")

	first := startConsole(t, dataDir)
	resp, err := http.Get(first.url + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// The demo consumer's inbox metrics are on /metrics from the start.
	resp, err = http.Get(first.url + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(metrics), `queues_inbox_applied_total{consumer="demo-consumer"}`)
	require.Contains(t, string(metrics), `queues_inbox_duplicates_total{consumer="demo-consumer"}`)
	conn, err := pgx.Connect(context.Background(), first.dbURL)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), "CREATE TABLE survives_restart (v int)")
	require.NoError(t, err)
	conn.Close(context.Background())
	pgPID := postmasterPID(t, dataDir)
	first.stop(t)
	require.ErrorIs(t, syscall.Kill(pgPID, 0), syscall.ESRCH, "PostgreSQL must be gone after SIGTERM")

	second := startConsole(t, dataDir)
	conn, err = pgx.Connect(context.Background(), second.dbURL)
	require.NoError(t, err)
	var exists bool
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT to_regclass('survives_restart') IS NOT NULL").Scan(&exists))
	conn.Close(context.Background())
	require.True(t, exists, "the second start reuses the data")
	require.NotEqual(t, first.password, second.password, "the admin password is one-time")
	second.stop(t)
}

type child struct {
	cmd      *exec.Cmd
	url      string
	dbURL    string
	password string
	done     chan error
}

var (
	servingRE  = regexp.MustCompile(`serving on (http://\S+)`)
	dbURLRE    = regexp.MustCompile(`DATABASE_URL \(for .*\): (\S+)`)
	passwordRE = regexp.MustCompile(`one-time password (\S+)`)
)

func startConsole(t *testing.T, dataDir string) *child {
	t.Helper()
	testdb.SkipShort(t, "a console process of its own")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CONSOLE_TEST_MAIN=1",
		"CONSOLE_TEST_ARGS=serve --addr 127.0.0.1:0 --data-dir "+dataDir, "DATABASE_URL=")
	if bin := os.Getenv("PG_BIN"); bin != "" {
		cmd.Env = append(cmd.Env, "CONSOLE_PG_BIN="+bin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, done: make(chan error, 1)}
	lines := lineChan(stdout)
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.After(90 * time.Second)
	var seen []string
	for c.url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				<-c.done
				t.Fatalf("console exited before serving:\n%s\n%s", strings.Join(seen, "\n"), stderr.String())
			}
			seen = append(seen, l)
			if m := dbURLRE.FindStringSubmatch(l); m != nil {
				c.dbURL = m[1]
			}
			if m := passwordRE.FindStringSubmatch(l); m != nil {
				c.password = m[1]
			}
			if m := servingRE.FindStringSubmatch(l); m != nil {
				c.url = m[1]
			}
		case <-deadline:
			t.Fatalf("console did not start in time:\n%s", strings.Join(seen, "\n"))
		}
	}
	go func() {
		for range lines {
		}
	}()
	return c
}

func (c *child) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.done:
		require.NoError(t, err, "console should exit 0 on SIGTERM")
	case <-time.After(60 * time.Second):
		t.Fatal("console did not exit within 60s of SIGTERM")
	}
}

func postmasterPID(t *testing.T, dataDir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "pgdata", "postmaster.pid"))
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(strings.SplitN(string(b), "\n", 2)[0], &pid)
	require.NoError(t, err)
	return pid
}

// lineChan sends each line read from r on the channel it returns, and
// closes it when r ends.
func lineChan(r io.Reader) <-chan string {
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}
