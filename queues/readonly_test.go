package queues

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/testdb"
)

// probeCounter counts the statements that ask whether the database is
// read-only.
type probeCounter struct{ n atomic.Int64 }

func (p *probeCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "transaction_read_only") {
		p.n.Add(1)
	}
	return ctx
}

func (p *probeCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestRelayStandsDownOnAReadOnlyDatabase: while the database refuses
// writes the relay logs one line, warns about nothing and publishes
// nothing; once writes are accepted it says so once and catches up.
func TestRelayStandsDownOnAReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	probes := &probeCounter{}
	cfg.ConnConfig.Tracer = probes
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	obEnqueue(t, pool, "orders", 5)

	testdb.SetDatabaseDefault(t, url, "default_transaction_read_only", "on")
	pool.Reset()
	var log logbuf.Buffer
	var published atomic.Int64
	pub := PublisherFunc(func(ctx context.Context, m *OutboxMessage) error { published.Add(1); return nil })
	obRelay(t, pool, RelayConfig{Publisher: pub, PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})

	testdb.Eventually(t, 20*time.Second, "the relay stands down and keeps asking", func() bool {
		return strings.Contains(log.String(), "outbox relay standing down") && probes.n.Load() >= 10
	})
	require.Zero(t, published.Load())
	require.Equal(t, 1, strings.Count(log.String(), "outbox relay standing down"), log.String())
	require.NotContains(t, log.String(), `"level":"WARN"`, "no warning while standing down")

	admin := testdb.Connect(t, url, "setup")
	_, err = admin.Exec(context.Background(), "SET default_transaction_read_only = off")
	require.NoError(t, err)
	_, err = admin.Exec(context.Background(), "DO $$BEGIN EXECUTE format('ALTER DATABASE %I RESET default_transaction_read_only', current_database()); END$$")
	require.NoError(t, err)
	pool.Reset()
	testdb.Eventually(t, 20*time.Second, "the relay resumes and publishes", func() bool {
		return published.Load() == 5
	})
	require.Equal(t, 1, strings.Count(log.String(), "outbox relay resuming"), log.String())
}
