package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/testdb"
)

var serveURLRE = regexp.MustCompile(`console is serving on (http://\S+)`)

// serveAttached runs `console serve --metrics token` in this process,
// attached to the database at dbURL, until the test ends. It returns the
// console's base URL.
func serveAttached(t *testing.T, dbURL string) string {
	t.Helper()
	url, _, _ := serveAttachedLogs(t, dbURL)
	return url
}

// serveAttachedLogs is serveAttached that also returns what the console
// printed (stdout) and logged (stderr, JSON lines).
func serveAttachedLogs(t *testing.T, dbURL string) (url string, stdout, stderr *logbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &logbuf.Buffer{}, &logbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--addr", "127.0.0.1:0", "--metrics", "token"}, envMap("DATABASE_URL", dbURL), stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := serveURLRE.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], stdout, stderr
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned before serving: %v\n%s\n%s", err, stdout.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "serve did not start within 60s:\n%s", stdout.String())
	}
}

// promBinary returns a Prometheus binary from Debian's prometheus package,
// failing with the way to install it when it is missing.
func promBinary(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/" + name); err == nil {
		return "/usr/bin/" + name
	}
	t.Fatalf("%s not found: install Debian's prometheus package (scripts/deps.sh test does)", name)
	return ""
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startPrometheus starts a real Prometheus that scrapes target's /metrics
// every second with token, loads rules and evaluates them every second. It
// is stopped at cleanup (its log is printed when the test failed). extra is
// appended to its configuration. It returns the base URL of its HTTP API.
func startPrometheus(t *testing.T, target, token, rules string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), []byte(rules), 0o644))
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: console
    metrics_path: /metrics
    authorization:
      credentials: %q
    static_configs:
      - targets: [%q]
