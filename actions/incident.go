package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
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

func (IncidentView) actionResult() {}

// IncidentOpenPreview is the incident incident.open will open.
type IncidentOpenPreview struct {
	Title       string     `json:"title"`
	Impact      string     `json:"impact"`
	SLO         string     `json:"slo"`
	WindowStart *time.Time `json:"window_start"`
	Effect      string     `json:"effect"`
}

// IncidentClosePreview is the incident incident.close will close, and the
// summary it will keep.
type IncidentClosePreview struct {
	Incident IncidentView `json:"incident"`
	Summary  string       `json:"summary"`
}

// CapturePreview is the panel incident.capture will run for an incident.
type CapturePreview struct {
	Incident int64  `json:"incident"`
	Panel    string `json:"panel"`
	Effect   string `json:"effect"`
}

// CaptureResult is the evidence stored: how many rows the panel returned
// and its status.
type CaptureResult struct {
	EvidenceID int64  `json:"evidence_id"`
	Incident   int64  `json:"incident"`
	Panel      string `json:"panel"`
	Rows       int    `json:"rows"`
	Status     string `json:"status"`
}

// NoteView is a note added to an incident's timeline.
type NoteView struct {
	Incident int64  `json:"incident"`
	Text     string `json:"text"`
}

func (NoteView) actionPreview() {}
func (NoteView) actionResult()  {}

func (IncidentOpenPreview) actionPreview()  {}
func (IncidentClosePreview) actionPreview() {}
func (CapturePreview) actionPreview()       {}
func (CaptureResult) actionResult()         {}

type incidentOpening struct{ p audit.IncidentOpenParams }

func (a *incidentOpening) target() string { return "incident:new" }

func (a *incidentOpening) preview(context.Context, *runContext) (IncidentOpenPreview, error) {
	return IncidentOpenPreview{Title: a.p.Title, Impact: a.p.Impact, SLO: a.p.SLO, WindowStart: a.p.WindowStart,
		Effect: "opens an incident; evidence captured and actions taken while it is open are linked to it"}, nil
}

func (a *incidentOpening) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ IncidentOpenPreview) (IncidentView, error) {
	p := a.p
	p.OpenedBy = rc.actor.Name
	inc, err := audit.IncidentOpen(ctx, tx, p)
	if err != nil {
		return IncidentView{}, err
	}
	rc.req.IncidentID = &inc.ID // the audit event belongs to the new incident
	return IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, nil
}

func (a *incidentOpening) sentence(p IncidentOpenPreview) string {
	return fmt.Sprintf("Open incident %q; evidence and actions taken while it is open are linked to it", p.Title)
}

func (a *incidentOpening) done(r IncidentView) string {
	return fmt.Sprintf("Opened incident #%d %q", r.ID, r.Title)
}

// state is empty: opening an incident depends on nothing that can change.
func (a *incidentOpening) state(IncidentOpenPreview) any { return nil }

type incidentClosing struct {
	id      int64
	summary string
}

func (a *incidentClosing) target() string { return "incident:" + strconv.FormatInt(a.id, 10) }

func (a *incidentClosing) preview(ctx context.Context, rc *runContext) (IncidentClosePreview, error) {
	inc, err := openIncident(ctx, rc, a.id, "is already closed")
	if err != nil {
		return IncidentClosePreview{}, err
	}
	return IncidentClosePreview{Incident: IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, Summary: a.summary}, nil
}

func (a *incidentClosing) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ IncidentClosePreview) (IncidentView, error) {
	inc, err := audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: a.id, ClosedBy: rc.actor.Name, Summary: a.summary})
	if err != nil {
		return IncidentView{}, translateAudit(err)
	}
	rc.req.IncidentID = &inc.ID
	return IncidentView{ID: inc.ID, Title: inc.Title, Status: inc.Status}, nil
}

func (a *incidentClosing) sentence(p IncidentClosePreview) string {
	return fmt.Sprintf("Close incident #%d %q", p.Incident.ID, p.Incident.Title)
}

func (a *incidentClosing) done(r IncidentView) string {
	return fmt.Sprintf("Incident #%d %q is %s", r.ID, r.Title, r.Status)
}

