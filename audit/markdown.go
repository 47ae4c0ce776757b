package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"

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

// Actions every incident timeline (this export and the console's page)
// shows in its own way: a capture's audit event is the evidence it stored
// (listed once, as evidence), and a note's is the note.
const (
	ActionCapture = "incident.capture"
	ActionNote    = "incident.note"
)

// markdownRows is how many rows of one capture the post-mortem shows as a
// table; the console keeps them all.
const markdownRows = 20

// renderIncident writes the post-mortem: a summary first (the facts, what
// was captured and done, the operator's own summary), then one timeline.
// Every piece of text an operator or a database row supplied is either
// escaped (inline: headings, list items, table cells; see mdInline) or
// fenced (multi-line: summary, reason, error, SQL, JSON; see mdFence), so no
// field can forge a timeline entry, a link or HTML.
func renderIncident(inc *Incident, evidence []Evidence, events []Event, recorded []RecordedEvidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Incident %d: %s\n\n## Summary\n\n", inc.ID, mdInline(inc.Title))
	end, lasted := "ongoing", time.Since(inc.WindowStart)
	if inc.WindowEnd != nil {
		end, lasted = stamp(*inc.WindowEnd), inc.WindowEnd.Sub(inc.WindowStart)
	}
	fmt.Fprintf(&b, "- Status: %s; window %s to %s (%s)\n", mdInline(inc.Status), stamp(inc.WindowStart), end, lasted.Round(time.Second))
	fmt.Fprintf(&b, "- Opened: %s by %s\n", stamp(inc.OpenedAt), mdInline(inc.OpenedBy))
	if inc.ClosedAt != nil && inc.ClosedBy != nil {
		fmt.Fprintf(&b, "- Closed: %s by %s\n", stamp(*inc.ClosedAt), mdInline(*inc.ClosedBy))
	}
	if inc.Impact != "" {
		fmt.Fprintf(&b, "- Impact: %s\n", mdInline(inc.Impact))
	}
	if inc.SLO != "" {
		fmt.Fprintf(&b, "- SLO: %s\n", mdInline(inc.SLO))
	}
	fmt.Fprintf(&b, "- %s\n", timelineCounts(evidence, events, recorded))
	if inc.Summary != "" {
		fmt.Fprintf(&b, "\nThe operator's summary:\n\n%s", mdFence("text", inc.Summary))
	}

	var entries []timelineEntry
	why := CaptureReasons(events)
	for _, e := range evidence {
		entries = append(entries, timelineEntry{e.CapturedAt, evidenceEntry(e, why[e.ID])})
	}
	for _, e := range events {
		if e.Action == ActionCapture && e.Outcome == OutcomeSucceeded {
			continue
		}
		var t strings.Builder
		if e.Action == ActionNote {
			fmt.Fprintf(&t, "### %s note by %s (audit #%d)\n\n%s", stamp(e.At), mdInline(e.Actor), e.ID, mdFence("text", e.Reason))
			entries = append(entries, timelineEntry{e.At, t.String()})
			continue
		}
		target := ""
		if e.Target != "" {
			target = " on " + mdInline(e.Target)
		}
		fmt.Fprintf(&t, "### %s action: %s%s, %s (by %s as %s, audit #%d)\n\n",
			stamp(e.At), mdInline(e.Action), target, mdInline(string(e.Outcome)), mdInline(e.Actor), mdInline(e.Role), e.ID)
		if e.Reason != "" {
			fmt.Fprintf(&t, "Reason:\n\n%s\n", mdFence("text", e.Reason))
		}
		if e.Error != "" {
			fmt.Fprintf(&t, "Error:\n\n%s\n", mdFence("text", e.Error))
		}
		if len(e.Result) > 0 && string(e.Result) != "{}" {
			t.WriteString(mdFence("json", indentJSON(e.Result)))
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

// CaptureReasons maps each evidence id to the reason of the capture that
// stored it (the audited incident.capture's), so a timeline that lists the
// evidence once still says why it was taken ("alert X resolved").
func CaptureReasons(events []Event) map[int64]string {
	out := map[int64]string{}
	for _, e := range events {
		if e.Action != ActionCapture || e.Outcome != OutcomeSucceeded {
			continue
		}
		var r struct {
			EvidenceID int64 `json:"evidence_id"`
		}
		if json.Unmarshal(e.Result, &r) == nil && r.EvidenceID > 0 {
			out[r.EvidenceID] = e.Reason
		}
	}
	return out
}

// timelineCounts says in one line what the timeline holds.
func timelineCounts(evidence []Evidence, events []Event, recorded []RecordedEvidence) string {
	var titles []string
	for _, e := range evidence {
		titles = append(titles, mdInline(e.Title))
	}
	outcomes := map[Outcome]int{}
	actions, notes := 0, 0
	for _, e := range events {
		switch {
		case e.Action == ActionNote:
			notes++
		case e.Action == ActionCapture && e.Outcome == OutcomeSucceeded:
		default:
			actions++
			outcomes[e.Outcome]++
		}
	}
	line := fmt.Sprintf("Evidence: %d capture(s)", len(evidence))
	if len(titles) > 0 {
		line += " (" + strings.Join(titles, ", ") + ")"
	}
	line += fmt.Sprintf("; %d action(s)", actions)
	if actions > 0 {
		var parts []string
		for _, o := range []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeRefused} {
			if outcomes[o] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", outcomes[o], o))
			}
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line + fmt.Sprintf("; %d note(s); %d item(s) from the flight recorder", notes, len(recorded))
}

// evidenceEntry is one capture: its heading, its SQL and its rows as a
// Markdown table.
func evidenceEntry(e Evidence, why string) string {
	var t strings.Builder
	fmt.Fprintf(&t, "### %s evidence: %s (step %s, by %s)\n\n", stamp(e.CapturedAt), mdInline(e.Title), mdInline(e.Step), mdInline(e.CapturedBy))
	if why != "" {
		fmt.Fprintf(&t, "Reason:\n\n%s\n", mdFence("text", why))
	}
	if e.SQLText != "" {
		fmt.Fprintf(&t, "%s\n", mdFence("sql", strings.TrimSpace(e.SQLText)))
	}
	tab, err := e.Table(markdownRows)
	if err != nil {
		t.WriteString(mdFence("json", indentJSON(e.Data)))
		return t.String()
	}
	if tab.Status != "" && tab.Status != "ok" {
		fmt.Fprintf(&t, "Status: %s\n\n", mdInline(tab.Status))
	}
	if tab.Error != "" {
		fmt.Fprintf(&t, "Error:\n\n%s\n", mdFence("text", tab.Error))
	}
	t.WriteString(mdTable(tab.Columns, tab.Rows, tab.Total))
	return t.String()
}

// mdTable writes rows under columns as a Markdown table, every cell
// escaped, saying how many of total rows it leaves out.
func mdTable(columns []string, rows [][]string, total int) string {
	if len(columns) == 0 {
		return "No rows.\n"
	}
	var t strings.Builder
	cells := func(vals []string) {
		t.WriteString("|")
		for _, v := range vals {
			if len(v) > 200 {
				v = v[:200] + "…"
			}
			t.WriteString(" " + mdInline(v) + " |")
		}
		t.WriteString("\n")
	}
	cells(columns)
	t.WriteString("|" + strings.Repeat(" --- |", len(columns)) + "\n")
	for _, r := range rows {
		cells(r)
	}
	if total > len(rows) {
		fmt.Fprintf(&t, "\n%d more row(s) are in the console.\n", total-len(rows))
	}
	return t.String()
}

// mdInline makes s safe inside one line of Markdown: line breaks and other
// control characters become spaces, and every ASCII punctuation character
// is backslash-escaped, so s cannot start a heading, a list, a link, an
// image, emphasis, code or an HTML tag.
// MarkdownLead puts paragraph, escaped, first in an incident's export
// (IncidentMarkdown's output): after its title, before its summary. The
// console leads with its narrative of the incident this way.
func MarkdownLead(md, paragraph string) string {
	title, rest, ok := strings.Cut(md, "\n\n")
	if !ok || strings.TrimSpace(paragraph) == "" {
		return md
	}
	return title + "\n\n" + mdInline(paragraph) + "\n\n" + rest
}

func mdInline(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r < 0x80 && unicode.IsPunct(r) || r < 0x80 && unicode.IsSymbol(r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdFence puts s in a fenced code block with the given info string, with a
// fence longer than any run of backticks in s, so s cannot close it. It
// ends with a newline.
func mdFence(info, s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	s = strings.TrimRight(s, "\n")
	return fence + info + "\n" + s + "\n" + fence + "\n"
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
