package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// panelView maps a check's result to a panel: status, rows and SQL.
func panelView(ck diagnostics.Check, r diagnostics.PanelResult, role string, now time.Time) views.Panel {
	p := views.Panel{ID: r.Name, Title: ck.Title, SQL: r.SQL, Status: "ok", EmptyTitle: ck.EmptyTitle, EmptyWhy: ck.EmptyWhy,
		Cards: ck.Name == diagnostics.CheckStatementsTop}
	if p.EmptyTitle == "" {
		p.EmptyTitle = "No rows."
	}
	if r.Took > 0 {
		p.Took = humanize.Seconds(r.Took.Seconds())
	}
	if !r.At.IsZero() {
		p.AsOf = "as of " + clock(r.At) + " UTC, " + humanize.Seconds(max(now.Sub(r.At), 0).Seconds()) + " old"
	}
	switch {
	case len(r.LockedBy) > 0:
		p.Status = "locked"
		pids := make([]string, len(r.LockedBy))
		for i, pid := range r.LockedBy {
			pids[i] = strconv.Itoa(int(pid))
		}
		p.Message = "This query waited on a lock held by pid " + strings.Join(pids, ", ") +
			" and gave up rather than hang. The blocking tree shows who holds it."
		return p
	case r.TimedOut:
		p.Status = "timed_out"
		p.Message = "The query did not finish within its statement timeout; the database may be overloaded. The rest of the page is unaffected; this panel retries on refresh."
		return p
	case errors.Is(r.Err, diagnostics.ErrUnsupported), errors.Is(r.Err, diagnostics.ErrNotInstalled):
		// Not a failure: this server cannot answer this question.
		p.EmptyTitle = "Not available here."
		p.EmptyWhy = " " + r.Err.Error()
		return p
	case r.Err != nil:
		p.Status = "error"
		p.Message = "The query failed: " + r.Err.Error()
		return p
	}
	if r.Name == diagnostics.CheckBlockingTree {
		return blockingPanel(p, r, role, now)
	}
	p.Columns, p.Rows = table(ck.Columns, r.Rows, now)
	return p
}

// blockingPanel draws the chain as a tree, root first, with the next step on
// the root.
func blockingPanel(p views.Panel, r diagnostics.PanelResult, role string, now time.Time) views.Panel {
	p.Columns = []views.Column{{Label: "PID"}, {Label: "State"}, {Label: "Lock", Hint: "what is locked and how: the target, its lock type, the mode wanted and the mode its blocker holds"},
		{Label: "Blocks", Num: true, Hint: "backends waiting behind it, directly or not"},
		{Label: "Waiting", Num: true}, {Label: "Transaction age", Num: true}, {Label: "Application"}, {Label: "Job"}, {Label: "Query"}, {Label: "Next step"}}
	for _, row := range r.Rows {
		n, ok := row.(diagnostics.BlockingNode)
		if !ok {
			continue
		}
		pid := views.Cell{Text: strconv.Itoa(int(n.PID)), Mono: true, Indent: n.Depth}
		wait := strings.Trim(n.WaitEventType+": "+n.WaitEvent, ": ")
		if l := n.LockText(); l != "" {
			wait = l
		}
		state := views.Cell{Text: n.State}
		next := views.Cell{}
		waiting := views.Cell{Text: humanize.Seconds(n.WaitSeconds)}
		if n.IsRoot {
			state = views.Cell{Sev: "critical", Text: "root blocker, " + n.State}
			next.Actions = rootOffers(n, role)
			waiting.Text = "—"
		}
		job := views.Cell{Text: "—"}
		if n.JobID != nil {
			job = views.Cell{Text: "#" + strconv.FormatInt(*n.JobID, 10), Href: "/jobs/" + strconv.FormatInt(*n.JobID, 10), Mono: true}
		}
		p.Rows = append(p.Rows, []views.Cell{
			pid, state, {Text: wait},
			{Text: strconv.Itoa(n.BlockedCount)},
			waiting,
			{Text: humanize.Seconds(n.XactAgeSeconds)},
			{Text: n.ApplicationName},
			job,
			{Text: truncate(n.Query, 80), Title: n.Query, Mono: true},
			next,
		})
	}
	return p
}

// rootParams are the parameters of a root's actions: its pid, or a
// prepared transaction's gid.
func rootParams(n diagnostics.BlockingNode) map[string]string {
	if n.IsPrepared() {
		return map[string]string{"gid": n.GID}
	}
	return map[string]string{"pid": strconv.Itoa(int(n.PID))}
}

