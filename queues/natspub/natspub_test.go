package natspub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/natspub"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// startJetStream runs an in-process NATS server with JetStream and a stream
// EVENTS on events.>, and returns a client connected to it.
func startJetStream(t *testing.T) (*nats.Conn, jetstream.Stream) {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true, ServerName: "natspub-test",
	})
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second), "nats server not ready")
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "EVENTS", Subjects: []string{"events.>"}, Duplicates: 5 * time.Minute,
	})
	require.NoError(t, err)
	return nc, stream
}

// readAll fetches every message of the stream.
func readAll(t *testing.T, s jetstream.Stream, want int) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	var out []jetstream.Msg
	for len(out) < want {
		batch, err := c.Fetch(want-len(out), jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		n := 0
		for m := range batch.Messages() {
			out = append(out, m)
			n++
		}
		require.NoError(t, batch.Error())
		require.NotZero(t, n, "stream stopped delivering after %d of %d", len(out), want)
	}
	return out
}

// countState counts the outbox events in state.
func countState(t testing.TB, pool *pgxpool.Pool, state string) int {
	return testdb.Count(t, pool, "SELECT count(*) FROM outbox_events WHERE state = $1", state)
}

// Events committed to the outbox reach JetStream through a relay, once
// each, on prefix+topic, with the event id as Nats-Msg-Id and the event's
// headers.
func TestPublisherThroughRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	nc, stream := startJetStream(t)
	pub, err := natspub.New(nc, natspub.Config{SubjectPrefix: "events.", ExpectStream: "EVENTS"})
	require.NoError(t, err)

	evs := make([]queues.OutboxEvent, 20)
	for i := range evs {
		evs[i] = queues.OutboxEvent{Topic: "orders", AggregateType: "order", AggregateID: "o-7",
			EventType: "order.created", Headers: map[string]string{"Tenant": "acme"}, Payload: map[string]int{"n": i}}
	}
	ids, err := queues.EnqueueEventsTx(ctx, pool, evs)
	require.NoError(t, err)
	r, err := queues.NewRelay(pool, queues.RelayConfig{Publisher: pub, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(r.Stop)

	testdb.Eventually(t, 20*time.Second, "events published", func() bool {
		return countState(t, pool, queues.OutboxPublished) >= len(ids)
	})
	msgs := readAll(t, stream, len(ids))
	seen := map[string]int{}
	for _, m := range msgs {
		h := m.Headers()
		seen[h.Get("Nats-Msg-Id")]++
		require.Equal(t, "events.orders", m.Subject())
		require.Equal(t, "order.created", h.Get("Event-Type"))
		require.Equal(t, "order", h.Get("Aggregate-Type"))
		require.Equal(t, "o-7", h.Get("Aggregate-Id"))
		require.Equal(t, "acme", h.Get("Tenant"))
		require.Equal(t, "1", h.Get("Event-Attempt"))
		require.True(t, json.Valid(m.Data()))
	}
	require.Len(t, seen, len(ids))
	for _, id := range ids {
		m := queues.OutboxMessage{ID: id}
		require.Equal(t, 1, seen[m.EventID()], "event %d", id)
	}
	require.Zero(t, pub.Duplicates())
}

// A republish of an event JetStream already has is acknowledged and
// counted as a duplicate; a subject that lands in another stream than
// ExpectStream is refused.
func TestDuplicatesAndMisroutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nc, _ := startJetStream(t)
	pub, err := natspub.New(nc, natspub.Config{SubjectPrefix: "events."})
	require.NoError(t, err)
	m := &queues.OutboxMessage{ID: 42, Topic: "orders", EventType: "order.created", Attempt: 1, Payload: json.RawMessage(`{}`)}
	require.NoError(t, pub.Publish(ctx, m))
	require.Zero(t, pub.Duplicates())
	m.Attempt = 2
	require.NoError(t, pub.Publish(ctx, m))
	require.Equal(t, int64(1), pub.Duplicates())

	wrong, err := natspub.New(nc, natspub.Config{SubjectPrefix: "events.", ExpectStream: "OTHER"})
	require.NoError(t, err)
	err = wrong.Publish(ctx, &queues.OutboxMessage{ID: 43, Topic: "orders", Payload: json.RawMessage(`{}`)})
	require.ErrorContains(t, err, "publish event 43 to events.orders")

	_, err = natspub.New(nil, natspub.Config{})
	require.EqualError(t, err, "nats publisher: nil connection")
}
