package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// stageIncident plays a short incident on e: a lock chain's root blocker
// is found, an operator opens an incident from the finding with one post,
// cancels the root through the console, notes it and, a second after the
// opening, captures the blocking tree again. It returns the operator, the incident's address and
// the chain. The cancel leaves the chain's middle as a new root, so the
// chain never clears: e's runner should settle quickly (setupOpts.settle).
func stageIncident(t *testing.T, e *env) (*client, string, *lockChain) {
	t.Helper()
	lc := newLockChain(t, e.url)
	root := fmt.Sprintf("pid %d ", lc.rootPID)
	op := e.signedIn(t, "operator")
	var m views.Overview
	require.Eventually(t, func() bool {
		body := op.page("/", "Accept", "application/json")
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return findingRow(m, "lock.root_blocker", root) != nil
	}, 20*time.Second, 200*time.Millisecond, "no lock.root_blocker finding for the chain's root (%s)", root)
	f := findingRow(m, "lock.root_blocker", root)
	require.Contains(t, op.page("/"), ">Open incident</button>", "with no incident open, a finding offers to open one")

	resp, body := op.post("/incidents/finding", url.Values{"_csrf": {op.csrf}, "code": {f.Code}, "title": {f.Title},
		"evidence": {f.Evidence}, "runbook": {f.RunbookHref}})
	opened := time.Now()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	incident := strings.TrimSuffix(resp.Header.Get("Location"), "#timeline")
	require.Regexp(t, `^/incidents/\d+$`, incident)
	id, err := strconv.ParseInt(strings.TrimPrefix(incident, "/incidents/"), 10, 64)
	require.NoError(t, err)
	require.Contains(t, op.page("/"), fmt.Sprintf(">Add to incident #%d</button>", id), "with one open, it offers to add to it")

	_, err = e.srv.cfg.Actions.Run(context.Background(), actions.Actor{Name: "operator", Role: auth.RoleOperator}, "backend.cancel",
		actions.Request{Params: map[string]any{"pid": lc.rootPID}, Reason: "root blocker of the accounts chain | held for minutes", IncidentID: &id})
	require.NoError(t, err)
	<-lc.rootDone
	resp, _ = op.post(incident+"/notes", url.Values{"_csrf": {op.csrf}, "text": {"# chain cleared | billing retried"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	// The capture below is served from the blocking tree's shared read,
	// which the incident's opening capture loaded: a second after the
	// opening, that read is at least a second old whatever the machine's
	// pace (a stale one is served while the next loads), so the capture
	// must say how old its rows are.
	time.Sleep(time.Until(opened.Add(time.Second)))
	resp, _ = op.post(incident+"/capture", url.Values{"_csrf": {op.csrf}, "panel": {diagnostics.CheckBlockingTree}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return op, incident, lc
}

// TestIncidentExportPastesIntoAPostMortem: a staged incident (opened from a
// finding, one action, a note, a capture) exports as Markdown a person
// pastes: under 100 lines, a summary paragraph that says what, when, why
// and what was done, a timeline table, the action with its reason and
// outcome, and the evidence as tables that parse as GFM tables, with no
// SQL file, fence or JSON unless ?full=1 asks for them.
//
// Not parallel: cancelling the root leaves the chain's middle idle in
// transaction as the server's root, which other tests' narratives would
// read.
func TestIncidentExportPastesIntoAPostMortem(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th, settle: 300 * time.Millisecond})
	op, incident, lc := stageIncident(t, e)

	resp, md := op.get(incident + "/export.md")
	require.Equal(t, http.StatusOK, resp.StatusCode, md)
	lines := strings.Split(strings.TrimRight(md, "\n"), "\n")
	require.Less(t, len(lines), 100, "the export fits a post-mortem:\n%s", md)
	for _, bad := range []string{"```", `{"`, `"}`, ".sql", "FROM pg_"} {
		require.NotContains(t, md, bad, "no SQL, fence or JSON unless asked:\n%s", md)
	}

	summary := section(t, md, "## Summary")
	root := strconv.Itoa(int(lc.rootPID))
	require.Contains(t, summary, "pid "+root, "the title, from the finding")
	require.Contains(t, summary, "started 20", "when")
	require.Contains(t, summary, "so far", "how long")
	require.Contains(t, summary, "Opened because: finding lock.root_blocker: ", "why: the finding")
	require.Contains(t, summary, "Done: backend.cancel on backend:"+root+" (succeeded).", "what was done")

	tables := gfmTables(t, md)
	require.GreaterOrEqual(t, len(tables), 3, "the timeline and the two captures of the blocking tree:\n%s", md)
	timeline := tables[0]
	require.Equal(t, []string{"Time (UTC)", "What"}, timeline[0])
	var whats []string
	for _, row := range timeline[1:] {
		require.Regexp(t, `^\d\d:\d\d:\d\d$`, row[0])
		whats = append(whats, row[1])
	}
	all := strings.Join(whats, "\n")
	require.Contains(t, all, "Incident opened (operator)")
	require.Contains(t, all, "Captured Blocking tree (operator)")
	require.Contains(t, all, "backend.cancel on backend:"+root+": succeeded (operator)")
	require.Contains(t, all, `Note (operator): # chain cleared \| billing retried`, "a note keeps its # mid-line, its pipe escaped in the cell")
	require.Less(t, strings.Index(all, "Incident opened"), strings.Index(all, "backend.cancel"), "oldest first")

	actionsPart := section(t, md, "## Actions")
	require.Contains(t, actionsPart, "**backend.cancel** on backend:"+root+" by operator (operator): **succeeded**. Reason: root blocker of the accounts chain \\| held for minutes.",
		"the action with its reason (the pipe escaped) and outcome")

	evidence := section(t, md, "## Evidence")
	require.Contains(t, evidence, "### Blocking tree, ")
	require.Contains(t, evidence, "| PID |", "the live panel's headings")
	require.NotContains(t, evidence, "Next step", "a column of buttons is left out")
	require.Contains(t, evidence, "root blocker", "the live panel's cells")
	require.Contains(t, evidence, "(rows as of ", "a capture served from a shared, older read says so")
	for _, tab := range tables[1:] {
		require.LessOrEqual(t, len(tab[0]), 7, "compact: few columns")
		require.LessOrEqual(t, len(tab)-1, 10, "and few rows")
	}

	resp, full := op.get(incident + "/export.md?full=1")
	require.Equal(t, http.StatusOK, resp.StatusCode, full)
	require.Contains(t, full, "```sql", "?full=1 adds the SQL")
	require.Contains(t, full, "```json", "and the action's result")
	gfmTables(t, full)

	resp, body := op.get(incident + "/export.md?full=yes")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "is not 0 or 1")
}

// TestIncidentTimelineStartsAtOpenInTheOrderAsked: the incident page's
// timeline starts when the incident opened, oldest first unless the
// address asks for newest first; each link keeps the other choice.
// Not parallel, as TestIncidentExportPastesIntoAPostMortem.
func TestIncidentTimelineStartsAtOpenInTheOrderAsked(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th, settle: 300 * time.Millisecond})
	op, incident, _ := stageIncident(t, e)

	entries := regexp.MustCompile(`<li data-testid="timeline-(\w+)">`)
	kinds := func(body string) []string {
		var out []string
		for _, m := range entries.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	oldest := kinds(op.page(incident))
	require.Equal(t, "action", oldest[0], "the incident's opening comes first: %v", oldest)
	require.Equal(t, "evidence", oldest[len(oldest)-1], "the last capture last: %v", oldest)
	body := op.page(incident + "?order=newest")
	newest := kinds(body)
	require.Len(t, newest, len(oldest))
	for i := range oldest {
		require.Equal(t, oldest[i], newest[len(newest)-1-i], "newest first is the reverse: %v %v", oldest, newest)
	}
	require.Contains(t, body, `href="`+incident+`#timeline" data-testid="timeline-order">`, "the link back to oldest first")
	require.Contains(t, body, `data-testid="timeline-outcome">succeeded</span>`, "each action with its outcome")

	resp, body := op.get(incident + "?order=sideways")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, body, "is not oldest or newest")
}

