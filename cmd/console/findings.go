package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues"
)

// thresholdFlags collects repeated --threshold CODE=VALUE flags.
type thresholdFlags []string

func (t *thresholdFlags) String() string     { return strings.Join(*t, ",") }
func (t *thresholdFlags) Set(v string) error { *t = append(*t, v); return nil }

// parseThresholds applies CONSOLE_THRESHOLDS (comma list) and then each
// --threshold to the defaults; a bad one names the codes that exist.
func parseThresholds(getenv env, flags []string) (diagnostics.Thresholds, error) {
	th := diagnostics.DefaultThresholds()
	all := append(splitList(getenv("CONSOLE_THRESHOLDS")), flags...)
	for _, s := range all {
		if err := findings.SetThresholdFlag(&th, s); err != nil {
			return th, usageError{fmt.Sprintf("--threshold %s: %v (codes: %s)", s, err, strings.Join(findings.ThresholdCodes(), ", "))}
		}
	}
	return th, nil
}

// runFindings is `console findings`: one findings round, printed as a table
// or as the same JSON object as GET /api/v1/findings. It exits 0 whatever it
// finds, so scripts decide what a finding means.
func runFindings(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	fs := flagSet("findings")
	asJSON := fs.Bool("json", false, "print JSON")
	var thresholds thresholdFlags
	fs.Var(&thresholds, "threshold", "CODE=VALUE")
	source := fs.String("queue-source", queueSourceAuto, "auto, console or river: whose queues the findings read")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := (flagEnv{"queue-source": "CONSOLE_QUEUE_SOURCE"}).apply(fs, getenv); err != nil {
		return err
	}
	if err := checkQueueSource(*source); err != nil {
		return err
	}
	th, err := parseThresholds(getenv, thresholds)
	if err != nil {
		return err
	}
	raw, err := requiredDatabaseURL(getenv, "findings needs DATABASE_URL (or DATABASE_URL_FILE)")
	if err != nil {
		return err
	}
	pooler, err := envPooler(getenv)
	if err != nil {
		return err
	}
	// Check the connection first for a clear message.
	pool, err := openPool(ctx, raw, "console-cli", 1, nil, pooler)
	if err != nil {
		return err
	}
	// River's jobs are read when `serve` would read them.
	engine, rs, note, err := detectQueueSource(ctx, pool, *source)
	pool.Close()
	if err != nil {
		return err
	}
	d, err := diagnostics.Open(ctx, raw, diagnostics.Config{Thresholds: &th, StandbyURLs: splitList(getenv("STANDBY_URLS")),
		TransactionPooler: pooler.transaction(), River: engine == queues.SourceRiver})
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rep, err := findings.Run(ctx, d)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if note != "" {
		fmt.Fprintln(stdout, note)
	}
	if engine == queues.SourceRiver {
		fmt.Fprintf(stdout, "River's jobs read too (schema at migration %d)\n", rs.Version)
	}
	if len(rep.Findings) == 0 {
		fmt.Fprintf(stdout, "no findings at %s\n", rep.GeneratedAt.UTC().Format(time.RFC3339))
		return nil
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(stdout, "%-8s %-28s %s\n         %s\n         runbook: %s\n", f.Severity, f.Code, f.Title, f.Evidence, f.Runbook)
	}
	return nil
}