func (a *incidentClosing) state(p IncidentClosePreview) any { return p.Incident }

// evidenceCapture runs one diagnostics panel and stores what it returned,
// with the SQL that ran, in the incident's timeline. The capture is taken at
// execution, so the evidence is what the database said at that moment.
type evidenceCapture struct {
	id    int64
	panel string
}

func (a *evidenceCapture) target() string { return "incident:" + strconv.FormatInt(a.id, 10) }

func (a *evidenceCapture) preview(ctx context.Context, rc *runContext) (CapturePreview, error) {
	if rc.r.cfg.Diagnostics == nil {
		return CapturePreview{}, fmt.Errorf("this console runs no diagnostics to capture: %w", ErrInvalid)
	}
	if _, err := openIncident(ctx, rc, a.id, "is closed; evidence goes into open incidents"); err != nil {
		return CapturePreview{}, err
	}
	return CapturePreview{Incident: a.id, Panel: a.panel, Effect: "runs the panel's query now and stores its rows"}, nil
}

func (a *evidenceCapture) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ CapturePreview) (CaptureResult, error) {
	res, ok := rc.r.cfg.Diagnostics.Panel(ctx, a.panel)
	if !ok {
		return CaptureResult{}, fmt.Errorf("no diagnostics panel %q: %w", a.panel, ErrNotFound)
	}
	// at is when the rows were read: a panel's result is shared, so it
	// may be a few seconds older than the capture.
	data := map[string]any{"status": res.Status(), "rows": res.Rows, "took_ms": res.Took.Milliseconds(), "at": res.At}
	if res.Err != nil {
		data["error"] = res.Err.Error()
	}
	title := a.panel
	step := "evidence"
	for _, c := range diagnostics.Catalog() {
		if c.Name == a.panel {
			title, step = c.Title, c.Step
			// The panel's columns, in its order: the document's keys
			// are not kept in order.
			var names []string
			for _, col := range c.Columns {
				names = append(names, col.Name)
			}
			data["columns"] = names
		}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return CaptureResult{}, fmt.Errorf("encode evidence: %w", err)
	}
	ev, err := audit.EvidenceCaptureTx(ctx, tx, audit.Evidence{IncidentID: a.id, Step: step, Title: title,
		SQLText: res.SQL, Data: raw, CapturedBy: rc.actor.Name})
	if err != nil {
		return CaptureResult{}, translateAudit(err)
	}
	rc.req.IncidentID = &a.id
	return CaptureResult{EvidenceID: ev.ID, Incident: a.id, Panel: a.panel, Rows: len(res.Rows), Status: res.Status()}, nil
}

func (a *evidenceCapture) sentence(p CapturePreview) string {
	return fmt.Sprintf("Run panel %s now and store its rows as evidence in incident #%d", code(p.Panel), p.Incident)
}

func (a *evidenceCapture) done(r CaptureResult) string {
	return fmt.Sprintf("Stored %s of panel %s (%s) as evidence #%d in incident #%d",
		counted(r.Rows, "row", "rows"), code(r.Panel), r.Status, r.EvidenceID, r.Incident)
}

func (a *evidenceCapture) state(p CapturePreview) any { return p }