// table lays rows out in a check's columns.
func table(columns []diagnostics.Column, rows []any, now time.Time) ([]views.Column, [][]views.Cell) {
	if len(rows) == 0 {
		return nil, nil
	}
	cols := make([]views.Column, len(columns))
	for i, c := range columns {
		cols[i] = views.Column{Label: views.ColumnLabel(c.Name), Num: c.Format.Numeric()}
	}
	out := make([][]views.Cell, len(rows))
	for i, row := range rows {
		cells := make([]views.Cell, len(columns))
		for j, c := range columns {
			cells[j] = formatValue(c.Format, c.Value(row), now)
		}
		out[i] = cells
	}
	return cols, out
}

// formatValue shows one value as its column's Format says; NULL, an empty
// string and an empty list show as a dash.
func formatValue(f diagnostics.Format, v diagnostics.Value, now time.Time) views.Cell {
	dash := views.Cell{Text: "—"}
	if f == diagnostics.AsIDList || f == diagnostics.AsNameList {
		return listCell(f, v.List)
	}
	if v.Null {
		return dash
	}
	switch f {
	case diagnostics.AsAge:
		return ageCell(&v.Time, now)
	case diagnostics.AsSeconds:
		return views.Cell{Text: humanize.Seconds(v.Float)}
	case diagnostics.AsBytes:
		return views.Cell{Text: humanize.Bytes(v.Float)}
	case diagnostics.AsRate:
		return views.Cell{Text: humanRate(v.Float)}
	case diagnostics.AsPercent:
		return views.Cell{Text: strconv.FormatFloat(v.Float*100, 'f', 1, 64) + "%"}
	case diagnostics.AsNumber:
		return views.Cell{Text: strconv.FormatFloat(v.Float, 'f', -1, 64)}
	case diagnostics.AsCount:
		return views.Cell{Text: humanize.Int(v.Int)}
	case diagnostics.AsID:
		return views.Cell{Text: strconv.FormatInt(v.Int, 10), Mono: true}
	case diagnostics.AsYesNo:
		if v.Bool {
			return views.Cell{Text: "yes"}
		}
		return views.Cell{Text: "no"}
	}
	if v.Text == "" {
		return dash
	}
	switch f {
	case diagnostics.AsQuery:
		return views.Cell{Text: truncate(v.Text, 80), Title: v.Text, Mono: true}
	case diagnostics.AsCode:
		return views.Cell{Text: v.Text, Mono: true}
	}
	return views.Cell{Text: v.Text}
}

// listCell shows a list comma separated in monospace, names quoted.
func listCell(f diagnostics.Format, list []string) views.Cell {
	if len(list) == 0 {
		return views.Cell{Text: "—", Mono: true}
	}
	if f == diagnostics.AsNameList {
		quoted := make([]string, len(list))
		for i, s := range list {
			quoted[i] = quoteName(s)
		}
		list = quoted
	}
	return views.Cell{Text: strings.Join(list, ","), Mono: true}
}

// quoteName puts a name in double quotes, escaped as a JSON string is (the
// way lists of names have always been shown): quotes, backslashes, control
// characters, <, >, &, U+2028 and U+2029 escaped, invalid UTF-8 replaced.
func quoteName(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xF])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// panel serves GET /panels/:name: one diagnostics query as a self-refreshing
// panel (or its rows as JSON).
func (s *Server) panel(c echo.Context) error {
	name := c.Param("name")
	check, ok := diagnostics.CheckNamed(name)
	if !ok {
		return fmt.Errorf("%w: no diagnostics panel named %q", errNotFound, name)
	}
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastPanel(c, check, t)
	}
	if err := s.db.check(c.Request().Context()); err != nil {
		if wantsJSON(c) {
			return err
		}
		// 200, not 503: the page and its frame are served (the panel says
		// what is missing in its data-status), and a reverse proxy that
		// replaces 5xx answers with error pages of its own must not
		// replace it.
		return s.render(c, page{Title: check.Title, Body: views.PanelView(notAnsweringPanel(check, s.db))})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 10*time.Second)
	defer cancel()
	res, ok := s.cfg.Diagnostics.Panel(ctx, name)
	if !ok {
		return fmt.Errorf("%w: no diagnostics panel named %q", errNotFound, name)
	}
	if wantsJSON(c) {
		body := map[string]any{"name": res.Name, "sql": res.SQL, "rows": res.Rows, "status": res.Status(),
			"timed_out": res.TimedOut, "locked_by": res.LockedBy, "took_ms": res.Took.Milliseconds(),
			"at": res.At, "age_ms": time.Since(res.At).Milliseconds()}
		if res.Err != nil {
			body["error"] = res.Err.Error()
		}
		return c.JSON(200, body)
	}
	p, _ := principalFrom(c)
	v := panelView(check, res, p.Role, time.Now())
	guard := s.backendGuard(ctx)
	for _, row := range v.Rows {
		for i := range row {
			row[i].Actions = guardOffers(row[i].Actions, guard)
		}
	}
	v = withRates(name, v, s.cfg.Sampler, time.Now())
	v.RefreshURL, v.RefreshSeconds = "/panels/"+name, refreshSeconds(res.Took)
	if inc := s.openIncident(ctx); inc != nil && auth.RoleRank(p.Role) >= auth.RoleRank(auth.RoleOperator) {
		v.CaptureURL = fmt.Sprintf("/incidents/%d/capture", inc.ID)
		v.CSRF = csrfToken(c)
	}
	return s.render(c, page{Title: check.Title, Model: v, Body: views.PanelView(v)})
}

