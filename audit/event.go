package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/sqlset"
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
// (nil is stored as {}); ID, Seq, At, PrevHash, Hash and HashAlg are set
// when the event is recorded and ignored by RecordTx.
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
	HashAlg    string          `db:"hash_alg" json:"hash_alg"`
}

// Bounds on what one event stores. Text beyond a bound is cut with a
// marker (an audit row must still be written for an over-long reason); JSON
// documents beyond theirs are refused, as they cannot be cut and stay JSON.
const (
	MaxTextLength  = 4096     // actor, role, action, target, reason, error
	MaxParamsBytes = 64 << 10 // params
	MaxResultBytes = 1 << 20  // preview and result
)

// RecordTx appends e to the audit trail and returns its id and the chain
// head it moved the trail to. Run it in the
// transaction that made the change so both commit or neither does; on a
// pool or connection it opens a transaction of its own. It locks the chain
// head until that transaction ends, so keep the insert last and the
// transaction short. Use READ COMMITTED (the default): under REPEATABLE READ
// or SERIALIZABLE a concurrent writer makes the insert fail with a
// serialization error the caller must retry.
//
// The hash is computed here, not in the database: sha256, or HMAC-SHA256
// under the key given to SetKey. Text fields longer than MaxTextLength are
// cut; params over MaxParamsBytes or preview or result over MaxResultBytes
// are ErrInvalid.
func RecordTx(ctx context.Context, db DBTX, e Event) (Recorded, error) {
	if e.Actor == "" || e.Role == "" || e.Action == "" {
		return Recorded{}, fmt.Errorf("audit event needs actor, role and action: %w", ErrInvalid)
	}
	if !e.Outcome.Valid() {
		return Recorded{}, fmt.Errorf("audit outcome %q: %w", e.Outcome, ErrInvalid)
	}
	if len(e.Params) > MaxParamsBytes {
		return Recorded{}, fmt.Errorf("audit params are %d bytes, more than %d: %w", len(e.Params), MaxParamsBytes, ErrInvalid)
	}
	if len(e.Preview) > MaxResultBytes || len(e.Result) > MaxResultBytes {
		return Recorded{}, fmt.Errorf("audit preview or result is larger than %d bytes: %w", MaxResultBytes, ErrInvalid)
	}
	if _, isTx := db.(pgx.Tx); !isTx {
		if b, ok := db.(interface {
			Begin(context.Context) (pgx.Tx, error)
		}); ok {
			var rec Recorded
			err := pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
				var err error
				rec, err = RecordTx(ctx, tx, e)
				return err
			})
			return rec, err
		}
	}
	ce := chainEvent{
		Actor: clipText(e.Actor), Role: clipText(e.Role), Action: clipText(e.Action), Target: clipText(e.Target),
		Reason: clipText(e.Reason), Outcome: string(e.Outcome), Error: clipText(e.Error), IncidentID: e.IncidentID,
	}
	err := db.QueryRow(ctx, sqlText("chain_lock"), jsonObject(e.Params), jsonObject(e.Preview), jsonObject(e.Result)).
		Scan(&ce.Seq, &ce.PrevHash, &ce.ID, &ce.At, &ce.Params, &ce.Preview, &ce.Result)
	if err != nil {
		return Recorded{}, fmt.Errorf("record audit event %s: lock the chain head: %w", e.Action, err)
	}
	ce.Seq++
	ce.Alg = HashSHA256
	key := currentKey()
	if key != nil {
		ce.Alg = HashHMAC
	}
	if ce.Hash, err = ce.expectedHash(key); err != nil {
		return Recorded{}, fmt.Errorf("record audit event %s: %w", e.Action, err)
	}
	_, err = db.Exec(ctx, sqlText("record"), ce.ID, ce.Seq, ce.At, ce.Actor, ce.Role, ce.Action, ce.Target,
		ce.Params, ce.Reason, ce.Preview, ce.Result, ce.Outcome, ce.Error, ce.IncidentID, ce.PrevHash, ce.Hash, ce.Alg)
	if err != nil {
		return Recorded{}, fmt.Errorf("record audit event %s: %w", e.Action, err)
	}
	return Recorded{ID: ce.ID, Head: Head{Seq: ce.Seq, Hash: ce.Hash}}, nil
}

// clipText cuts s to MaxTextLength bytes on a rune boundary, marking the
// cut.
func clipText(s string) string {
	const marker = " …(cut)"
	if len(s) <= MaxTextLength {
		return s
	}
	cut := MaxTextLength - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
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
	events, err := sqlset.All[Event](ctx, db, sqlText("list"),
		p.Actor, p.Action, p.Target, p.Outcome, p.IncidentID, p.BeforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	return events, nil
}

// Get returns one event by id, or ErrNotFound.
func Get(ctx context.Context, db DBTX, id int64) (*Event, error) {
	e, err := sqlset.One[Event](ctx, db, sqlText("get"), id)
	if err != nil {
		return nil, fmt.Errorf("get audit event %d: %w", id, notFound(err, "audit event"))
	}
	return &e, nil
}
