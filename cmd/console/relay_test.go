package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestWorkerStartsWhileNATSIsDown: a worker whose NATS server is down at
// start works its jobs anyway, says the relay waits for the broker, shows
// console_relay_broker_up 0, and once NATS is up publishes the event that
// waited and shows 1. The broker is the relay's problem, never the job
// engine's.
func TestWorkerStartsWhileNATSIsDown(t *testing.T) {
	port, err := pgserver.FreePort()
	require.NoError(t, err)
	url, pool, ids := queuedJobs(t, "relayed", "noop", 3, func(int) any { return nil })
	ctx := context.Background()
	evID, err := queues.EnqueueEventTx(ctx, pool, queues.OutboxEvent{Topic: "orders", AggregateType: "order",
		AggregateID: "1", EventType: "order.created", Payload: map[string]int{"order_id": 1}})
	require.NoError(t, err)
	cmd, out := startWorkerOutput(t, url, fmt.Sprintf("--queues relayed --metrics-addr 127.0.0.1:0 --relay-nats-url nats://127.0.0.1:%d", port))
	testdb.Eventually(t, 60*time.Second, "the worker's jobs done while NATS is down", func() bool {
		var done int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'done'`, ids).Scan(&done))
		return done == len(ids)
	})
	require.Contains(t, out.String(), "is not reachable yet; connecting in the background")
	metrics := regexp.MustCompile(`engine metrics on (http://\S+/metrics)`).FindStringSubmatch(out.String())
	require.NotNil(t, metrics, "the worker prints its metrics address")
	require.Equal(t, "0", brokerUp(t, metrics[1]), "the broker is down")

	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true, ServerName: "relay-test"})
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second), "nats server not ready")
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders"}})
	require.NoError(t, err)

	testdb.Eventually(t, 90*time.Second, "the waiting event published once NATS is up", func() bool {
		var published bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT published_at IS NOT NULL FROM outbox_events WHERE id = $1`, evID).Scan(&published))
		return published
	})
	require.Equal(t, "1", brokerUp(t, metrics[1]), "the broker is up")
	require.NoError(t, cmd.Process.Signal(syscall.Signal(0)), "the worker is still running")
	require.Contains(t, out.String(), "outbox relay: connected to NATS")
}

// brokerUp reads console_relay_broker_up from a metrics page.
func brokerUp(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, `console_relay_broker_up{broker="nats"} `) {
			return strings.TrimPrefix(l, `console_relay_broker_up{broker="nats"} `)
		}
	}
	t.Fatalf("no console_relay_broker_up in the worker's metrics:\n%s", body)
	return ""
}
