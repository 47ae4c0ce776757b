package queues

import (
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

// OutboxStatsResult is the outbox backlog at a glance (RB-H): counts by
// state, expired leases, events the broker accepted but the relay has not
// marked (each may be delivered twice), and the age of the oldest pending
// event.
type OutboxStatsResult struct {
	Pending       int64 `db:"pending" json:"pending"`
	Due           int64 `db:"due" json:"due"`
	Inflight      int64 `db:"inflight" json:"inflight"`
	ExpiredLeases int64 `db:"expired_leases" json:"expired_leases"`
	Dead          int64 `db:"dead" json:"dead"`
	// RowsEstimate is the planner's estimate of all rows (published
	// included); published history is not counted exactly.
	RowsEstimate         int64   `db:"rows_estimate" json:"rows_estimate"`
	AcceptedUnmarked     int64   `db:"accepted_unmarked" json:"accepted_unmarked"`
	OldestPendingSeconds float64 `db:"oldest_pending_seconds" json:"oldest_pending_seconds"`
}

// OutboxStats reads the outbox backlog from the partial indexes.
func OutboxStats(ctx context.Context, db DBTX) (OutboxStatsResult, error) {
	s, err := sqlset.One[OutboxStatsResult](ctx, db, sqlText("outbox_stats"))
	if err != nil {
		return OutboxStatsResult{}, fmt.Errorf("outbox stats: %w", err)
	}
	return s, nil
}

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
