package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// panelInfo is what the web layer adds to a diagnostics query to show it as
// a panel: which columns to hide, and what an empty result means.
type panelInfo struct {
	hide       []string // json names of fields not worth a column
	emptyTitle string
	emptyWhy   string
}

var panelInfos = map[string]panelInfo{
	"activity": {hide: []string{"backend_start", "state_change", "xact_start", "query_start", "database", "user", "backend_type"},
		emptyTitle: "No client backends besides the console.", emptyWhy: " Sessions of applications and workers would be listed here, oldest transaction first."},
	"idle_in_transaction": {hide: []string{"xact_start", "state_change", "database", "user"},
		emptyTitle: "No session is idle in a transaction.", emptyWhy: " A session that opened a transaction and stopped talking would hold its locks and the xmin horizon; it would show here."},
	"blocking_tree": {hide: []string{"parent_pid", "root_pid", "depth", "backend_start", "xact_start", "query_start", "blocked_by", "is_root", "client_addr", "backend_type"},
		emptyTitle: "Nobody is waiting on a lock.", emptyWhy: " When a backend waits on another, the chain up to its root blocker appears here."},
	"lock_waits":    {emptyTitle: "No lock waits.", emptyWhy: " Relations with backends waiting to lock them would be listed here."},
	"connections":   {emptyTitle: "No connections.", emptyWhy: ""},
	"copy_progress": {emptyTitle: "No COPY is running.", emptyWhy: " Bulk loads in progress would show their progress here."},
	"queue_health": {hide: []string{"oldest_ready_at", "oldest_expired_lease", "settings_updated_by"},
		emptyTitle: "No queue has jobs yet.", emptyWhy: " Each queue's ready, running and dead counts appear here once jobs are enqueued."},
	"dead_letters":  {emptyTitle: "No dead letters.", emptyWhy: " Jobs that used up their attempts or failed permanently would be grouped here by error class."},
	"workers":       {emptyTitle: "No worker has registered.", emptyWhy: " Engine processes heartbeat a row here; start one with `console worker`."},
	"outbox_health": {emptyTitle: "No outbox activity.", emptyWhy: ""},
	"replication": {hide: []string{"sent_lsn", "write_lsn", "flush_lsn", "replay_lsn"},
		emptyTitle: "No standby is attached.", emptyWhy: " Streaming standbys connected to this server would be listed with their lag here."},
	"standby_status":    {emptyTitle: "No standby configured.", emptyWhy: " Set STANDBY_URLS to read receiver and replay state from standbys."},
	"replication_slots": {emptyTitle: "No replication slots.", emptyWhy: " Physical and logical slots, with the WAL they retain, would be listed here."},
	"archiver":          {emptyTitle: "No archiver statistics.", emptyWhy: ""},
	"statements_top":    {emptyTitle: "No statements recorded.", emptyWhy: " Install pg_stat_statements (shared_preload_libraries and CREATE EXTENSION) to see the top statements."},
	"prepared_xacts":    {emptyTitle: "No prepared transactions.", emptyWhy: " Two-phase transactions waiting for a decision would be listed here."},
	"xmin_horizon":      {emptyTitle: "Nothing holds the xmin horizon back.", emptyWhy: ""},
	"table_vacuum":      {emptyTitle: "No table statistics yet.", emptyWhy: ""},
	"invalid_indexes":   {emptyTitle: "No invalid indexes.", emptyWhy: " An index left invalid by a failed CREATE INDEX CONCURRENTLY would show here."},
	"io_stats":          {emptyTitle: "No I/O statistics.", emptyWhy: " pg_stat_io exists from PostgreSQL 16."},
}

// panelView maps a diagnostics result to a panel: status, rows and SQL.
func panelView(r diagnostics.PanelResult, title string, role string, now time.Time) views.Panel {
	info := panelInfos[r.Name]
	p := views.Panel{ID: r.Name, Title: title, SQL: r.SQL, Status: "ok", EmptyTitle: info.emptyTitle, EmptyWhy: info.emptyWhy}
	if p.EmptyTitle == "" {
		p.EmptyTitle = "No rows."
	}
	if r.Took > 0 {
		p.Took = humanSeconds(r.Took.Seconds())
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
	if r.Name == "blocking_tree" {
		return blockingPanel(p, r, role, now)
	}
	p.Columns, p.Rows = reflectTable(r.Rows, info.hide, now)
	return p
}

// blockingPanel draws the chain as a tree, root first, with the next step on
// the root.
func blockingPanel(p views.Panel, r diagnostics.PanelResult, role string, now time.Time) views.Panel {
	p.Columns = []views.Column{{Label: "pid"}, {Label: "state"}, {Label: "waits on"}, {Label: "blocks", Num: true, Hint: "backends waiting behind it, directly or not"},
		{Label: "waiting", Num: true}, {Label: "transaction age", Num: true}, {Label: "application"}, {Label: "job"}, {Label: "query"}, {Label: "next step"}}
	for _, row := range r.Rows {
		n, ok := row.(diagnostics.BlockingNode)
		if !ok {
			continue
		}
		pid := views.Cell{Text: strconv.Itoa(int(n.PID)), Mono: true, Indent: n.Depth}
		wait := strings.Trim(n.WaitEventType+": "+n.WaitEvent, ": ")
		state := views.Cell{Text: n.State}
		next := views.Cell{}
		waiting := views.Cell{Text: humanSeconds(n.WaitSeconds)}
		if n.IsRoot {
			state = views.Cell{Sev: "critical", Text: "root blocker, " + n.State}
			params := map[string]string{"pid": strconv.Itoa(int(n.PID))}
			next.Actions = actionLinks([]string{"backend.cancel", "backend.terminate"}, role, params)
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
			{Text: humanSeconds(n.XactAgeSeconds)},
			{Text: n.ApplicationName},
			job,
			{Text: truncate(n.Query, 80), Title: n.Query, Mono: true},
			next,
		})
	}
	return p
}