// section is md from heading to the next heading of the same level.
func section(t *testing.T, md, heading string) string {
	t.Helper()
	i := strings.Index(md, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no %q in:\n%s", heading, md)
	rest := md[i+len(heading)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// gfmSeparator is a GFM table's delimiter row.
var gfmSeparator = regexp.MustCompile(`^\|( *:?-{3,}:? *\|)+$`)

// gfmTables reads md's tables as GFM does: a header row, a delimiter row
// with as many cells, then rows, after a blank line; it fails the test on
// a table that does not parse, and returns each table's cells, unescaped
// pipes splitting them.
func gfmTables(t *testing.T, md string) [][][]string {
	t.Helper()
	lines := strings.Split(md, "\n")
	var tables [][][]string
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		require.True(t, i > 0 && lines[i-1] == "", "a table starts after a blank line: %q", lines[i])
		require.Less(t, i+1, len(lines))
		header := gfmCells(lines[i])
		require.Regexp(t, gfmSeparator, lines[i+1], "a delimiter row follows the header %q", lines[i])
		require.Len(t, gfmCells(lines[i+1]), len(header), "the delimiter row has the header's cells: %q", lines[i+1])
		tab := [][]string{header}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			row := gfmCells(lines[i])
			require.Len(t, row, len(header), "a row has the header's cells: %q", lines[i])
			tab = append(tab, row)
		}
		tables = append(tables, tab)
	}
	return tables
}

// gfmCells splits a table row on its unescaped pipes.
func gfmCells(line string) []string {
	line = strings.TrimSpace(line)
	require := strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`)
	if !require {
		return nil
	}
	var cells []string
	var cur strings.Builder
	for i := 1; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i])
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return cells
}
