package queues

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// BenchmarkRelayJetStream measures relay throughput into a real in-process
// JetStream (file storage): 20,000 committed events drained by one or two
// relays; reports events/s.
func BenchmarkRelayJetStream(b *testing.B) {
	for _, bc := range []struct{ relays, batch, conc int }{{1, 100, 16}, {1, 500, 256}, {2, 500, 256}} {
		b.Run(fmt.Sprintf("relays=%d/batch=%d/conc=%d", bc.relays, bc.batch, bc.conc), func(b *testing.B) {
			const events = 20000
			for range b.N {
				b.StopTimer()
				pool := testdb.New(b)
				ns := obStartNATS(b)
				nc := ns.connect(b)
				ns.stream(b, nc)
				for range events / 1000 {
					obEnqueue(b, pool, "orders", 1000)
				}
				pub := obPublisher(b, nc)
				b.StartTimer()
				start := time.Now()
				for range bc.relays {
					obRelay(b, pool, RelayConfig{Publisher: pub, BatchSize: bc.batch, Concurrency: bc.conc})
				}
				testdb.Eventually(b, 5*time.Minute, "drained", func() bool { return obCountState(b, pool, OutboxPublished) == events })
				b.ReportMetric(events/time.Since(start).Seconds(), "events/s")
			}
		})
	}
}

// BenchmarkInboxProcessTx measures the inbox's cost per event: a
// transaction applying one side effect, with and without the inbox record,
// alternated on every iteration so machine load drifts affect both alike.
// Reports µs per event for each and the difference.
func BenchmarkInboxProcessTx(b *testing.B) {
	ctx := context.Background()
	pool := testdb.New(b)
	_, err := pool.Exec(ctx, "CREATE TABLE ob_effects (event_id text NOT NULL, n int NOT NULL)")
	require.NoError(b, err)
	effect := func(tx pgx.Tx, id string) error {
		_, err := tx.Exec(ctx, "INSERT INTO ob_effects VALUES ($1, 1)", id)
		return err
	}
	run := func(id string, inbox bool) time.Duration {
		start := time.Now()
		tx, err := pool.Begin(ctx)
		require.NoError(b, err)
		if inbox {
			_, err = InboxProcessTx(ctx, tx, "bench", id, func(tx pgx.Tx) error { return effect(tx, id) })
		} else {
			err = effect(tx, id)
		}
		require.NoError(b, err)
		require.NoError(b, tx.Commit(ctx))
		return time.Since(start)
	}
	var without, with, dup time.Duration
	for i := range b.N {
		without += run(fmt.Sprint("w", i), false)
		with += run(fmt.Sprint("i", i), true)
		dup += run("i0", true)
	}
	n := float64(b.N)
	b.ReportMetric(float64(without.Microseconds())/n, "µs/without")
	b.ReportMetric(float64(with.Microseconds())/n, "µs/with-inbox")
	b.ReportMetric(float64(dup.Microseconds())/n, "µs/duplicate")
	b.ReportMetric(float64((with-without).Microseconds())/n, "µs/overhead")
}
