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
// result a full export copies; the full JSON stays in the console.
const maxMarkdownData = 4000

// Bounds of one capture's table in the export: the rows and columns a
// post-mortem reader takes in at a glance. A full export keeps every
// column and markdownFullRows rows.
const (
	markdownRows     = 10
	markdownColumns  = 7
	markdownFullRows = 20
)

// MarkdownOpts shape an incident's export. The zero value is the compact
// post-mortem draft.
type MarkdownOpts struct {
	// Recorded is what the flight recorder kept around the incident; each
	// item is one line of the timeline.
	Recorded []RecordedEvidence
	// Lead, when set, is the paragraph after the title: the console's
	// narrative of the incident.
	Lead string
	// TableFunc lays a capture out as the console shows it (its headings
	// and formatted values); nil, or false for a capture, lays it out from
	// its JSON (Evidence.Table).
	TableFunc func(Evidence) (EvidenceTable, bool)
	// Full adds what a post-mortem rarely needs: each capture's SQL and
	// every column, the actions' results as JSON, and the flight
	// recorder's rows.
	Full bool
	// Now is when an ongoing incident is measured to; zero means now.
	Now time.Time
}

// IncidentMarkdown renders an incident as a compact Markdown post-mortem
// draft (IncidentReport with only recorded set).
func IncidentMarkdown(ctx context.Context, db DBTX, id int64, recorded ...RecordedEvidence) (string, error) {
	return IncidentReport(ctx, db, id, MarkdownOpts{Recorded: recorded})
}

// IncidentReport renders an incident as the Markdown a person pastes into
// a post-mortem: a summary paragraph (what, when, how long, why it was
// opened, what was done), the timeline as a table, the actions with their
// reasons and outcomes, and the captured evidence as compact tables. It
// reads the evidence and the audited actions taken during it (events that
// name the incident, and any event inside its window).
func IncidentReport(ctx context.Context, db DBTX, id int64, opts MarkdownOpts) (string, error) {
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
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	return renderIncident(inc, evidence, events, opts), nil
}

// Actions every incident timeline (this export and the console's page)
// shows in its own way: a capture's audit event is the evidence it stored
// (listed once, as evidence), and a note's is the note.
const (
	ActionCapture = "incident.capture"
	ActionNote    = "incident.note"
	actionOpen    = "incident.open"
	actionClose   = "incident.close"
)

// isBookkeeping reports an event that is the incident's own record (its
// opening, closing, notes, captures) rather than a change to the system.
func isBookkeeping(e Event) bool {
	return strings.HasPrefix(e.Action, "incident.")
}

// renderIncident writes the export. Operator and database text is escaped
// where Markdown would read it as markup (mdInline), so no field can forge
// a heading, a table row, a link or HTML; multi-line text in a full export
// is fenced (mdFence).
func renderIncident(inc *Incident, evidence []Evidence, events []Event, opts MarkdownOpts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Incident %d: %s\n\n", inc.ID, mdInline(inc.Title))
	if strings.TrimSpace(opts.Lead) != "" {
		fmt.Fprintf(&b, "%s\n\n", mdLineStart(opts.Lead))
	}
	b.WriteString("## Summary\n\n")
	b.WriteString(summaryParagraph(inc, evidence, events, opts))
	if inc.Summary != "" {
		b.WriteString("\n")
		for _, line := range strings.Split(strings.TrimSpace(inc.Summary), "\n") {
			fmt.Fprintf(&b, "> %s\n", mdLineStart(strings.TrimRight(line, "\r")))
		}
	}

	day := inc.WindowStart.UTC().Format("2006-01-02")
	b.WriteString("\n## Timeline\n\n")
	b.WriteString(mdTable([]string{"Time (UTC)", "What"}, timelineRows(inc, evidence, events, opts, day), 0, 0))

	if acts := actionLines(events, opts.Full); len(acts) > 0 {
		b.WriteString("\n## Actions\n\n")
		for _, a := range acts {
			b.WriteString(a)
		}
	}

	if len(evidence) > 0 || (opts.Full && len(opts.Recorded) > 0) {
		b.WriteString("\n## Evidence\n")
	}
	why := CaptureReasons(events)
	for _, e := range evidence {
		b.WriteString("\n")
		b.WriteString(evidenceSection(e, why[e.ID], opts, day))
	}
	if opts.Full {
		for _, r := range opts.Recorded {
			b.WriteString("\n")
			b.WriteString(recordedSection(r, day))
		}
	}
	return b.String()
}

