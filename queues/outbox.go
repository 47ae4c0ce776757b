package queues

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pgconsole/console/internal/sqlset"
)

// OutboxChannel is the LISTEN/NOTIFY channel that wakes relays. A
// notification is only a hint; the outbox_events table is the truth.
const OutboxChannel = "queues_outbox"

// Outbox event states, as stored in outbox_events.state.
const (
	OutboxPending   = "pending"
	OutboxInflight  = "inflight"
	OutboxPublished = "published"
	OutboxDead      = "dead"
)

// OutboxEvent is one event written to the outbox by EnqueueEventTx. Payload
// should carry the facts at the time of the event (not a pointer to current
// state), because consumers may read it long after.
type OutboxEvent struct {
	// Topic routes the event: the NATS subject suffix, or the webhook's topic
	// header. Required.
	Topic         string
	AggregateType string
	AggregateID   string
	// EventType names what happened ("order.created"). Required.
	EventType string
	Headers   map[string]string
	// Payload is marshalled to JSON; json.RawMessage and []byte are stored
	// as given (they must hold valid JSON). nil stores JSON null.
	Payload any
	// MaxAttempts caps publish attempts before the event goes dead; 0 means
	// the table default (16).
	MaxAttempts int
}

// OutboxMessage is a claimed event handed to a Publisher. Its ID is stable
// across republishes, so brokers and consumers dedupe on EventID.
type OutboxMessage struct {
	ID            int64             `db:"id"`
	Topic         string            `db:"topic"`
	AggregateType string            `db:"aggregate_type"`
	AggregateID   string            `db:"aggregate_id"`
	EventType     string            `db:"event_type"`
	Headers       map[string]string `db:"headers"`
	Payload       json.RawMessage   `db:"payload"`
	Attempt       int               `db:"attempts"`
	MaxAttempts   int               `db:"max_attempts"`
	Generation    int64             `db:"lease_generation"`
	CreatedAt     time.Time         `db:"created_at"`
}

// EventID is the event's identity as brokers and consumers see it (the
// Nats-Msg-Id and Idempotency-Key headers, the inbox event_id).
func (m *OutboxMessage) EventID() string { return strconv.FormatInt(m.ID, 10) }

// EnqueueEventTx writes one outbox event in the caller's transaction and
// returns its id. The event becomes visible to relays when the caller
// commits, and vanishes with a rollback, so the business change and the event
// are atomic. Relays are woken by at most one notification per transaction.
func EnqueueEventTx(ctx context.Context, db DBTX, e OutboxEvent) (int64, error) {
	ids, err := EnqueueEventsTx(ctx, db, []OutboxEvent{e})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueEventsTx writes several outbox events in one statement in the
// caller's transaction and returns their ids in order.
func EnqueueEventsTx(ctx context.Context, db DBTX, events []OutboxEvent) ([]int64, error) {
	if len(events) == 0 {
		return nil, nil
	}
	n := len(events)
	topics := make([]string, n)
	aggTypes := make([]string, n)
	aggIDs := make([]string, n)
	types := make([]string, n)
	headers := make([][]byte, n)
	payloads := make([][]byte, n)
	maxAttempts := make([]*int32, n)
	for i, e := range events {
		if e.Topic == "" || e.EventType == "" {
			return nil, fmt.Errorf("outbox event %d: topic and event type are required", i)
		}
		topics[i], aggTypes[i], aggIDs[i], types[i] = e.Topic, e.AggregateType, e.AggregateID, e.EventType
		h := e.Headers
		if h == nil {
			h = map[string]string{}
		}
		hb, err := json.Marshal(h)
		if err != nil {
			return nil, fmt.Errorf("outbox event %d headers: %w", i, err)
		}
		headers[i] = hb
		pb, err := marshalPayload(e.Payload)
		if err != nil {
			return nil, fmt.Errorf("outbox event %d payload: %w", i, err)
		}
		payloads[i] = pb
		if e.MaxAttempts > 0 {
			v := int32(e.MaxAttempts)
			maxAttempts[i] = &v
		}
	}
	return collectIDs(ctx, db, "outbox_insert", "insert outbox events", topics, aggTypes, aggIDs, types, headers, payloads, maxAttempts)
}

func marshalPayload(p any) ([]byte, error) {
	switch v := p.(type) {
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("invalid JSON")
		}
		return v, nil
	case []byte:
		if !json.Valid(v) {
			return nil, errors.New("invalid JSON")
		}
		return v, nil
	default:
		return json.Marshal(p)
	}
}

