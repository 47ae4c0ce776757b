package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/sqlset"
)

// Incident is an operator-declared incident: the window the post-mortem
// covers, who opened and closed it, and the impact and SLO in the operator's
// words.
type Incident struct {
	ID          int64      `db:"id" json:"id"`
	Title       string     `db:"title" json:"title"`
	Status      string     `db:"status" json:"status"`
	Impact      string     `db:"impact" json:"impact"`
	SLO         string     `db:"slo" json:"slo"`
	WindowStart time.Time  `db:"window_start" json:"window_start"`
	WindowEnd   *time.Time `db:"window_end" json:"window_end,omitempty"`
	OpenedBy    string     `db:"opened_by" json:"opened_by"`
	OpenedAt    time.Time  `db:"opened_at" json:"opened_at"`
	ClosedBy    *string    `db:"closed_by" json:"closed_by,omitempty"`
	ClosedAt    *time.Time `db:"closed_at" json:"closed_at,omitempty"`
	Summary     string     `db:"summary" json:"summary"`
}

// Incident statuses.
const (
	IncidentStatusOpen   = "open"
	IncidentStatusClosed = "closed"
)

// IncidentOpenParams are the fields of a new incident. Title and OpenedBy
// are required; a nil WindowStart means now (set it earlier when the
// incident began before anyone declared it).
type IncidentOpenParams struct {
	Title       string
	Impact      string
	SLO         string
	WindowStart *time.Time
	OpenedBy    string
}

// Bounds on the text of an incident, checked before anything is stored.
const (
	MaxIncidentTitle = 200   // title, and an evidence step's step and title
	MaxIncidentField = 4000  // impact, SLO
	MaxIncidentText  = 20000 // summary
)

// checkLength refuses s when it is longer than n bytes, naming the field.
func checkLength(field, s string, n int) error {
	if len(s) > n {
		return fmt.Errorf("the %s is %d bytes long; keep it under %d: %w", field, len(s), n, ErrInvalid)
	}
	return nil
}

// IncidentOpen creates an open incident and returns it. Fields longer than
// MaxIncidentTitle (title) or MaxIncidentField (impact, SLO) are ErrInvalid.
func IncidentOpen(ctx context.Context, db DBTX, p IncidentOpenParams) (*Incident, error) {
	p.Title = strings.TrimSpace(p.Title)
	if p.Title == "" {
		return nil, fmt.Errorf("an incident needs a title: %w", ErrInvalid)
	}
	for _, err := range []error{checkLength("title", p.Title, MaxIncidentTitle), checkLength("impact", p.Impact, MaxIncidentField),
		checkLength("SLO", p.SLO, MaxIncidentField), checkLength("operator name", p.OpenedBy, MaxIncidentTitle)} {
		if err != nil {
			return nil, err
		}
	}
	if p.OpenedBy == "" {
		return nil, fmt.Errorf("an incident needs the operator who opened it: %w", ErrInvalid)
	}
	inc, err := sqlset.One[Incident](ctx, db, sqlText("incident_open"), p.Title, p.Impact, p.SLO, p.WindowStart, p.OpenedBy)
	if err != nil {
		return nil, fmt.Errorf("open incident: %w", err)
	}
	return &inc, nil
}

// IncidentGet returns one incident, or ErrNotFound.
func IncidentGet(ctx context.Context, db DBTX, id int64) (*Incident, error) {
	inc, err := sqlset.One[Incident](ctx, db, sqlText("incident_get"), id)
	if err != nil {
		return nil, fmt.Errorf("get incident %d: %w", id, notFound(err, "incident"))
	}
	return &inc, nil
}

// IncidentListParams filters IncidentList: Status "" lists both; Limit
// defaults to 50.
type IncidentListParams struct {
	Status string
	Limit  int
}

// IncidentList returns incidents, newest first.
func IncidentList(ctx context.Context, db DBTX, p IncidentListParams) ([]Incident, error) {
	if p.Status != "" && p.Status != IncidentStatusOpen && p.Status != IncidentStatusClosed {
		return nil, fmt.Errorf("incident status %q is not open or closed: %w", p.Status, ErrInvalid)
	}
	if p.Limit <= 0 || p.Limit > 500 {
		p.Limit = 50
	}
	list, err := sqlset.All[Incident](ctx, db, sqlText("incident_list"), p.Status, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list incidents: %w", err)
	}
	return list, nil
}