// summaryParagraph is what a reader of the post-mortem takes in first:
// title, when, how long, why it was opened, what was done and what was
// kept.
func summaryParagraph(inc *Incident, evidence []Evidence, events []Event, opts MarkdownOpts) string {
	var s []string
	open := fmt.Sprintf("%s started %s and was opened by %s", mdLineStart(inc.Title), stamp(inc.WindowStart), mdInline(inc.OpenedBy))
	if inc.WindowEnd != nil {
		by := ""
		if inc.ClosedBy != nil {
			by = " by " + mdInline(*inc.ClosedBy)
		}
		open += fmt.Sprintf("; it was closed%s at %s after %s", by, stamp(*inc.WindowEnd), lasted(inc.WindowEnd.Sub(inc.WindowStart)))
	} else {
		open += fmt.Sprintf("; it is still open, %s so far", lasted(opts.Now.Sub(inc.WindowStart)))
	}
	s = append(s, open+".")
	for _, e := range events {
		if e.Action == actionOpen && e.IncidentID != nil && *e.IncidentID == inc.ID && e.Reason != "" {
			s = append(s, "Opened because: "+mdInline(strings.TrimSuffix(e.Reason, "."))+".")
			break
		}
	}
	if inc.Impact != "" {
		s = append(s, "Impact: "+mdInline(strings.TrimSuffix(inc.Impact, "."))+".")
	}
	if inc.SLO != "" {
		s = append(s, "SLO: "+mdInline(strings.TrimSuffix(inc.SLO, "."))+".")
	}
	var done []string
	notes := 0
	for _, e := range events {
		switch {
		case e.Action == ActionNote:
			notes++
		case !isBookkeeping(e):
			d := mdInline(e.Action)
			if e.Target != "" {
				d += " on " + mdInline(e.Target)
			}
			done = append(done, d+" ("+mdInline(string(e.Outcome))+")")
		}
	}
	if len(done) > 0 {
		s = append(s, "Done: "+strings.Join(done, "; ")+".")
	} else {
		s = append(s, "No action was taken through the console.")
	}
	var titles []string
	for _, e := range evidence {
		titles = append(titles, mdInline(e.Title))
	}
	kept := fmt.Sprintf("Kept: %s", counted(len(evidence), "capture", "captures"))
	if len(titles) > 0 {
		kept += " (" + strings.Join(titles, ", ") + ")"
	}
	kept += ", " + counted(notes, "note", "notes") + ", " + counted(len(opts.Recorded), "item", "items") + " from the flight recorder."
	s = append(s, kept)
	return strings.Join(s, " ") + "\n"
}

