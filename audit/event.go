package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Outcome is how an audited attempt ended.
type Outcome string

// The three outcomes an event can record. A refused attempt was stopped
// before it changed anything (role, reason, validation, a guard); a failed one
// was tried and rolled back.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeRefused   Outcome = "refused"
)

// Valid reports whether o is one of the three outcomes.
func (o Outcome) Valid() bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeRefused
}

// Event is one audited attempt. Params, Preview and Result are JSON objects
// (nil is stored as {}); ID, Seq, At, PrevHash and Hash are set by the
// database and ignored by RecordTx.
type Event struct {
	ID         int64           `db:"id" json:"id"`
	Seq        int64           `db:"seq" json:"seq"`
	At         time.Time       `db:"at" json:"at"`
	Actor      string          `db:"actor" json:"actor"`
	Role       string          `db:"role" json:"role"`
	Action     string          `db:"action" json:"action"`
	Target     string          `db:"target" json:"target"`
	Params     json.RawMessage `db:"params" json:"params"`
	Reason     string          `db:"reason" json:"reason"`
	Preview    json.RawMessage `db:"preview" json:"preview"`
	Result     json.RawMessage `db:"result" json:"result"`
	Outcome    Outcome         `db:"outcome" json:"outcome"`
	Error      string          `db:"error" json:"error,omitempty"`
	IncidentID *int64          `db:"incident_id" json:"incident_id,omitempty"`
	PrevHash   []byte          `db:"prev_hash" json:"prev_hash"`
	Hash       []byte          `db:"hash" json:"hash"`
}

// RecordTx appends e to the audit trail and returns its id. Run it in the
// transaction that made the change so both commit or neither does; the chain
// trigger holds the chain head's row lock until that transaction ends, so
// keep the insert last and the transaction short. Use READ COMMITTED (the
// default): under REPEATABLE READ or SERIALIZABLE a concurrent writer makes
// the insert fail with a serialization error the caller must retry.
func RecordTx(ctx context.Context, db DBTX, e Event) (int64, error) {
	if e.Actor == "" || e.Role == "" || e.Action == "" {
		return 0, fmt.Errorf("audit event needs actor, role and action: %w", ErrInvalid)
	}
	if !e.Outcome.Valid() {
		return 0, fmt.Errorf("audit outcome %q: %w", e.Outcome, ErrInvalid)
	}
	var id int64
	err := db.QueryRow(ctx, sqlText("record"),
		e.Actor, e.Role, e.Action, e.Target, jsonObject(e.Params), e.Reason,
		jsonObject(e.Preview), jsonObject(e.Result), string(e.Outcome), e.Error, e.IncidentID,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record audit event %s: %w", e.Action, err)
	}
	return id, nil
}

// jsonObject turns an empty document into {} so the NOT NULL columns always
// hold a value and the canonical form does not depend on nil versus empty.
func jsonObject(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "{}"
	}
	return string(raw)
}

// ListParams filters List. Empty strings and a nil IncidentID match
// everything; BeforeID pages backwards (pass the smallest id of the previous
// page); Limit defaults to 50 and is capped at 500.
type ListParams struct {
	Actor      string
	Action     string
	Target     string
	Outcome    string
	IncidentID *int64
	BeforeID   int64
	Limit      int
}

// List returns events matching p, newest first.
func List(ctx context.Context, db DBTX, p ListParams) ([]Event, error) {
	if p.Outcome != "" && !Outcome(p.Outcome).Valid() {
		return nil, fmt.Errorf("outcome %q is not succeeded, failed or refused: %w", p.Outcome, ErrInvalid)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 500 {
		limit = 500
	}
	rows, err := db.Query(ctx, sqlText("list"),
		p.Actor, p.Action, p.Target, p.Outcome, p.IncidentID, p.BeforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	return events, nil
}

// Get returns one event by id, or ErrNotFound.
func Get(ctx context.Context, db DBTX, id int64) (*Event, error) {
	rows, err := db.Query(ctx, sqlText("get"), id)
	if err != nil {
		return nil, fmt.Errorf("get audit event %d: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("get audit event %d: %w", id, notFound(err, "audit event"))
	}
	return e, nil
}
