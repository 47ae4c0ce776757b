package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxMarkdownData bounds how much of one piece of evidence or one event's
// result is copied into the post-mortem; the full JSON stays in the console.
const maxMarkdownData = 4000

// IncidentMarkdown renders an incident as a Markdown post-mortem draft: the
// header (impact, SLO, window, who opened and closed it) and one timeline of
// the evidence captured and the audited actions taken during it (events that
// name the incident, and any event inside its window), oldest first.
// recorded adds the flight recorder's evidence to the timeline.
func IncidentMarkdown(ctx context.Context, db DBTX, id int64, recorded ...RecordedEvidence) (string, error) {
	inc, err := IncidentGet(ctx, db, id)
	if err != nil {
		return "", err
	}
	evidence, err := EvidenceList(ctx, db, id)
	if err != nil {
		return "", err
	}
	rows, err := db.Query(ctx, sqlText("incident_markdown"), id)
	if err != nil {
		return "", fmt.Errorf("read actions of incident %d: %w", id, err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return "", fmt.Errorf("read actions of incident %d: %w", id, err)
	}
	return renderIncident(inc, evidence, events, recorded), nil
}

type timelineEntry struct {
	at   time.Time
	text string
}

func renderIncident(inc *Incident, evidence []Evidence, events []Event, recorded []RecordedEvidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Incident %d: %s\n\n", inc.ID, inc.Title)
	fmt.Fprintf(&b, "- Status: %s\n", inc.Status)
	fmt.Fprintf(&b, "- Opened: %s by %s\n", stamp(inc.OpenedAt), inc.OpenedBy)
	if inc.ClosedAt != nil && inc.ClosedBy != nil {
		fmt.Fprintf(&b, "- Closed: %s by %s\n", stamp(*inc.ClosedAt), *inc.ClosedBy)
	}
	end := "ongoing"
	if inc.WindowEnd != nil {
		end = stamp(*inc.WindowEnd)
	}
	fmt.Fprintf(&b, "- Window: %s to %s\n", stamp(inc.WindowStart), end)
	if inc.Impact != "" {
		fmt.Fprintf(&b, "- Impact: %s\n", inc.Impact)
	}
	if inc.SLO != "" {
		fmt.Fprintf(&b, "- SLO: %s\n", inc.SLO)
	}
	if inc.Summary != "" {
		fmt.Fprintf(&b, "\n## Summary\n\n%s\n", inc.Summary)
	}

	var entries []timelineEntry
	for _, e := range evidence {
		var t strings.Builder
		fmt.Fprintf(&t, "### %s evidence: %s (step %s, by %s)\n\n", stamp(e.CapturedAt), e.Title, e.Step, e.CapturedBy)
		if e.SQLText != "" {
			fmt.Fprintf(&t, "```sql\n%s\n```\n\n", strings.TrimSpace(e.SQLText))
		}
		fmt.Fprintf(&t, "```json\n%s\n```\n", indentJSON(e.Data))
		entries = append(entries, timelineEntry{e.CapturedAt, t.String()})
	}
	for _, e := range events {
		var t strings.Builder
		target := ""
		if e.Target != "" {
			target = " on " + e.Target
		}
		fmt.Fprintf(&t, "### %s action: %s%s, %s (by %s as %s, audit #%d)\n\n",
			stamp(e.At), e.Action, target, e.Outcome, e.Actor, e.Role, e.ID)
		if e.Reason != "" {
			fmt.Fprintf(&t, "Reason: %s\n\n", e.Reason)
		}
		if e.Error != "" {
			fmt.Fprintf(&t, "Error: %s\n\n", e.Error)
		}
		if len(e.Result) > 0 && string(e.Result) != "{}" {
			fmt.Fprintf(&t, "```json\n%s\n```\n", indentJSON(e.Result))
		}
		entries = append(entries, timelineEntry{e.At, t.String()})
	}
	for _, r := range recorded {
		entries = append(entries, recordedEntry(r))
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.Before(entries[j].at) })
	b.WriteString("\n## Timeline\n\n")
	if len(entries) == 0 {
		b.WriteString("Nothing was captured or done during this incident.\n")
	}
	for _, e := range entries {
		b.WriteString(e.text)
		b.WriteString("\n")
	}
	return b.String()
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func indentJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := buf.String()
	if len(s) > maxMarkdownData {
		s = s[:maxMarkdownData] + "\n... (truncated)"
	}
	return s
}