// IncidentCloseParams close an incident: who, the summary for the
// post-mortem, and the end of the window (nil means now).
type IncidentCloseParams struct {
	ID        int64
	ClosedBy  string
	Summary   string
	WindowEnd *time.Time
}

// IncidentClose closes an open incident and returns it. Closing an incident
// that is already closed is ErrInvalid; an unknown id is ErrNotFound.
func IncidentClose(ctx context.Context, db DBTX, p IncidentCloseParams) (*Incident, error) {
	if p.ClosedBy == "" {
		return nil, fmt.Errorf("closing an incident needs the operator: %w", ErrInvalid)
	}
	if err := checkLength("summary", p.Summary, MaxIncidentText); err != nil {
		return nil, err
	}
	return oneOnOpenIncident[Incident](ctx, db, p.ID, fmt.Sprintf("close incident %d", p.ID), "is already closed",
		"incident_close", p.ID, p.ClosedBy, p.Summary, p.WindowEnd)
}

// oneOnOpenIncident runs the statement in sql/name.sql, which changes open
// incident id and returns one row, and collects that row. When no row comes
// back it says why: an unknown incident is ErrNotFound, a closed one
// ErrInvalid ("incident 7 " + closed); what names the change in any other
// error.
func oneOnOpenIncident[T any](ctx context.Context, db DBTX, id int64, what, closed, name string, args ...any) (*T, error) {
	rows, err := db.Query(ctx, sqlText(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[T])
	if err == nil {
		return out, nil
	}
	cur, gerr := IncidentGet(ctx, db, id)
	if gerr != nil {
		return nil, fmt.Errorf("%s: %w", what, gerr)
	}
	if cur.Status == IncidentStatusClosed {
		return nil, fmt.Errorf("incident %d %s: %w", id, closed, ErrInvalid)
	}
	return nil, fmt.Errorf("%s: %w", what, err)
}

// Evidence is one runbook step's output captured into an incident: the SQL
// that ran and what it returned, as JSON.
type Evidence struct {
	ID         int64           `db:"id" json:"id"`
	IncidentID int64           `db:"incident_id" json:"incident_id"`
	Step       string          `db:"step" json:"step"`
	Title      string          `db:"title" json:"title"`
	SQLText    string          `db:"sql_text" json:"sql_text"`
	Data       json.RawMessage `db:"data" json:"data"`
	CapturedBy string          `db:"captured_by" json:"captured_by"`
	CapturedAt time.Time       `db:"captured_at" json:"captured_at"`
}

// EvidenceCaptureTx stores e (ID and CapturedAt are ignored) in an open
// incident and returns the stored row. A closed incident refuses new
// evidence with ErrInvalid; an unknown one is ErrNotFound.
func EvidenceCaptureTx(ctx context.Context, db DBTX, e Evidence) (*Evidence, error) {
	if e.Step == "" || e.Title == "" || e.CapturedBy == "" {
		return nil, fmt.Errorf("evidence needs a step, a title and who captured it: %w", ErrInvalid)
	}
	if err := checkLength("step", e.Step, MaxIncidentTitle); err != nil {
		return nil, err
	}
	if err := checkLength("evidence title", e.Title, MaxIncidentTitle); err != nil {
		return nil, err
	}
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		return nil, fmt.Errorf("evidence data is not JSON: %w", ErrInvalid)
	}
	return oneOnOpenIncident[Evidence](ctx, db, e.IncidentID, "capture evidence", "is closed and takes no more evidence",
		"evidence_capture", e.IncidentID, e.Step, e.Title, e.SQLText, jsonAny(e.Data), e.CapturedBy)
}

// EvidenceList returns an incident's evidence in capture order.
func EvidenceList(ctx context.Context, db DBTX, incidentID int64) ([]Evidence, error) {
	list, err := sqlset.All[Evidence](ctx, db, sqlText("evidence_list"), incidentID)
	if err != nil {
		return nil, fmt.Errorf("list evidence of incident %d: %w", incidentID, err)
	}
	return list, nil
}

func jsonAny(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}