// timelineRows are the timeline table's rows, oldest first: one line per
// capture, action, note and recorded item.
func timelineRows(inc *Incident, evidence []Evidence, events []Event, opts MarkdownOpts, day string) [][]string {
	type entry struct {
		at   time.Time
		what string
	}
	var all []entry
	for _, e := range evidence {
		all = append(all, entry{e.CapturedAt, "Captured " + mdInline(e.Title) + " (" + mdInline(e.CapturedBy) + ")"})
	}
	for _, e := range events {
		var what string
		switch {
		case e.Action == ActionCapture && e.Outcome == OutcomeSucceeded:
			continue
		case e.Action == ActionNote:
			what = "Note (" + mdInline(e.Actor) + "): " + mdInline(e.Reason)
		case e.Action == actionOpen && e.IncidentID != nil && *e.IncidentID == inc.ID:
			what = "Incident opened (" + mdInline(e.Actor) + ")"
		case e.Action == actionClose && e.IncidentID != nil && *e.IncidentID == inc.ID:
			what = "Incident closed (" + mdInline(e.Actor) + ")"
		default:
			what = mdInline(e.Action)
			if e.Target != "" {
				what += " on " + mdInline(e.Target)
			}
			what += ": " + mdInline(string(e.Outcome)) + " (" + mdInline(e.Actor) + ")"
		}
		all = append(all, entry{e.At, what})
	}
	for _, r := range opts.Recorded {
		what := "Recorded: " + mdInline(r.Title)
		if r.At.Before(inc.OpenedAt) {
			what += " (before it opened)"
		}
		all = append(all, entry{r.At, what})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := make([][]string, len(all))
	for i, e := range all {
		out[i] = []string{clockIn(e.at, day), e.what}
	}
	return out
}

// actionLines are the changes made during the incident, each with who,
// why and how it ended; a full export adds each result as JSON.
func actionLines(events []Event, full bool) []string {
	var out []string
	for _, e := range events {
		if isBookkeeping(e) {
			continue
		}
		var t strings.Builder
		fmt.Fprintf(&t, "- %s **%s**", stamp(e.At), mdInline(e.Action))
		if e.Target != "" {
			fmt.Fprintf(&t, " on %s", mdInline(e.Target))
		}
		fmt.Fprintf(&t, " by %s (%s): **%s**.", mdInline(e.Actor), mdInline(e.Role), mdInline(string(e.Outcome)))
		if e.Reason != "" {
			fmt.Fprintf(&t, " Reason: %s.", mdInline(strings.TrimSuffix(e.Reason, ".")))
		}
		if e.Error != "" {
			fmt.Fprintf(&t, " Error: %s.", mdInline(strings.TrimSuffix(e.Error, ".")))
		}
		t.WriteString("\n")
		if full && len(e.Result) > 0 && string(e.Result) != "{}" && string(e.Result) != "null" {
			t.WriteString("\n" + indentLines(mdFence("json", indentJSON(e.Result)), "  "))
		}
		out = append(out, t.String())
	}
	return out
}

// evidenceSection is one capture: when, by whom and why, then its rows as
// a compact table (a full export adds the SQL and every column).
func evidenceSection(e Evidence, why string, opts MarkdownOpts, day string) string {
	var t strings.Builder
	fmt.Fprintf(&t, "### %s, %s UTC\n\n", mdInline(e.Title), clockIn(e.CapturedAt, day))
	tab, ok := EvidenceTable{}, false
	if opts.TableFunc != nil {
		tab, ok = opts.TableFunc(e)
	}
	by := "Captured by " + mdInline(e.CapturedBy)
	if why != "" {
		by += ": " + mdInline(strings.TrimSuffix(why, "."))
	}
	if ok && !tab.AsOf.IsZero() && e.CapturedAt.Sub(tab.AsOf) >= time.Second {
		by += " (rows as of " + clockIn(tab.AsOf, day) + ")"
	}
	t.WriteString(by + ".\n\n")
	if !ok {
		var err error
		if tab, err = e.Table(markdownFullRows); err != nil {
			if opts.Full {
				t.WriteString(mdFence("json", indentJSON(e.Data)))
			} else {
				t.WriteString("The capture is not a table; the console shows it.\n")
			}
			return t.String()
		}
	}
	if opts.Full && e.SQLText != "" {
		t.WriteString(mdFence("sql", strings.TrimSpace(e.SQLText)) + "\n")
	}
	switch {
	case tab.Status != "" && tab.Status != "ok":
		msg := "The query did not answer (" + mdInline(tab.Status) + ")"
		if tab.Error != "" {
			msg += ": " + mdInline(strings.TrimSuffix(tab.Error, "."))
		}
		t.WriteString(msg + ".\n")
	case tab.Total == 0:
		t.WriteString("No rows: nothing to show at that moment.\n")
	default:
		t.WriteString(compactTable(tab, opts.Full))
	}
	return t.String()
}

// recordedSection is one flight recorder item with its rows, for a full
// export.
func recordedSection(r RecordedEvidence, day string) string {
	var t strings.Builder
	fmt.Fprintf(&t, "### Recorded: %s, %s UTC\n\n", mdInline(r.Title), clockIn(r.At, day))
	var objects []json.RawMessage
	if json.Unmarshal(r.Data, &objects) == nil {
		if columns, rows, err := tableOf(objects, markdownFullRows); err == nil {
			t.WriteString(compactTable(EvidenceTable{Columns: columns, Rows: rows, Total: len(objects)}, true))
			return t.String()
		}
	}
	t.WriteString(mdFence("json", indentJSON(r.Data)))
	return t.String()
}

// compactTable writes a capture's table: without the columns that are
// empty in every row, and, unless full, at most markdownColumns columns and
// markdownRows rows, saying how many it leaves out.
func compactTable(t EvidenceTable, full bool) string {
	var keep []int
	for i := range t.Columns {
		if columnUsed(t.Rows, i) {
			keep = append(keep, i)
		}
	}
	moreCols := t.MoreColumns
	if !full && len(keep) > markdownColumns {
		moreCols += len(keep) - markdownColumns
		keep = keep[:markdownColumns]
	}
	limit := markdownRows
	if full {
		limit = markdownFullRows
	}
	rows := t.Rows[:min(len(t.Rows), limit)]
	columns := make([]string, len(keep))
	for j, i := range keep {
		columns[j] = mdInline(t.Columns[i])
	}
	cells := make([][]string, len(rows))
	for r, row := range rows {
		cells[r] = make([]string, len(keep))
		for j, i := range keep {
			if i < len(row) {
				cells[r][j] = mdInline(row[i])
			}
		}
	}
	return mdTable(columns, cells, max(t.Total, len(t.Rows))-len(rows), moreCols)
}

// columnUsed reports whether column i holds anything but blanks and
// dashes in some row.
func columnUsed(rows [][]string, i int) bool {
	for _, r := range rows {
		if i < len(r) && strings.TrimSpace(r[i]) != "" && r[i] != "—" {
			return true
		}
	}
	return false
}

// mdTable writes a GFM table of cells already escaped (mdInline), long
// cells cut, and says how many rows and columns it leaves out.
func mdTable(columns []string, rows [][]string, moreRows, moreCols int) string {
	var t strings.Builder
	line := func(vals []string) {
		t.WriteString("|")
		for _, v := range vals {
			if r := []rune(v); len(r) > 120 {
				v = strings.TrimRight(string(r[:120]), `\`) + "…"
			}
			if v == "" {
				v = " "
			}
			t.WriteString(" " + v + " |")
		}
		t.WriteString("\n")
	}
	line(columns)
	t.WriteString("|" + strings.Repeat(" --- |", len(columns)) + "\n")
	for _, r := range rows {
		line(r)
	}
	var more []string
	if moreRows > 0 {
		more = append(more, counted(moreRows, "more row", "more rows"))
	}
	if moreCols > 0 {
		more = append(more, counted(moreCols, "more column", "more columns"))
	}
	if len(more) > 0 {
		fmt.Fprintf(&t, "\n%s in the console.\n", strings.Join(more, " and "))
	}
	return t.String()
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

// mdInline makes s safe as inline Markdown text, escaping only what
// Markdown (CommonMark with GFM's tables and autolinks) would read as
// markup: backslashes, code spans, emphasis, links and images, HTML,
// table pipes, strikethrough, entities, autolinked URLs and e-mail
// addresses, and an underscore outside a word (mdLineStart adds what a
// line's start needs). Line breaks and other control characters become
// spaces, so s stays on one line.
func mdInline(s string) string {
	rs := []rune(s)
	word := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	var b strings.Builder
	for i, r := range rs {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
			continue
		case strings.ContainsRune("\\`*[]<>|~", r),
			r == '_' && !(word(i-1) && word(i+1)),
			r == '@',
			r == '&' && (word(i+1) || i+1 < len(rs) && rs[i+1] == '#'),
			r == ':' && i+2 < len(rs) && rs[i+1] == '/' && rs[i+2] == '/',
			r == '.' && i >= 3 && strings.EqualFold(string(rs[i-3:i]), "www") && !word(i-4):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdLineStart is mdInline for text that starts a line, where a heading,
// list, quote or thematic-break marker would also be read as markup.
func mdLineStart(s string) string {
	out := mdInline(strings.TrimLeft(s, " \t"))
	if out != "" && strings.ContainsRune("#-+=!", rune(out[0])) {
		return `\` + out
	}
	// "1. " or "1) " would open an ordered list.
	if n := len(out) - len(strings.TrimLeft(out, "0123456789")); n > 0 && n < len(out) && (out[n] == '.' || out[n] == ')') {
		out = out[:n] + `\` + out[n:]
	}
	return out
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

// indentLines indents every line of s, so a block stays inside a list
// item.
func indentLines(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// clockIn is t's time of day, with its date when it is not day.
func clockIn(t time.Time, day string) string {
	if t.UTC().Format("2006-01-02") == day {
		return t.UTC().Format("15:04:05")
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// lasted is a duration to the second, as a person says it: 45s, 3m 20s,
// 2h 5m.
func lasted(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// counted is n with the noun in the right number: "1 note", "3 notes".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

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