`, token, strings.TrimPrefix(target, "http://")) + strings.Join(extra, "")
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	out, err := exec.Command(promBinary(t, "promtool"), "check", "config", cfgPath).CombinedOutput()
	require.NoError(t, err, "%s", out)

	addr := fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))
	startDaemon(t, "prometheus", addr, "--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	return "http://" + addr
}

// startDaemon runs the Prometheus-family binary name (found by promBinary)
// with args, its output in a log file, and waits until it answers ready on
// addr; the test fails when it exits first or is not ready within 30s. It
// is stopped at cleanup, and its log is printed when the test failed.
func startDaemon(t *testing.T, name, addr string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(promBinary(t, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, b)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited: %v\n%s", name, err, b)
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "%s not ready within 30s", name)
	}
}

// promAPI reads one answer of Prometheus's HTTP API into v.
func promAPI(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, u)
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	require.Equal(t, "success", env.Status)
	require.NoError(t, json.Unmarshal(env.Data, v))
}

// promAlert is one alert of /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

func promAlerts(t *testing.T, prom string) []promAlert {
	t.Helper()
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	promAPI(t, prom+"/api/v1/alerts", &data)
	return data.Alerts
}

// waitFor polls cond every 250ms until it holds, failing after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out after %s waiting for %s", timeout, what)
		time.Sleep(250 * time.Millisecond)
	}
}

func getWithToken(t *testing.T, u, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// scrapedConsole is `console serve` on a fresh database (serveAttached),
// with the viewer token Prometheus scrapes its /metrics with.
type scrapedConsole struct {
	dbURL, url, scrapeToken string
	pool                    *pgxpool.Pool
}

func serveForPrometheus(t *testing.T) scrapedConsole {
	t.Helper()
	c := scrapedConsole{dbURL: testdb.URL(t)}
	c.pool = testdb.Pool(t, c.dbURL)
	var err error
	c.scrapeToken, err = auth.TokenCreate(context.Background(), c.pool, "prometheus", auth.RoleViewer)
	require.NoError(t, err)
	c.url = serveAttached(t, c.dbURL)
	return c
}

// forRE matches the for of a rule.
var forRE = regexp.MustCompile(`(?m)^(\s+for: )\S+$`)

// startPrometheus starts Prometheus (the function of that name) scraping c
// with the shipped rules, rendered for c by scripts/render-alerts.sh and
// with every for shortened to 1s; the production rules are not changed. It
// returns Prometheus's base URL and the rendered rules.
func (c scrapedConsole) startPrometheus(t *testing.T, extra ...string) (base, rules string) {
	t.Helper()
	rendered, err := exec.Command("../../scripts/render-alerts.sh", c.url).Output()
	require.NoError(t, err)
	require.NotContains(t, string(rendered), "console.example.internal")
	return startPrometheus(t, c.url, c.scrapeToken, forRE.ReplaceAllString(string(rendered), "${1}1s"), extra...), string(rendered)
}

// A real Prometheus scrapes a real `console serve` (attached, --metrics
// token) with the shipped rules, rendered for this console by
// scripts/render-alerts.sh and with every for shortened to 1s (the
// production rules are not changed). A dead-letter burst lands in the
// database; ConsoleQueueDeadLetters goes pending or firing, and its
// runbook_url opens the console's dead-letter runbook.
func TestPrometheusRaisesAlertOnServe(t *testing.T) {
	testdb.SkipShort(t, "a Prometheus process of its own")
	t.Parallel()
	ctx := context.Background()
	c := serveForPrometheus(t)
	pool, consoleURL, token := c.pool, c.url, c.scrapeToken

	// /metrics needs the token, and everything serve exposes is in
	// METRICS.md.
	resp, _ := getWithToken(t, consoleURL+"/metrics", "wrong")
	require.NotEqual(t, http.StatusOK, resp.StatusCode)
	resp, body := getWithToken(t, consoleURL+"/metrics", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	var mfs []*dto.MetricFamily
	for _, mf := range fams {
		mfs = append(mfs, mf)
	}
	exact, prefixes := metricsCatalog(t)
	require.Empty(t, exposedUndocumented(familyEntries(mfs), exact, prefixes), "serve exposes metrics METRICS.md does not describe")
	for _, name := range []string{"console_diagnostics_last_round_success", "console_pool_acquired_connections", "queues_scheduler_leader", "go_goroutines"} {
		_, ok := fams[name]
		require.True(t, ok, "serve does not expose %s", name)
	}
	for _, pool := range []string{"console", "engine", "diagnostics"} {
		require.Contains(t, body, `console_pool_max_connections{pool="`+pool+`"}`)
	}

	prom, rendered := c.startPrometheus(t)

	// Prometheus scrapes the console (with the token) and has evaluated the
	// rules; nothing has died yet.
	waitFor(t, 30*time.Second, "a successful scrape of the console", func() bool {
		var res struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		}
		promAPI(t, prom+"/api/v1/query?query="+url.QueryEscape(`up{job="console"} * on (instance) group_left console_diagnostics_rounds_total`), &res)
		return len(res.Result) == 1 && res.Result[0].Value[1] != "0"
	})
	for _, a := range promAlerts(t, prom) {
		require.NotEqual(t, "ConsoleQueueDeadLetters", a.Labels["alertname"], "no dead letters yet")
	}

	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind, status, attempts, error_class, last_error, finished_at)
		SELECT 'billing', 'charge', 'dead', 8, 'card declined', 'card declined', now() FROM generate_series(1, 12)`)
	require.NoError(t, err)

	// serve refreshes its diagnostics at most every 15s: a minute and a half
	// leaves room for a round that times out on a loaded machine.
	var got promAlert
	waitFor(t, 90*time.Second, "ConsoleQueueDeadLetters pending or firing", func() bool {
		for _, a := range promAlerts(t, prom) {
			if a.Labels["alertname"] == "ConsoleQueueDeadLetters" && a.Labels["queue"] == "billing" &&
				(a.State == "pending" || a.State == "firing") {
				got = a
				return true
			}
		}
		return false
	})
	require.Equal(t, "warning", got.Labels["severity"])
	require.Equal(t, "Queue billing: 12 jobs dead-lettered in the last 15 minutes", got.Annotations["summary"])
	require.Equal(t, consoleURL+"/runbook/rb-g", got.Annotations["runbook_url"])

	// Every rule evaluates without error against the real series.
	var rules struct {
		Groups []struct {
			Rules []struct {
				Name      string `json:"name"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"rules"`
		} `json:"groups"`
	}
	promAPI(t, prom+"/api/v1/rules", &rules)
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			require.NotEqual(t, "err", r.Health, "%s: %s", r.Name, r.LastError)
		}
	}
	require.Equal(t, strings.Count(rendered, "\n      - alert:")+strings.Count(rendered, "\n      - record:"), n)

	// The on-call operator follows the alert's runbook_url, and every other
	// alert's, to a page of this console.
	var urls []string
	for _, m := range regexp.MustCompile(`runbook_url: "([^"]+)"`).FindAllStringSubmatch(rendered, -1) {
		if !slices.Contains(urls, m[1]) {
			urls = append(urls, m[1])
		}
	}
	require.Contains(t, urls, got.Annotations["runbook_url"])
	for _, u := range urls {
		resp, body := getWithToken(t, u, token)
		require.Equal(t, http.StatusOK, resp.StatusCode, u)
		if u == got.Annotations["runbook_url"] {
			require.Contains(t, body, "Dead-letter spike")
		}
	}
}
