package web

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// capturedPanel draws a capture the way its panel is drawn live: its rows
// are read back into the check's row type and laid out by panelView, so
// the headings, units and ages are the live page's (ages counted from the
// moment its rows were read). A capture of a check this console no longer has,
// or whose rows cannot be read back, is laid out from its JSON under the
// same headings.
func capturedPanel(ev audit.Evidence) views.Panel {
	p, _ := capturedPanelAt(ev)
	return p
}

// capturedPanelAt is capturedPanel and when its rows were read (zero when
// the capture does not say).
func capturedPanelAt(ev audit.Evidence) (views.Panel, time.Time) {
	var data struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Rows   json.RawMessage `json:"rows"`
		At     time.Time       `json:"at"`
	}
	marker := "Captured " + clock(ev.CapturedAt) + " UTC by " + ev.CapturedBy
	check, ok := checkOfEvidence(ev)
	if ok && json.Unmarshal(ev.Data, &data) == nil {
		at := ev.CapturedAt
		if !data.At.IsZero() {
			at = data.At
			if ev.CapturedAt.Sub(at) >= time.Second {
				marker += " (rows as of " + clock(at) + ")"
			}
		}
		if rows, err := check.CapturedRows(data.Rows); err == nil {
			res := diagnostics.PanelResult{Name: check.Name, Rows: rows}
			switch data.Status {
			case "", "ok":
			case "timed_out":
				res.TimedOut = true
			default:
				res.Err = fmt.Errorf("%s", data.Error)
			}
			v := panelView(check, res, historyRole, at)
			v.ID = fmt.Sprintf("evidence-%d", ev.ID)
			v.History = marker
			return v, at
		}
	}
	v := views.Panel{ID: fmt.Sprintf("evidence-%d", ev.ID), Title: ev.Title, Status: "ok", History: marker, EmptyTitle: "No rows."}
	tab, err := ev.Table(timelineRows)
	if err != nil {
		v.Status, v.Message = "error", err.Error()
		return v, time.Time{}
	}
	if tab.Status != "" && tab.Status != "ok" {
		v.Status, v.Message = "error", "The capture's query did not answer ("+tab.Status+"): "+tab.Error
		return v, time.Time{}
	}
	for _, c := range tab.Columns {
		v.Columns = append(v.Columns, views.Column{Label: views.ColumnLabel(c)})
	}
	for _, r := range tab.Rows {
		cells := make([]views.Cell, len(r))
		for i, s := range r {
			cells[i] = views.Cell{Text: s}
		}
		v.Rows = append(v.Rows, cells)
	}
	if more := tab.Total - len(tab.Rows); more > 0 {
		v.Note = fmt.Sprintf("The first %d of %d rows; the API has them all.", len(tab.Rows), tab.Total)
	}
	return v, time.Time{}
}

// checkOfEvidence is the diagnostics check a capture ran: captures are
// titled with the check's title.
func checkOfEvidence(ev audit.Evidence) (diagnostics.Check, bool) {
	for _, c := range diagnostics.Catalog() {
		if c.Title == ev.Title {
			return c, true
		}
	}
	return diagnostics.Check{}, false
}

// exportTable is a capture for the Markdown export: the live panel's
// headings and formatted cells (the export leaves out the empty columns
// and bounds the rest).
func exportTable(ev audit.Evidence) (audit.EvidenceTable, bool) {
	p, at := capturedPanelAt(ev)
	t := audit.EvidenceTable{Status: p.Status, Error: p.Message, Total: len(p.Rows), AsOf: at}
	if p.Status != "ok" {
		return t, true
	}
	for _, c := range p.Columns {
		t.Columns = append(t.Columns, c.Label)
	}
	for _, row := range p.Rows {
		out := make([]string, len(row))
		for i, c := range row {
			out[i] = c.Text
		}
		t.Rows = append(t.Rows, out)
	}
	return t, true
}