// OutboxRecord is an outbox event as the console shows it: every column.
type OutboxRecord struct {
	ID              int64             `db:"id" json:"id"`
	Topic           string            `db:"topic" json:"topic"`
	AggregateType   string            `db:"aggregate_type" json:"aggregate_type"`
	AggregateID     string            `db:"aggregate_id" json:"aggregate_id"`
	EventType       string            `db:"event_type" json:"event_type"`
	Headers         map[string]string `db:"headers" json:"headers"`
	Payload         json.RawMessage   `db:"payload" json:"payload"`
	State           string            `db:"state" json:"state"`
	AvailableAt     time.Time         `db:"available_at" json:"available_at"`
	LeaseOwner      *string           `db:"lease_owner" json:"lease_owner,omitempty"`
	LeaseUntil      *time.Time        `db:"lease_until" json:"lease_until,omitempty"`
	LeaseGeneration int64             `db:"lease_generation" json:"lease_generation"`
	Attempts        int               `db:"attempts" json:"attempts"`
	MaxAttempts     int               `db:"max_attempts" json:"max_attempts"`
	LastError       *string           `db:"last_error" json:"last_error,omitempty"`
	CreatedAt       time.Time         `db:"created_at" json:"created_at"`
	AcceptedAt      *time.Time        `db:"accepted_at" json:"accepted_at,omitempty"`
	PublishedAt     *time.Time        `db:"published_at" json:"published_at,omitempty"`
	DeadAt          *time.Time        `db:"dead_at" json:"dead_at,omitempty"`
	PublishCount    int               `db:"publish_count" json:"publish_count"`
}

// OutboxEventGet returns one outbox event, or ErrNotFound.
func OutboxEventGet(ctx context.Context, db DBTX, id int64) (*OutboxRecord, error) {
	return collectOne[OutboxRecord](ctx, db, "outbox_get",
		fmt.Sprintf("get outbox event %d", id), fmt.Sprintf("outbox event %d", id), id)
}

// OutboxListParams filters and pages OutboxList. BeforeID is the keyset
// cursor: the smallest id of the previous page (0 for the first page).
type OutboxListParams struct {
	State    string
	Topic    string
	BeforeID int64
	// Limit defaults to 50 and is capped at 1000.
	Limit int
}

// OutboxList returns a page of outbox events, newest first. The next page
// passes the last returned id as BeforeID.
func OutboxList(ctx context.Context, db DBTX, p OutboxListParams) ([]OutboxRecord, error) {
	return collectRows[OutboxRecord](ctx, db, "outbox_list", "list outbox events", p.BeforeID, p.State, p.Topic, min(limitOr(p.Limit, 50), 1000))
}

// OutboxStuck returns the oldest undelivered events (pending or in
// flight), oldest first, at most limit (capped at 1000): the head of the
// backlog.
func OutboxStuck(ctx context.Context, db DBTX, limit int) ([]OutboxRecord, error) {
	return collectRows[OutboxRecord](ctx, db, "outbox_stuck", "list undelivered outbox events", min(max(limit, 1), 1000))
}

// OutboxStat is the outbox relay's backlog (RB-H), as the console's
// pages, findings, metrics and flight recorder all read it: the same row
// live and recorded. Its JSON names are those of the recorded samples, so
// a sample of any age decodes into it.
type OutboxStat struct {
	// Pending counts the pending events due now, PendingLater those
	// waiting for a retry. Every count stops at CountCap.
	Pending      int64 `db:"pending" json:"pending"`
	PendingLater int64 `db:"pending_later" json:"pending_later"`
	// CountCap is where the counts stopped; zero in samples recorded
	// before it was kept, which were counted to DefaultCountCap.
	CountCap int64 `db:"count_cap" json:"count_cap,omitempty"`
	// OldestPendingAt is the creation of the oldest undelivered event,
	// pending or in flight (nil when none is), OldestPendingSeconds its
	// age: an event failing for 30 minutes is 30 minutes old, whatever
	// its next retry.
	OldestPendingAt      *time.Time `db:"oldest_pending_at" json:"oldest_pending_at"`
	OldestPendingSeconds float64    `db:"oldest_pending_seconds" json:"oldest_pending_seconds"`
	Inflight             int64      `db:"inflight" json:"inflight"`
	ExpiredLeases        int64      `db:"expired_leases" json:"expired_leases"`
	Dead                 int64      `db:"dead" json:"dead"`
	LastDeadAt           *time.Time `db:"last_dead_at" json:"last_dead_at"`
	// RowsEstimate is the planner's estimate of all rows (published
	// included); published history is not counted exactly. Zero in
	// samples recorded before it was kept.
	RowsEstimate int64 `db:"rows_estimate" json:"rows_estimate,omitempty"`
	RelayPaused  bool  `db:"relay_paused" json:"relay_paused"`
	// AcceptedUnmarked counts the undelivered events the broker accepted
	// (accepted_at set) that the relay has not marked published: its mark
	// failed, or it died between recording the acceptance and the mark.
	// Each will be published again. OldestAcceptedAt is the earliest
	// acceptance among them, AcceptedUnmarkedIDs the ten oldest ids.
	AcceptedUnmarked    int64      `db:"accepted_unmarked" json:"accepted_unmarked"`
	OldestAcceptedAt    *time.Time `db:"oldest_accepted_at" json:"oldest_accepted_at"`
	AcceptedUnmarkedIDs []int64    `db:"accepted_unmarked_ids" json:"accepted_unmarked_ids"`
}

