package natspub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pgconsole/console/queues"
)

// Config configures a Publisher.
type Config struct {
	// SubjectPrefix is prepended to each event's topic to form the subject
	// ("events." + "orders" = "events.orders"). Empty means the topic as is.
	SubjectPrefix string
	// ExpectStream, when set, makes JetStream refuse a publish that would land
	// in another stream (a misrouted subject fails instead of vanishing).
	ExpectStream string
}

// Publisher publishes outbox events to NATS JetStream. The event id is
// the Nats-Msg-Id header, so a republish inside the stream's duplicate window
// (after a relay died between publish and mark) is dropped by the server.
// Only a JetStream publish acknowledgement counts as accepted.
type Publisher struct {
	js         jetstream.JetStream
	cfg        Config
	duplicates atomic.Int64
}

// New builds a publisher on nc, which the caller owns and closes
// (configure it to reconnect forever: the relay retries through outages).
func New(nc *nats.Conn, cfg Config) (*Publisher, error) {
	if nc == nil {
		return nil, errors.New("nats publisher: nil connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("nats publisher: %w", err)
	}
	return &Publisher{js: js, cfg: cfg}, nil
}

// Publish sends one event and waits for the JetStream acknowledgement.
// Headers: the event's own, plus Nats-Msg-Id, Event-Type, Aggregate-Type,
// Aggregate-Id and Event-Attempt.
func (p *Publisher) Publish(ctx context.Context, m *queues.OutboxMessage) error {
	msg := nats.NewMsg(p.cfg.SubjectPrefix + m.Topic)
	for k, v := range m.Headers {
		msg.Header.Set(k, v)
	}
	msg.Header.Set("Event-Type", m.EventType)
	msg.Header.Set("Aggregate-Type", m.AggregateType)
	msg.Header.Set("Aggregate-Id", m.AggregateID)
	msg.Header.Set("Event-Attempt", fmt.Sprint(m.Attempt))
	msg.Data = m.Payload
	opts := []jetstream.PublishOpt{jetstream.WithMsgID(m.EventID())}
	if p.cfg.ExpectStream != "" {
		opts = append(opts, jetstream.WithExpectStream(p.cfg.ExpectStream))
	}
	ack, err := p.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		return fmt.Errorf("publish event %d to %s: %w", m.ID, msg.Subject, err)
	}
	if ack.Duplicate {
		p.duplicates.Add(1)
	}
	return nil
}

// Duplicates reports how many publishes JetStream acknowledged as duplicates
// of an event id it already had: republishes the server absorbed.
func (p *Publisher) Duplicates() int64 { return p.duplicates.Load() }