// openIncident reads incident id, refusing one that does not exist or is
// closed (closed says why that matters).
func openIncident(ctx context.Context, rc *runContext, id int64, closed string) (*audit.Incident, error) {
	inc, err := audit.IncidentGet(ctx, rc.r.pool, id)
	if err != nil {
		return nil, wrapNotFound(err, audit.ErrNotFound, "incident %d", id)
	}
	if inc.Status != audit.IncidentStatusOpen {
		return nil, fmt.Errorf("incident %d %s: %w", id, closed, ErrInvalid)
	}
	return inc, nil
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

// incidentOpenParams are the parameters of incident.open.
type incidentOpenParams struct {
	Title, Impact, SLO string
	WindowStart        *time.Time
}

func (p *incidentOpenParams) fields() []field {
	return []field{
		stringParam(&p.Title, "title", "What is wrong, in a line.").required(),
		stringParam(&p.Impact, "impact", "Who is affected and how badly."),
		stringParam(&p.SLO, "slo", "The objective at stake."),
		timeParam(&p.WindowStart, "window_start", "When it started (RFC 3339), if before now.").notFuture(time.Now),
	}
}

var incidentOpen = action(Spec{
	Name: "incident.open", Title: "Open an incident", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Opens an incident: evidence captured from runbook panels and actions taken while it is open are linked to it, and it exports as Markdown for the post-mortem.",
}, func(p *incidentOpenParams) (plan[IncidentOpenPreview, IncidentView], error) {
	return &incidentOpening{p: audit.IncidentOpenParams{Title: p.Title, Impact: p.Impact, SLO: p.SLO, WindowStart: p.WindowStart}}, nil
})

// incidentCloseParams are the parameters of incident.close.
type incidentCloseParams struct {
	ID      int64
	Summary string
}

func (p *incidentCloseParams) fields() []field {
	return []field{
		intParam(&p.ID, "id", "The incident's id.").required(),
		stringParam(&p.Summary, "summary", "The summary."),
	}
}

var incidentClose = action(Spec{
	Name: "incident.close", Title: "Close an incident", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Closes an open incident with a summary for the post-mortem: trigger, amplifiers, mitigation, permanent fix.",
}, func(p *incidentCloseParams) (plan[IncidentClosePreview, IncidentView], error) {
	return &incidentClosing{id: p.ID, summary: p.Summary}, requirePositive("id", p.ID)
})

// captureParams are the parameters of incident.capture.
type captureParams struct {
	IncidentID int64
	Panel      string
}

func (p *captureParams) fields() []field {
	return []field{
		intParam(&p.IncidentID, "incident_id", "The open incident.").required(),
		stringParam(&p.Panel, "panel", "The diagnostics panel, e.g. blocking_tree.").required(),
	}
}

var incidentCapture = action(Spec{
	Name: "incident.capture", Title: "Capture evidence into an incident", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Runs one diagnostics panel now and stores its rows and SQL in the incident's timeline.",
}, func(p *captureParams) (plan[CapturePreview, CaptureResult], error) {
	return &evidenceCapture{id: p.IncidentID, panel: p.Panel}, requirePositive("incident_id", p.IncidentID)
})

// incidentNoting adds a free-text note to an incident's timeline: the
// audit event is the note (its reason is the text), so it is kept, ordered
// and exported like every other entry.
type incidentNoting struct {
	id   int64
	text string
}

func (a *incidentNoting) target() string { return "incident:" + strconv.FormatInt(a.id, 10) }

func (a *incidentNoting) preview(ctx context.Context, rc *runContext) (NoteView, error) {
	if _, err := audit.IncidentGet(ctx, rc.r.pool, a.id); err != nil {
		return NoteView{}, wrapNotFound(err, audit.ErrNotFound, "incident %d", a.id)
	}
	return NoteView{Incident: a.id, Text: a.text}, nil
}

func (a *incidentNoting) execute(_ context.Context, rc *runContext, _ pgx.Tx, p NoteView) (NoteView, error) {
	rc.req.IncidentID = &a.id
	return p, nil
}

func (a *incidentNoting) sentence(p NoteView) string {
	return fmt.Sprintf("Add a note to incident #%d", p.Incident)
}

func (a *incidentNoting) done(p NoteView) string {
	return fmt.Sprintf("Added a note to incident #%d", p.Incident)
}

func (a *incidentNoting) state(p NoteView) any { return p }

// noteParams are the parameters of incident.note.
type noteParams struct {
	IncidentID int64
	Text       string
}

func (p *noteParams) fields() []field {
	return []field{
		intParam(&p.IncidentID, "incident_id", "The incident.").required(),
		stringParam(&p.Text, "text", "The note: what was seen, tried or decided.").required(),
	}
}

var incidentNote = action(Spec{
	Name: "incident.note", Title: "Add a note to an incident", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Adds a free-text note to an incident's timeline (open or closed): what was seen, tried or decided, in the order it happened.",
}, func(p *noteParams) (plan[NoteView, NoteView], error) {
	return &incidentNoting{id: p.IncidentID, text: p.Text}, requirePositive("incident_id", p.IncidentID)
})
