package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/natspub"
)

// relayInsertBatch is how many events one outbox transaction writes while
// the relay mode fills the outbox.
const relayInsertBatch = 1000

// Relay measures the outbox relay: cfg.Jobs events are committed to the
// outbox (not timed), then one Relay (claims of cfg.Batch, cfg.Workers
// publishes in flight) publishes them to an in-process NATS JetStream server
// with file storage on loopback; the clock stops when every event is marked
// published. It checks the stream holds exactly one message per event.
// It refuses to run when the outbox already has unpublished events, which
// the relay would publish too.
func Relay(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	n := cfg.Jobs
	var waiting int64
	if err := cfg.Pool.QueryRow(ctx, sqlText("outbox_unpublished")).Scan(&waiting); err != nil {
		return r, err
	}
	if waiting > 0 {
		return r, fmt.Errorf("the outbox already holds %d unpublished events; run relay on a scratch database", waiting)
	}

	dir, err := os.MkdirTemp("", "console-bench-nats-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true, ServerName: "console-bench",
	})
	if err != nil {
		return r, fmt.Errorf("nats server: %w", err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		return r, errors.New("nats server not ready after 10s")
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		return r, fmt.Errorf("connect to nats: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return r, err
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	})
	if err != nil {
		return r, fmt.Errorf("create stream: %w", err)
	}

	cfg.logf("relay: writing %d events to the outbox", n)
	var first, last int64
	for done := 0; done < n; {
		k := min(relayInsertBatch, n-done)
		evs := make([]queues.OutboxEvent, k)
		for i := range evs {
			evs[i] = queues.OutboxEvent{Topic: "orders", AggregateType: "order", AggregateID: "o",
				EventType: "order.created", Payload: []byte(`{"n":1}`)}
		}
		ids, err := queues.EnqueueEventsTx(ctx, cfg.Pool, evs)
		if err != nil {
			return r, err
		}
		if first == 0 {
			first = ids[0]
		}
		last = ids[len(ids)-1]
		done += k
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = cfg.Pool.Exec(cctx, sqlText("outbox_delete_range"), first, last)
	}()

	pub, err := natspub.New(nc, natspub.Config{SubjectPrefix: "bench.", ExpectStream: "BENCH"})
	if err != nil {
		return r, err
	}
	rl, err := queues.NewRelay(cfg.Pool, queues.RelayConfig{
		Publisher: pub, BatchSize: cfg.Batch, Concurrency: cfg.Workers, PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		return r, err
	}
	cfg.logf("relay: publishing, claims of %d, %d in flight", cfg.Batch, cfg.Workers)
	start := time.Now()
	if err := rl.Start(ctx); err != nil {
		return r, err
	}
	defer rl.Stop()
	limit := max(time.Minute, time.Duration(n/200)*time.Second)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var published int64
	for published < int64(n) {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-deadline.C:
			return r, fmt.Errorf("gave up after %s with %d of %d events published", limit, published, n)
		case <-tick.C:
		}
		if err := cfg.Pool.QueryRow(ctx, sqlText("outbox_published_range"), first, last).Scan(&published); err != nil {
			return r, err
		}
	}
	took := time.Since(start)
	rl.Stop()

	info, err := stream.Info(ctx)
	if err != nil {
		return r, err
	}
	if info.State.Msgs != uint64(n) {
		return r, fmt.Errorf("the stream holds %d messages for %d events", info.State.Msgs, n)
	}
	r.Add("jobs", "events", n, "")
	r.Add("batch", "claim batch", cfg.Batch, "events")
	r.Add("in_flight", "publishes in flight", cfg.Workers, "")
	r.Add("seconds", "drain", took.Seconds(), "s")
	r.Add("events_per_second", "throughput", float64(n)/took.Seconds(), "events/s")
	r.Add("stream_messages", "messages in the stream", info.State.Msgs, "")
	r.Add("duplicates_absorbed", "republishes absorbed by JetStream", pub.Duplicates(), "")
	return r, nil
}
