package findings

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/internal/humanize"
)

// Narrative is the current incident in one paragraph, built from a round's
// findings: what is stuck, since when, why (the root and what it holds),
// what it costs, and the one action that fits with its risk. The overview,
// the incident page and the incident's Markdown export open with it.
type Narrative struct {
	// Text is the paragraph; empty when no finding is a warning or worse.
	Text string `json:"text"`
	// Action is the action the paragraph recommends ("" when none fits),
	// with the subject of the finding it acts on.
	Action  string         `json:"action,omitempty"`
	Subject map[string]any `json:"subject,omitempty"`
	// Runbook is the page of the finding the paragraph names as the cause.
	Runbook string `json:"runbook,omitempty"`
}

// NarrativeOpts are what the diagnostics package cannot know itself; nil
// is fine.
type NarrativeOpts struct {
	// RiskFunc returns an action's title and risk ("high"); the paragraph
	// names the action by its code when nil or when it returns "".
	RiskFunc func(action string) (title, risk string)
	// Recorded says the findings are read back from an earlier moment (a
	// closed incident's opening): the action is the one that "fitted then",
	// not one to run now.
	Recorded bool
}

// causeOrder ranks the codes a paragraph may name as the cause, the most
// direct first: a blocker holds the locks the queue waits for; a horizon
// holder, a slot or the archiver hold what the rest of the findings cost.
var causeOrder = []string{
	CodeRootBlocker, CodeWorkersNoneAlive, CodeQueuePaused, CodeEngineErrors, CodeIdleInTransaction, CodeLongRunning,
	CodeXminHorizon, CodePreparedXactOld, CodeArchiverNotConfigured, CodeArchiverStalled, CodeArchiverFailing,
	CodeSlotRetention, CodeSlotDiskForecast, CodeSlotInactive,
}

// NewNarrative writes the paragraph for findings evaluated at (a round's
// time). It is pure: the same findings give the same words. Subject values
// may be Go numbers (a live round) or JSON numbers (a recorded one).
func NewNarrative(findings []Finding, at time.Time, opts *NarrativeOpts) Narrative {
	var serious []Finding
	for _, f := range findings {
		if f.Severity == SeverityCritical || f.Severity == SeverityWarning {
			serious = append(serious, f)
		}
	}
	if len(serious) == 0 {
		return Narrative{}
	}
	var parts []string
	head, details, since := stuckParts(serious)
	cause := causeOf(serious)
	if cause != nil {
		since = max(since, num(cause.Subject["wait_seconds"]))
	}
	if head == "" {
		head = strings.TrimSuffix(serious[0].Title, ".")
		if cause != nil {
			head = strings.TrimSuffix(cause.Title, ".")
		}
	}
	if since > 0 {
		// The oldest wait dates the incident: a queue's oldest job, the
		// outbox's oldest event or the root's longest waiter.
		head += fmt.Sprintf(" since %s UTC (%s)", at.Add(-time.Duration(since*float64(time.Second))).UTC().Format("15:04"), humanize.Seconds(since))
	}
	if len(details) > 0 {
		head += ": " + strings.Join(details, "; ")
	}
	parts = append(parts, head+".")
	n := Narrative{}
	if cause != nil {
		parts = append(parts, "Why: "+causeSentence(*cause))
		n.Runbook = cause.Runbook
	}
	if c := costSentence(serious); c != "" {
		parts = append(parts, c)
	}
	if cause != nil && len(cause.Actions) > 0 {
		n.Action, n.Subject = cause.Actions[0], cause.Subject
		parts = append(parts, actionSentence(*cause, opts))
	} else if cause != nil {
		parts = append(parts, "No console action fits it: the runbook page says what to do.")
	}
	n.Text = strings.Join(parts, " ")
	return n
}

// stuckParts says which queues and outbox are stuck ("Queue emails is
// stuck"), the details ("1,204 jobs ready") and how long the oldest has
// waited, in seconds.
func stuckParts(fs []Finding) (head string, details []string, oldest float64) {
	var queues []string
	var ready int64
	var oldestJob float64
	for _, f := range fs {
		if f.Code != CodeQueueBacklog {
			continue
		}
		queues = append(queues, str(f.Subject["queue"]))
		ready += int64(num(f.Subject["ready"]))
		oldestJob = max(oldestJob, num(f.Subject["oldest_ready_seconds"]))
	}
	oldest = oldestJob
	if len(queues) > 0 {
		head = fmt.Sprintf("%s %s %s stuck", plural(len(queues), "Queue", "Queues"), andList(queues), plural(len(queues), "is", "are"))
		details = append(details, fmt.Sprintf("%s %s ready", humanize.Int(ready), plural(int(ready), "job", "jobs")))
	}
	for _, f := range fs {
		if f.Code != CodeOutboxBacklog {
			continue
		}
		w := num(f.Subject["oldest_pending_seconds"])
		oldest = max(oldest, w)
		if head == "" {
			head = "The outbox is stuck"
		}
		details = append(details, fmt.Sprintf("%s outbox events pending, the oldest for %s", humanize.Int(int64(num(f.Subject["pending"]))), humanize.Seconds(w)))
	}
	return head, details, oldest
}

