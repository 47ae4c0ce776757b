package queues

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// InboxProcessTx applies an event once per consumer. In the caller's
// transaction it records (consumer, eventID) in consumer_inbox and, only if
// that row is new, runs fn with the same transaction, so the side effect and
// the record commit or roll back together. A redelivered event returns
// duplicate=true without calling fn; the caller commits and then acks the
// broker. A concurrent delivery of the same event waits for the first
// transaction and then reports a duplicate. An error from fn is returned as
// is and the caller must roll back. Never ack before the commit succeeded;
// when the commit's outcome is unknown, don't ack and let redelivery ask the
// inbox again.
func InboxProcessTx(ctx context.Context, tx pgx.Tx, consumer, eventID string, fn func(pgx.Tx) error) (duplicate bool, err error) {
	if consumer == "" || eventID == "" {
		return false, errors.New("inbox: consumer and event id are required")
	}
	tag, err := tx.Exec(ctx, sqlText("inbox_insert"), consumer, eventID)
	if err != nil {
		return false, fmt.Errorf("inbox record %s/%s: %w", consumer, eventID, err)
	}
	if tag.RowsAffected() == 0 {
		return true, nil
	}
	if err := fn(tx); err != nil {
		return false, err
	}
	return false, nil
}

// InboxEntry is one consumer's record of having applied an event.
type InboxEntry struct {
	Consumer    string    `db:"consumer_name" json:"consumer"`
	EventID     string    `db:"event_id" json:"event_id"`
	ProcessedAt time.Time `db:"processed_at" json:"processed_at"`
}

// InboxLookup returns which consumers applied eventID (empty when none),
// for correlating one event across relay, broker and consumers (RB-D).
func InboxLookup(ctx context.Context, db DBTX, eventID string) ([]InboxEntry, error) {
	return collectRows[InboxEntry](ctx, db, "inbox_lookup", "look up inbox for event "+eventID, eventID)
}

// Inbox is InboxProcessTx with metrics: events applied and duplicates
// absorbed, per consumer (consumer names are few and fixed by the code, so
// the label is bounded).
type Inbox struct {
	applied    *prometheus.CounterVec
	duplicates *prometheus.CounterVec
}

// NewInbox registers the inbox metrics on reg (nil keeps them private).
func NewInbox(reg prometheus.Registerer) (*Inbox, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	applied, err := registerCollector(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queues_inbox_applied_total", Help: "Events applied by an inbox consumer."}, []string{"consumer"}))
	if err != nil {
		return nil, err
	}
	dups, err := registerCollector(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queues_inbox_duplicates_total", Help: "Redelivered events an inbox consumer skipped."}, []string{"consumer"}))
	if err != nil {
		return nil, err
	}
	return &Inbox{applied: applied, duplicates: dups}, nil
}

// ExposeConsumer creates consumer's series at zero, so its metrics are
// exposed, and alerts and dashboards over them evaluate, before the first
// event arrives. ProcessTx creates them anyway on first use.
func (in *Inbox) ExposeConsumer(consumer string) {
	in.applied.WithLabelValues(consumer)
	in.duplicates.WithLabelValues(consumer)
}

// ProcessTx is InboxProcessTx, counted. The counts are taken before the
// caller commits, so a rolled back application may be counted too.
func (in *Inbox) ProcessTx(ctx context.Context, tx pgx.Tx, consumer, eventID string, fn func(pgx.Tx) error) (bool, error) {
	dup, err := InboxProcessTx(ctx, tx, consumer, eventID, fn)
	switch {
	case err != nil:
	case dup:
		in.duplicates.WithLabelValues(consumer).Inc()
	default:
		in.applied.WithLabelValues(consumer).Inc()
	}
	return dup, err
}
