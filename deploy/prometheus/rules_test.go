// Package rules_test checks the shipped Prometheus rules: promtool's syntax
// check and unit tests (alerts_test.yml, which must cover every alert), and
// the render script. The test that raises an alert in a real Prometheus
// scraping `console serve` is cmd/console's TestPrometheusRaisesAlertOnServe
// (only cmd/console may build the web server).
package rules_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// placeholder is the base URL alerts.yml links to until rendered.
const placeholder = "https://console.example.internal"

// tool returns the path of a Prometheus binary (Debian's prometheus
// package), failing the test with the way to install it when missing.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/bin/" + name; fileExists(p) {
		return p
	}
	t.Fatalf("%s not found: install Debian's prometheus package (scripts/deps.sh test does)", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	out := run(t, tool(t, "promtool"), "check", "rules", "alerts.yml")
	require.Contains(t, out, "SUCCESS")
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	out := run(t, tool(t, "promtool"), "test", "rules", "alerts_test.yml")
	require.Contains(t, out, "SUCCESS")
}

// ruleFile is the part of a rule file these tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// testFile is the part of a promtool test file these tests read.
type testFile struct {
	Tests []struct {
		Name  string `yaml:"name"`
		Cases []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, v))
}

// runbookURL is the form of every runbook_url: the console's runbook step or
// targeted runbook page.
var runbookURL = regexp.MustCompile(`^` + regexp.QuoteMeta(placeholder) + `/runbook/(window|entry|activity|blocking|resources|copy|queues|outbox|replication|plans|mitigations|verification|rb-[a-r])$`)

// Every alert has a for, a severity, a summary and description with its
// values, a runbook_url to a console runbook page, and promtool tests that
// see it fire and see it quiet.
func TestEveryAlertIsCompleteAndTested(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	readYAML(t, "alerts.yml", &rules)
	var tests testFile
	readYAML(t, "alerts_test.yml", &tests)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, c := range tc.Cases {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				quiet[c.Alertname] = true
			}
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				require.True(t, strings.HasPrefix(r.Record, "console:"), "recording rule %q: name it console:<what>:<how>", r.Record)
				continue
			}
			alerts++
			require.True(t, strings.HasPrefix(r.Alert, "Console"), r.Alert)
			require.NotEmpty(t, r.For, "%s has no for", r.Alert)
			require.Contains(t, []string{"warning", "critical"}, r.Labels["severity"], "%s severity", r.Alert)
			require.Contains(t, r.Annotations["summary"], "{{", "%s: the summary should carry the values", r.Alert)
			require.NotEmpty(t, r.Annotations["description"], r.Alert)
			require.Regexp(t, runbookURL, r.Annotations["runbook_url"], r.Alert)
			require.True(t, fires[r.Alert], "alerts_test.yml never sees %s fire", r.Alert)
			require.True(t, quiet[r.Alert], "alerts_test.yml never sees %s quiet", r.Alert)
		}
	}
	require.GreaterOrEqual(t, alerts, 15)
}

// The render script points every runbook_url at the given console and the
// result is still valid.
func TestRenderAlerts(t *testing.T) {
	t.Parallel()
	out := run(t, "../../scripts/render-alerts.sh", "https://ops.example.com/console/")
	require.NotContains(t, out, placeholder)
	require.Contains(t, out, `runbook_url: "https://ops.example.com/console/runbook/rb-g"`)
	path := filepath.Join(t.TempDir(), "alerts.yml")
	require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
	run(t, tool(t, "promtool"), "check", "rules", path)

	err := exec.Command("../../scripts/render-alerts.sh", "console.example.com").Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a base URL without a scheme is refused")
	require.Equal(t, 2, exit.ExitCode())
}
