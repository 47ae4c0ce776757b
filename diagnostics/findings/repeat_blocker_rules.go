package findings

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
)

// EpisodesURL is the lock-episodes page of the last hour filtered to one
// application: where a repeat blocker's episodes are listed one by one.
func EpisodesURL(application string) string {
	return "/lock-episodes?" + url.Values{"since": {"1h"}, "application": {application}}.Encode()
}

// repeatBlockerFindings: one root application held up the engine's job
// claims in RepeatBlockers or more recorded lock episodes within the hour.
// Each episode was too short for the blocking tree of a round to catch;
// together they are a pattern: the application's statements take locks the
// claims need. The finding names the statements and the locks, and links
// to the application's episodes.
func repeatBlockerFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if t.RepeatBlockers <= 0 {
		return nil
	}
	var out []Finding
	for _, b := range r.RepeatBlockers {
		if int64(b.Episodes) < t.RepeatBlockers {
			continue
		}
		app := b.RootApplication
		if app == "" {
			app = "(no application_name)"
		}
		statements := b.Statements
		if statements == nil {
			statements = []string{}
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title: fmt.Sprintf("The same root application %q blocked the job claims %d times in the last hour", app, b.Episodes),
			Subject: map[string]any{"application": b.RootApplication, "episodes": b.Episodes, "claims_delayed": b.ClaimsDelayed,
				"waited_seconds": round1(b.WaitedSeconds), "last_at": b.LastAt.UTC(), "targets": b.Targets, "statements": statements,
				"episodes_url": EpisodesURL(b.RootApplication)},
			Evidence: fmt.Sprintf("%s: %d recorded lock %s of the last hour had a session of application %q at the root and held up %d job %s of the engine (%s waited in all, the last ending %s), waiting for %s; the root's statements: %s. Episodes: %s",
				diagnostics.CheckRepeatBlockers, b.Episodes, plural(b.Episodes, "episode", "episodes"),
				b.RootApplication, b.ClaimsDelayed, plural(b.ClaimsDelayed, "claim", "claims"), seconds(b.WaitedSeconds), b.LastAt.UTC().Format(time.RFC3339),
				nonEmpty(strings.Join(b.Targets, ", "), "a lock"), nonEmpty(quoteAll(statements), "(none recorded)"), EpisodesURL(b.RootApplication)),
		})
	}
	return out
}

// quoteAll joins statements, each quoted, with "; ".
func quoteAll(statements []string) string {
	q := make([]string, len(statements))
	for i, s := range statements {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, "; ")
}
