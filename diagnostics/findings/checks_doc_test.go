package findings

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
)

var updateDoc = flag.Bool("update-checks-doc", false, "rewrite docs/checks.md from the catalog")

// checksDoc renders the catalog of checks, the finding rules with their
// default thresholds, and the runbook pages they link to.
func checksDoc() string {
	var b strings.Builder
	b.WriteString("# Checks, findings and thresholds\n\n")
	b.WriteString("Generated from the diagnostics catalog and rules; `go test ./diagnostics/findings -run TestChecksDoc -update-checks-doc` rewrites it, and the test fails when it is out of date.\n\n")
	b.WriteString("## Checks\n\nEach check is one read-only query, served at `/panels/<name>` and read by findings rounds.\n\n")
	b.WriteString("| Check | Title | Runbook step | Also shown on |\n|---|---|---|---|\n")
	for _, c := range diagnostics.Catalog() {
		also := []string{}
		for _, st := range c.AlsoSteps {
			also = append(also, fmt.Sprintf("[%s](%s)", st, diagnostics.RunbookURL(st)))
		}
		fmt.Fprintf(&b, "| `%s` | %s | [%s](%s) | %s |\n", c.Name, c.Title, c.Step, diagnostics.RunbookURL(c.Step), nonEmpty(strings.Join(also, ", "), "-"))
	}
	slow := []string{}
	for _, name := range diagnostics.SlowChecks() {
		slow = append(slow, "`"+name+"`")
	}
	fmt.Fprintf(&b, "\nThe checks that scan the whole catalog or read the recorded lock episodes (%s) run on a slow clock: the shared rounds of the pages, "+
		"`/api/v1/findings` and `/metrics`, and the sampler, read them every `--slow-interval` (default 2m, "+
		"`CONSOLE_SLOW_INTERVAL`) and reuse that read in between, shown with its age "+
		"(`slow_checks_at` and `slow_checks_age_seconds` in `/api/v1/findings`). `console findings` reads them every time.\n",
		strings.Join(slow, ", "))
	b.WriteString("\n### Privileges and what SQL cannot see\n\n")
	b.WriteString("The checks read statistics views; give the console's diagnostics role `pg_monitor` " +
		"(the `console_monitor` role has it). Without it, `wal_dir` reports `readable = false` and " +
		"`wal.dir_size` never fires, and `replication_slots` leaves the size of pg_wal empty " +
		"(`pg_ls_waldir()` needs it); other sessions' queries show as `<insufficient privilege>`. " +
		"`standby_status` and `standby_conflicts` run on each standby of `STANDBY_URLS`. " +
		"SQL cannot read free disk space: a full disk shows as `engine.errors` (SQLSTATE 53100 in " +
		"the workers' heartbeats, critical) and WAL piling up as `wal.dir_size`. " +
		"`checkpoint.pressure`, `replication.standby_conflicts` and `lock.deadlocks` count increases between rounds, " +
		"so the first round after a start has no window yet. " +
		"`archiver.not_configured` reads `archive_command` and `archive_library` from pg_settings, which shows them " +
		"only to a role with `pg_read_all_settings` (in `pg_monitor`); `archiver.stalled` dates the oldest `.ready` file " +
		"with `pg_ls_archive_statusdir()` (also `pg_monitor`). " +
		"`vacuum.xmin_horizon` and `table.dead_tuples` name each other: a queue table's dead rows name the oldest holder " +
		"of this database's horizon (a backend of another database holds none), and a standby's feedback names, " +
		"through `STANDBY_URLS`, the pid and query holding the snapshot on that standby. " +
		"Slots and standby feedback hold an xmin but carry no time: `vacuum.xmin_horizon` ages them " +
		"from the round that first saw that xmin, a lower bound that starts again when the console restarts. " +
		"With `max_slot_wal_keep_size = -1` a slot has no `safe_wal_size`: `replication.slot_disk_forecast` " +
		"measures its retained WAL's growth between rounds and forecasts when pg_wal reaches its budget, " +
		"`wal.dir_size=<size>` (the WAL disk's size, which SQL cannot read; by default the size at which " +
		"`wal.dir_size` fires). Without `pg_monitor` it counts the slot's WAL alone, a lower bound, and says so.\n")
	b.WriteString("\n## Findings\n\nOverride a threshold with `console findings --threshold CODE=VALUE` (or the serve settings).\n\n")
	b.WriteString("| Code | Default threshold | Runbook | Actions |\n|---|---|---|---|\n")
	def := diagnostics.DefaultThresholds()
	for _, r := range rules {
		var th []string
		for _, s := range thresholdSettings[r.Code] {
			th = append(th, thresholdText(s, &def))
		}
		pages := []string{}
		if r.Runbook != "" {
			pages = append(pages, fmt.Sprintf("[%s](%s)", r.Runbook, diagnostics.RunbookURL(r.Runbook)))
		} else {
			pages = append(pages, "the failed check's step")
		}
		for _, p := range r.AlsoRunbooks {
			pages = append(pages, fmt.Sprintf("[%s](%s)", p, diagnostics.RunbookURL(p)))
		}
		actions := "none"
		if len(r.Actions) > 0 {
			actions = "`" + strings.Join(r.Actions, "`, `") + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.Code, nonEmpty(strings.Join(th, " or "), "none"), strings.Join(pages, ", "), actions)
	}
	return b.String()
}

func thresholdText(s thresholdSetting, t *diagnostics.Thresholds) string {
	switch s.kind {
	case kindDuration:
		return s.dur(t).String()
	case kindCount:
		return fmt.Sprint(*s.num(t))
	case kindSize:
		return humanize.Bytes(float64(*s.num(t)))
	case kindRate:
		return humanize.Bytes(*s.flt(t)) + "/s"
	}
	return fmt.Sprintf("%g", *s.flt(t))
}

// TestChecksDoc: docs/checks.md lists every check, every finding code with
// its default thresholds, runbook pages and actions, as the code has them.
func TestChecksDoc(t *testing.T) {
	want := checksDoc()
	const path = "../../docs/checks.md"
	if *updateDoc {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./diagnostics/findings -run TestChecksDoc -update-checks-doc")
	require.Equal(t, want, string(got), "docs/checks.md is out of date: run go test ./diagnostics/findings -run TestChecksDoc -update-checks-doc")
	codes := make([]string, 0, len(thresholdSettings))
	for c := range thresholdSettings {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		require.Contains(t, string(got), "`"+c+"`", "threshold %s has no rule in the doc", c)
	}
}