// PendingTotal is every pending event, due now or waiting for a retry.
func (o OutboxStat) PendingTotal() int64 { return o.Pending + o.PendingLater }

// Capped reports whether count n stopped at the cap the stat was read
// with, so it means "at least n".
func (o OutboxStat) Capped(n int64) bool { return n >= cmp.Or(o.CountCap, DefaultCountCap) }

// OutboxHealth reads the outbox backlog through its partial indexes
// (outbox_health.sql); counts stop at countCap (zero means
// DefaultCountCap).
func OutboxHealth(ctx context.Context, db DBTX, countCap int64) (OutboxStat, error) {
	s, err := sqlset.One[OutboxStat](ctx, db, sqlText("outbox_health"), cmp.Or(max(countCap, 0), DefaultCountCap))
	if err != nil {
		return OutboxStat{}, fmt.Errorf("outbox health: %w", err)
	}
	return s, nil
}

// OutboxHealthSQL is the statement OutboxHealth runs.
func OutboxHealthSQL() string { return sqlText("outbox_health") }

// OutboxRequeueParams picks dead events to requeue: the given IDs, or when
// IDs is empty every dead event of Topic (all topics when empty). Limit
// defaults to 1000.
type OutboxRequeueParams struct {
	IDs   []int64
	Topic string
	Limit int
}

// OutboxRequeueTx moves dead events back to pending with a fresh attempt
// budget, in the caller's transaction (the action commits it with its audit
// row), and returns the ids it requeued. Ids that are not dead are skipped.
func OutboxRequeueTx(ctx context.Context, db DBTX, p OutboxRequeueParams) ([]int64, error) {
	ids := p.IDs
	if ids == nil {
		ids = []int64{}
	}
	return collectIDs(ctx, db, "outbox_requeue", "requeue dead outbox events", ids, p.Topic, limitOr(p.Limit, 1000))
}

// RelaySettings are the fleet-wide relay controls an operator changes from
// the console. A nil BatchSize or RatePerSecond means each relay's own
// configuration applies.
type RelaySettings struct {
	Paused        bool      `db:"paused" json:"paused"`
	BatchSize     *int      `db:"batch_size" json:"batch_size,omitempty"`
	RatePerSecond *float64  `db:"rate_per_second" json:"rate_per_second,omitempty"`
	UpdatedBy     *string   `db:"updated_by" json:"updated_by,omitempty"`
	UpdatedAt     time.Time `db:"updated_at" json:"updated_at"`
}

// RelaySettingsGet reads the relay settings.
func RelaySettingsGet(ctx context.Context, db DBTX) (RelaySettings, error) {
	s, err := sqlset.One[RelaySettings](ctx, db, sqlText("relay_settings_get"))
	if err != nil {
		return RelaySettings{}, fmt.Errorf("read relay settings: %w", err)
	}
	return s, nil
}

// RelaySettingsSetTx replaces the relay settings in the caller's transaction
// and returns what was stored. Every relay obeys within one poll interval of
// the commit (at once for a resume, through the wake-up notification).
func RelaySettingsSetTx(ctx context.Context, db DBTX, s RelaySettings) (RelaySettings, error) {
	if s.BatchSize != nil && *s.BatchSize <= 0 {
		return RelaySettings{}, fmt.Errorf("relay batch size %d: must be positive", *s.BatchSize)
	}
	if s.RatePerSecond != nil && *s.RatePerSecond <= 0 {
		return RelaySettings{}, fmt.Errorf("relay rate %v/s: must be positive", *s.RatePerSecond)
	}
	out, err := sqlset.One[RelaySettings](ctx, db, sqlText("relay_settings_set"), s.Paused, s.BatchSize, s.RatePerSecond, s.UpdatedBy)
	if err != nil {
		return RelaySettings{}, fmt.Errorf("set relay settings: %w", err)
	}
	return out, nil
}

// RelaySettingsLockTx locks the relay settings row until tx ends, so two
// operators changing the relay apply their changes one after the other:
// lock, then read with RelaySettingsGet, then write.
func RelaySettingsLockTx(ctx context.Context, tx DBTX) error {
	if _, err := tx.Exec(ctx, sqlText("relay_settings_lock")); err != nil {
		return fmt.Errorf("lock relay settings: %w", err)
	}
	return nil
}

// OutboxDeadCount counts the dead outbox events an OutboxRequeueTx of the
// same ids and topic would consider (before its limit): the listed ids, or
// when ids is empty every dead event of topic (all topics when "").
func OutboxDeadCount(ctx context.Context, db DBTX, ids []int64, topic string) (int64, error) {
	if ids == nil {
		ids = []int64{}
	}
	var n int64
	if err := db.QueryRow(ctx, sqlText("outbox_dead_count"), ids, topic).Scan(&n); err != nil {
		return 0, fmt.Errorf("count dead outbox events: %w", err)
	}
	return n, nil
}