// reflectTable turns rows of any diagnostics struct into columns and cells,
// formatting by field type and name: times as ages, *_seconds as durations,
// *_bytes humanised.
func reflectTable(rows []any, hide []string, now time.Time) ([]views.Column, [][]views.Cell) {
	if len(rows) == 0 {
		return nil, nil
	}
	t := reflect.TypeOf(rows[0])
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return []views.Column{{Label: "value"}}, [][]views.Cell{{{Text: fmt.Sprint(rows...)}}}
	}
	type field struct {
		index int
		name  string
	}
	var fields []field
	var cols []views.Column
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" || slices.Contains(hide, name) {
			continue
		}
		fields = append(fields, field{i, name})
		cols = append(cols, views.Column{Label: columnLabel(name), Num: isNumeric(f.Type)})
	}
	var out [][]views.Cell
	for _, row := range rows {
		v := reflect.ValueOf(row)
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				break
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		cells := make([]views.Cell, len(fields))
		for i, f := range fields {
			cells[i] = formatField(f.name, v.Field(f.index), now)
		}
		out = append(out, cells)
	}
	return cols, out
}

func isNumeric(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

var timeType = reflect.TypeOf(time.Time{})

func formatField(name string, v reflect.Value, now time.Time) views.Cell {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return views.Cell{Text: "—"}
		}
		v = v.Elem()
	}
	if v.Type() == timeType {
		t := v.Interface().(time.Time)
		return ageCell(&t, now)
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case strings.HasSuffix(name, "_seconds"):
			return views.Cell{Text: humanSeconds(f)}
		case strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_size"):
			return views.Cell{Text: humanBytes(f)}
		case strings.HasSuffix(name, "_per_second"):
			return views.Cell{Text: humanRate(f)}
		case strings.Contains(name, "fraction") || strings.Contains(name, "ratio"):
			return views.Cell{Text: strconv.FormatFloat(f*100, 'f', 1, 64) + "%"}
		}
		return views.Cell{Text: strconv.FormatFloat(f, 'f', -1, 64)}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		if strings.HasSuffix(name, "_bytes") || strings.HasSuffix(name, "_size") {
			return views.Cell{Text: humanBytes(float64(n))}
		}
		if name == "pid" || strings.HasSuffix(name, "_pid") {
			return views.Cell{Text: strconv.FormatInt(n, 10), Mono: true}
		}
		return views.Cell{Text: humanInt(n)}
	case reflect.Bool:
		if v.Bool() {
			return views.Cell{Text: "yes"}
		}
		return views.Cell{Text: "no"}
	case reflect.String:
		s := v.String()
		if s == "" {
			return views.Cell{Text: "—"}
		}
		if name == "query" || strings.HasSuffix(name, "_query") || name == "statement" {
			return views.Cell{Text: truncate(s, 80), Title: s, Mono: true}
		}
		if strings.HasSuffix(name, "_lsn") || name == "gid" || strings.HasSuffix(name, "xmin") {
			return views.Cell{Text: s, Mono: true}
		}
		return views.Cell{Text: s}
	case reflect.Slice, reflect.Map:
		b, _ := json.Marshal(v.Interface())
		txt := string(b)
		if txt == "null" || txt == "[]" || txt == "{}" {
			txt = "—"
		}
		return views.Cell{Text: strings.Trim(txt, "[]"), Mono: true}
	}
	return views.Cell{Text: fmt.Sprint(v.Interface())}
}

// panel serves GET /panels/:name: one diagnostics query as a self-refreshing
// panel (or its rows as JSON).
func (s *Server) panel(c echo.Context) error {
	name := c.Param("name")
	check, ok := catalogCheck(name)
	if !ok {
		return fmt.Errorf("%w: no diagnostics panel named %q", errNotFound, name)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 10*time.Second)
	defer cancel()
	res, ok := s.cfg.Diagnostics.Panel(ctx, name)
	if !ok {
		return fmt.Errorf("%w: no diagnostics panel named %q", errNotFound, name)
	}
	if wantsJSON(c) {
		body := map[string]any{"name": res.Name, "sql": res.SQL, "rows": res.Rows, "status": res.Status(),
			"timed_out": res.TimedOut, "locked_by": res.LockedBy, "took_ms": res.Took.Milliseconds()}
		if res.Err != nil {
			body["error"] = res.Err.Error()
		}
		return c.JSON(200, body)
	}
	p, _ := principalFrom(c)
	v := panelView(res, check.Title, p.Role, time.Now())
	v.RefreshURL, v.RefreshSeconds = "/panels/"+name, 10
	if inc := s.openIncident(ctx); inc != nil && auth.RoleRank(p.Role) >= auth.RoleRank(auth.RoleOperator) {
		v.CaptureURL = fmt.Sprintf("/incidents/%d/capture", inc.ID)
		v.CSRF = csrfToken(c)
	}
	return s.render(c, page{Title: check.Title, Model: v, Body: views.PanelView(v)})
}

// columnLabel turns a json field name into a heading; the unit suffixes go,
// since the values carry their unit ("4m12s", "1.5 MiB").
func columnLabel(name string) string {
	for _, suffix := range []string{"_seconds", "_bytes"} {
		name = strings.TrimSuffix(name, suffix)
	}
	return strings.ReplaceAll(name, "_", " ")
}
