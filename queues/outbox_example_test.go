package queues_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/natspub"
)

// An order and its event commit together; the relay publishes the event to
// JetStream afterwards, with the event id as Nats-Msg-Id.
func ExampleEnqueueEventTx() {
	ctx := context.Background()
	// PoolConfig: the relay needs READ COMMITTED connections whatever the
	// database's default isolation.
	cfg, err := queues.PoolConfig("postgres://localhost/app")
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var orderID int64
	if err := tx.QueryRow(ctx, "INSERT INTO orders (amount) VALUES (500) RETURNING id").Scan(&orderID); err != nil {
		log.Fatal(err)
	}
	if _, err := queues.EnqueueEventTx(ctx, tx, queues.OutboxEvent{
		Topic: "orders", AggregateType: "order", AggregateID: "42", EventType: "order.created",
		Payload: map[string]any{"order_id": orderID, "amount": 500},
	}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}

	nc, err := nats.Connect(nats.DefaultURL, nats.MaxReconnects(-1))
	if err != nil {
		log.Fatal(err)
	}
	pub, err := natspub.New(nc, natspub.Config{SubjectPrefix: "events."})
	if err != nil {
		log.Fatal(err)
	}
	relay, err := queues.NewRelay(pool, queues.RelayConfig{Publisher: pub, LeaseDuration: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if err := relay.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer relay.Stop()
}

// A consumer applies each event once: the inbox row and the side effect
// commit together, and the broker is acked only after the commit.
func ExampleInboxProcessTx() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/billing")
	if err != nil {
		log.Fatal(err)
	}
	handle := func(msg *nats.Msg) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err // not acked: redelivered
		}
		defer tx.Rollback(ctx)
		_, err = queues.InboxProcessTx(ctx, tx, "billing", msg.Header.Get("Nats-Msg-Id"), func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO invoices (order_event) VALUES ($1)", msg.Data)
			return err
		})
		if err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err // outcome unknown: don't ack, the inbox decides on redelivery
		}
		return msg.Ack()
	}
	_ = handle
}