// pastPanel serves GET /panels/:name?at=...: the panel as the newest
// recorded sample at or before the moment holds it, or a note that says
// why the past cannot be shown. It never refreshes and offers no action.
func (s *Server) pastPanel(c echo.Context, check diagnostics.Check, t travel) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	res, e, err := recorder.PanelAt(ctx, s.cfg.Pool, check.Name, t.q.at)
	if err != nil && !errors.Is(err, recorder.ErrNotRecorded) && !errors.Is(err, recorder.ErrNoHistory) {
		return err
	}
	v := pastPanelView(check, res, e, err, t.q.at, s.historyStatus().Reason)
	return s.render(c, page{Title: check.Title, Model: v, Body: views.PanelView(v)})
}

// pastPanelView maps a recorded panel (or why there is none: err is
// ErrNotRecorded or ErrNoHistory) to its view; no I/O. Ages are counted
// from the sample's time, as they were then.
func pastPanelView(ck diagnostics.Check, res diagnostics.PanelResult, e recorder.HistoryEntry, err error, at time.Time, recording string) views.Panel {
	marker := "History · at " + clock(at)
	switch {
	case errors.Is(err, recorder.ErrNotRecorded):
		return notRecordedPanel(ck.Name, ck.Title, at)
	case errors.Is(err, recorder.ErrNoHistory):
		return views.Panel{ID: ck.Name, Title: ck.Title, Status: "ok", History: marker,
			Missing: "No sample was recorded in the 30 seconds before " + clock(at) + " UTC. " + recording}
	}
	v := panelView(ck, res, historyRole, e.At)
	v.SQL, v.Took, v.AsOf = "", "", ""
	v.History = marker + " (sample " + clock(e.At) + ")"
	if v.Status == "error" {
		v.Status, v.Message, v.Missing = "ok", "", "This check failed when the sample of "+clock(e.At)+" UTC was recorded; nothing of it was kept."
	}
	return v
}

// notRecordedPanel is the panel id, titled title, at a moment history does
// not keep it for: a note that says so and what history keeps, never live
// rows.
func notRecordedPanel(id, title string, at time.Time) views.Panel {
	return views.Panel{ID: id, Title: title, Status: "ok", History: "History · at " + clock(at),
		Missing: "Not recorded: history keeps " + recorder.HistoryKept + ". This panel is live only; go back to live to see it now."}
}

// notAnsweringPanel is a panel whose query was not even sent: the
// database does not answer. It keeps its title and refresh address, so
// app.js keeps the rows it showed (marked stale) and goes on retrying.
func notAnsweringPanel(ck diagnostics.Check, w *dbWatch) views.Panel {
	msg := "Database not answering"
	if since, down := w.down(); down {
		msg += notAnsweringFor(since, time.Now())
	}
	return views.Panel{ID: ck.Name, Title: ck.Title, Status: "error", RefreshURL: "/panels/" + ck.Name, RefreshSeconds: panelRefreshSeconds,
		Message: msg + "; this panel retries by itself and shows its rows again once the database answers."}
}

// panelRefreshSeconds is how often a panel refreshes while its queries
// succeed and are cheap.
const panelRefreshSeconds = 10

// refreshSeconds is when a panel whose query took took refreshes next: every
// panelRefreshSeconds while the query is cheap, and 50 times its cost when
// it is not (a 600ms query every 30s), at most every two minutes, so a slow
// check costs the database at most a fiftieth of its time however long the
// page stays open.
func refreshSeconds(took time.Duration) int {
	return min(max(panelRefreshSeconds, int(math.Ceil(50*took.Seconds()))), 120)
}
