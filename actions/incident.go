package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
)

// Incidents are records, not changes to the system, but opening, closing and
// capturing evidence into one are still operator mutations: they go through
// the Runner so each is audited like every other change.

// IncidentView is an incident as previews and results show it.
type IncidentView struct {
	ID     int64  `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

type incidentOpen struct{ p audit.IncidentOpenParams }

func (a *incidentOpen) target() string { return "incident:new" }

func (a *incidentOpen) preview(context.Context, *runContext) (any, error) {
	return map[string]any{"title": a.p.Title, "impact": a.p.Impact, "slo": a.p.SLO, "window_start": a.p.WindowStart,
		"effect": "opens an incident; evidence captured and actions taken while it is open are linked to it"}, nil
}

func (a *incidentOpen) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	p := a.p
	p.OpenedBy = rc.actor.Name
	inc, err := audit.IncidentOpen(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	rc.req.IncidentID = &inc.ID // the audit event belongs to the new incident
	return IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, nil
}

type incidentClose struct {
	id      int64
	summary string
}

func (a *incidentClose) target() string { return "incident:" + strconv.FormatInt(a.id, 10) }

func (a *incidentClose) preview(ctx context.Context, rc *runContext) (any, error) {
	inc, err := audit.IncidentGet(ctx, rc.r.pool, a.id)
	if err != nil {
		return nil, wrapNotFound(err, audit.ErrNotFound, "incident %d", a.id)
	}
	if inc.Status != audit.IncidentStatusOpen {
		return nil, fmt.Errorf("incident %d is already closed: %w", a.id, ErrInvalid)
	}
	return map[string]any{"incident": IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, "summary": a.summary}, nil
}

func (a *incidentClose) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	inc, err := audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: a.id, ClosedBy: rc.actor.Name, Summary: a.summary})
	if err != nil {
		return nil, translateAudit(err)
	}
	rc.req.IncidentID = &inc.ID
	return IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, nil
}

// incidentCapture runs one diagnostics panel and stores what it returned,
// with the SQL that ran, in the incident's timeline. The capture is taken at
// execution, so the evidence is what the database said at that moment.
type incidentCapture struct {
	id    int64
	panel string
}

func (a *incidentCapture) target() string { return "incident:" + strconv.FormatInt(a.id, 10) }

func (a *incidentCapture) preview(ctx context.Context, rc *runContext) (any, error) {
	if rc.r.cfg.Diagnostics == nil {
		return nil, fmt.Errorf("this console runs no diagnostics to capture: %w", ErrInvalid)
	}
	inc, err := audit.IncidentGet(ctx, rc.r.pool, a.id)
	if err != nil {
		return nil, wrapNotFound(err, audit.ErrNotFound, "incident %d", a.id)
	}
	if inc.Status != audit.IncidentStatusOpen {
		return nil, fmt.Errorf("incident %d is closed; evidence goes into open incidents: %w", a.id, ErrInvalid)
	}
	return map[string]any{"incident": a.id, "panel": a.panel, "effect": "runs the panel's query now and stores its rows"}, nil
}

func (a *incidentCapture) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	res, ok := rc.r.cfg.Diagnostics.Panel(ctx, a.panel)
	if !ok {
		return nil, fmt.Errorf("no diagnostics panel %q: %w", a.panel, ErrNotFound)
	}
	data := map[string]any{"status": res.Status(), "rows": res.Rows, "took_ms": res.Took.Milliseconds()}
	if res.Err != nil {
		data["error"] = res.Err.Error()
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode evidence: %w", err)
	}
	title := a.panel
	step := "evidence"
	for _, c := range diagnostics.Catalog() {
		if c.Name == a.panel {
			title, step = c.Title, c.Step
		}
	}
	ev, err := audit.EvidenceCaptureTx(ctx, tx, audit.Evidence{IncidentID: a.id, Step: step, Title: title,
		SQLText: res.SQL, Data: raw, CapturedBy: rc.actor.Name})
	if err != nil {
		return nil, translateAudit(err)
	}
	rc.req.IncidentID = &a.id
	return map[string]any{"evidence_id": ev.ID, "incident": a.id, "panel": a.panel, "rows": len(res.Rows), "status": res.Status()}, nil
}

// translateAudit maps the audit package's errors to the Runner's.
func translateAudit(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, audit.ErrNotFound):
		return fmt.Errorf("%v: %w", err, ErrNotFound)
	case errors.Is(err, audit.ErrInvalid):
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	return err
}

var incidentIDParam = Param{Name: "id", Type: ParamInt, Required: true, Description: "The incident's id."}

func init() {
	register(definition{
		spec: Spec{
			Name: "incident.open", Title: "Open an incident", Role: RoleOperator, Risk: RiskLow,
			Description: "Opens an incident: evidence captured from runbook panels and actions taken while it is open are linked to it, and it exports as Markdown for the post-mortem.",
			Params: []Param{
				{Name: "title", Type: ParamString, Required: true, Description: "What is wrong, in a line."},
				{Name: "impact", Type: ParamString, Description: "Who is affected and how badly."},
				{Name: "slo", Type: ParamString, Description: "The objective at stake."},
				{Name: "window_start", Type: ParamTime, Description: "When it started (RFC 3339), if before now."},
			},
		},
		parse: func(p params) (plan, error) {
			title, err := p.str("title")
			if err != nil {
				return nil, err
			}
			if strings.TrimSpace(title) == "" {
				return nil, invalid("title", "an incident needs a title")
			}
			impact, _ := p.str("impact")
			slo, _ := p.str("slo")
			start, err := p.time("window_start")
			if err != nil {
				return nil, err
			}
			return &incidentOpen{p: audit.IncidentOpenParams{Title: strings.TrimSpace(title), Impact: impact, SLO: slo, WindowStart: start}}, nil
		},
	})
	register(definition{
		spec: Spec{
			Name: "incident.close", Title: "Close an incident", Role: RoleOperator, Risk: RiskLow,
			Description: "Closes an open incident with a summary for the post-mortem: trigger, amplifiers, mitigation, permanent fix.",
			Params:      []Param{incidentIDParam, {Name: "summary", Type: ParamString, Description: "The summary."}},
		},
		parse: func(p params) (plan, error) {
			id, err := p.int("id")
			if err == nil {
				err = requirePositive("id", id)
			}
			if err != nil {
				return nil, err
			}
			summary, _ := p.str("summary")
			return &incidentClose{id: *id, summary: summary}, nil
		},
	})
	register(definition{
		spec: Spec{
			Name: "incident.capture", Title: "Capture evidence into an incident", Role: RoleOperator, Risk: RiskLow,
			Description: "Runs one diagnostics panel now and stores its rows and SQL in the incident's timeline.",
			Params: []Param{
				{Name: "incident_id", Type: ParamInt, Required: true, Description: "The open incident."},
				{Name: "panel", Type: ParamString, Required: true, Description: "The diagnostics panel, e.g. blocking_tree."},
			},
		},
		parse: func(p params) (plan, error) {
			id, err := p.int("incident_id")
			if err == nil {
				err = requirePositive("incident_id", id)
			}
			if err != nil {
				return nil, err
			}
			panel, err := p.str("panel")
			if err != nil {
				return nil, err
			}
			return &incidentCapture{id: *id, panel: panel}, nil
		},
	})
}