// causeOf is the finding the paragraph names as the cause: the first by
// causeOrder, then by severity.
func causeOf(fs []Finding) *Finding {
	for _, code := range causeOrder {
		for i := range fs {
			if fs[i].Code == code && fs[i].Severity == SeverityCritical {
				return &fs[i]
			}
		}
		for i := range fs {
			if fs[i].Code == code {
				return &fs[i]
			}
		}
	}
	return nil
}

// causeSentence says what the cause is and what it holds, from its
// subject; other codes fall back to the finding's own evidence.
func causeSentence(f Finding) string {
	s := f.Subject
	switch f.Code {
	case CodeRootBlocker:
		if gid, ok := s["gid"]; ok {
			return fmt.Sprintf("prepared transaction %q, %s old, holds the locks %s for; no process holds it, only COMMIT or ROLLBACK PREPARED releases them.",
				gid, humanize.Seconds(num(s["age_seconds"])), countOf(s["blocked_count"], "backend waits", "backends wait"))
		}
		what := fmt.Sprintf("pid %s (application %q, %s, transaction %s old) holds the locks %s for",
			str(s["pid"]), str(s["application_name"]), str(s["state"]), humanize.Seconds(num(s["xact_age_seconds"])), countOf(s["blocked_count"], "backend waits", "backends wait"))
		if j, ok := s["job_id"]; ok {
			what += fmt.Sprintf("; it runs job %s", str(j))
		}
		for _, k := range []string{"lock", "relation", "mode", "locktype"} {
			if v, ok := s[k]; ok && str(v) != "" {
				what += fmt.Sprintf("; %s %s", k, str(v))
			}
		}
		return what + "."
	case CodeXminHorizon:
		t := fmt.Sprintf("%s %s holds the xmin horizon, %s transactions back, so VACUUM cannot remove dead rows",
			str(s["holder_kind"]), str(s["holder_id"]), humanize.Int(int64(num(s["xid_age"]))))
		if p, ok := s["standby_pid"]; ok {
			t += fmt.Sprintf("; on the standby pid %s holds the oldest snapshot", str(p))
		}
		return t + "."
	}
	return strings.TrimSuffix(f.Title, ".") + " (" + short(f.Evidence) + ")."
}

// costSentence sums what the findings cost: jobs and queues, dead rows in
// the queue tables, WAL kept.
func costSentence(fs []Finding) string {
	var jobs int64
	queues := map[string]bool{}
	var dead, horizonDead int64
	var wal float64
	for _, f := range fs {
		switch f.Code {
		case CodeQueueBacklog:
			jobs += int64(num(f.Subject["ready"]))
			queues[str(f.Subject["queue"])] = true
		case CodeDeadTuples:
			if _, traced := f.Subject["holder_kind"]; traced {
				dead += int64(num(f.Subject["n_dead_tup"]))
			}
		case CodeXminHorizon:
			horizonDead = max(horizonDead, int64(num(f.Subject["queue_dead_rows"])))
		case CodeSlotRetention, CodeSlotInactive, CodeSlotDiskForecast:
			wal = max(wal, num(f.Subject["retained_bytes"]))
		case CodeWALDir:
			wal = max(wal, num(f.Subject["wal_bytes"]))
		}
	}
	if dead == 0 {
		// Below the dead-tuples threshold the horizon's finding still
		// counts the queue tables' dead rows.
		dead = horizonDead
	}
	var costs []string
	if jobs > 0 {
		names := make([]string, 0, len(queues))
		for q := range queues {
			names = append(names, q)
		}
		sort.Strings(names)
		costs = append(costs, fmt.Sprintf("%s ready %s in %s", humanize.Int(jobs), plural(int(jobs), "job", "jobs"), andList(names)))
	}
	if dead > 0 {
		costs = append(costs, fmt.Sprintf("%s dead rows VACUUM cannot remove", humanize.Int(dead)))
	}
	if wal > 0 {
		costs = append(costs, humanize.Bytes(wal)+" of WAL kept in pg_wal")
	}
	if len(costs) == 0 {
		return ""
	}
	return "It costs " + andList(costs) + "."
}

// actionSentence names the cause's first action, its target and its risk.
func actionSentence(f Finding, opts *NarrativeOpts) string {
	a := f.Actions[0]
	name, risk := a, ""
	if opts != nil && opts.RiskFunc != nil {
		if title, r := opts.RiskFunc(a); title != "" {
			name, risk = title+" ("+a+")", r
		}
	}
	target := ""
	for _, k := range []string{"pid", "gid", "queue"} {
		if v, ok := f.Subject[k]; ok {
			target = fmt.Sprintf(" on %s %s", k, str(v))
			break
		}
	}
	out := "The action that fits: " + name + target
	if opts != nil && opts.Recorded {
		out = "The action that fitted then: " + name + target
	}
	if risk != "" {
		out += ", risk " + risk
	}
	switch a {
	case ActionBackendTerminate:
		out += ": its transaction rolls back and its session ends"
	case ActionBackendCancel:
		out += ": its statement fails and its transaction stays open"
	case ActionPreparedRollback:
		out += ": the prepared work is discarded for good"
	}
	return out + "."
}

// num reads a subject's number whether a round (int, int32, int64,
// float64) or a recorded JSON document (float64, json.Number) put it there.
func num(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}

// str prints a subject value; whole JSON numbers print without a fraction.
func str(v any) string {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return fmt.Sprint(int64(f))
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func countOf(v any, one, many string) string {
	n := int(num(v))
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// andList joins "a", "a and b", "a, b and c".
func andList(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
