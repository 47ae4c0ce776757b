package diagnostics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/collector"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// gathered is one scrape of a registry: metric families by name.
type gathered map[string]*dto.MetricFamily

func gather(t *testing.T, g prometheus.Gatherer) gathered {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := gathered{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of the series name{labels} (pairs), and whether it
// exists.
func (g gathered) value(name string, labels ...string) (float64, bool) {
	mf, ok := g[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func (g gathered) must(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := g.value(name, labels...)
	require.True(t, ok, "%s%v not exposed", name, labels)
	return v
}

// collectorOn registers a collector of d, configured by cfg, on a new
// registry it returns.
func collectorOn(t *testing.T, d *diagnostics.Diagnostics, cfg collector.Config) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	_, err := collector.New(d, cfg)
	require.NoError(t, err)
	return reg
}

// A real incident, seen through /metrics: a backlog, dead letters, an
// expired lease, outbox events, a live worker, a prepared transaction, a
// session idle in transaction and a blocked one.
func TestCollectorExposesTheRound(t *testing.T) {
	ctx, url, pool := freshPool(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO jobs (queue, kind, available_at) SELECT 'mail', 'send', now() - interval '90 seconds' FROM generate_series(1, 3);
		INSERT INTO jobs (queue, kind, status, attempts, error_class, finished_at)
			SELECT 'mail', 'send', 'dead', 8, 'smtp timeout', now() FROM generate_series(1, 5);
		INSERT INTO jobs (queue, kind, status, attempts, lease_owner, lease_until, started_at)
			VALUES ('mail', 'send', 'running', 1, 'gone-worker', now() - interval '1 minute', now() - interval '5 minutes');
		INSERT INTO outbox_events (topic, event_type, payload, created_at, available_at)
			SELECT 'orders', 'created', '{}', now() - interval '2 minutes', now() - interval '2 minutes' FROM generate_series(1, 2);
		INSERT INTO workers (id, host, pid, queues) VALUES ('w1', 'test', 1, '{mail}');
		CREATE TABLE held (id int)`)
	require.NoError(t, err)

	prepareTransaction(t, url, "collector-2pc")

	holder := connect(t, url, "collector-holder")
	_, err = holder.Exec(ctx, "BEGIN; LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })
	waiter := connect(t, url, "collector-waiter")
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "SELECT count(*) FROM held")
		waited <- err
	}()
	t.Cleanup(func() {
		holder.Exec(context.Background(), "ROLLBACK")
		<-waited
	})
	testdb.WaitBackend(t, pool, "collector-waiter", "wait_event_type = 'Lock'")

	d := open(t, url, diagnostics.Config{})
	reg := collectorOn(t, d, collector.Config{Wait: 10 * time.Second})
	g := gather(t, reg)

	require.Equal(t, 1.0, g.must(t, "console_diagnostics_last_round_success"))
	require.Less(t, g.must(t, "console_diagnostics_last_success_age_seconds"), 30.0)
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_rounds_total"))
	require.Equal(t, 3.0, g.must(t, "console_diagnostics_queue_ready_jobs", "queue", "mail"))
	require.GreaterOrEqual(t, g.must(t, "console_diagnostics_queue_oldest_ready_seconds", "queue", "mail"), 89.0)
	require.Equal(t, 5.0, g.must(t, "console_diagnostics_queue_dead_jobs", "queue", "mail"))
	require.Equal(t, 5.0, g.must(t, "console_diagnostics_queue_recent_dead_jobs", "queue", "mail"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_queue_running_jobs", "queue", "mail"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_queue_expired_leases", "queue", "mail"))
	require.Equal(t, 0.0, g.must(t, "console_diagnostics_queue_paused", "queue", "mail"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_queue_workers_alive", "queue", "mail"))
	require.Equal(t, 2.0, g.must(t, "console_diagnostics_outbox_pending_events"))
	require.GreaterOrEqual(t, g.must(t, "console_diagnostics_outbox_oldest_pending_seconds"), 119.0)
	require.GreaterOrEqual(t, g.must(t, "console_diagnostics_prepared_transactions"), 1.0)
	require.Greater(t, g.must(t, "console_diagnostics_oldest_prepared_transaction_seconds"), 0.0)
	require.GreaterOrEqual(t, g.must(t, "console_diagnostics_blocked_backends"), 1.0)
	require.Greater(t, g.must(t, "console_diagnostics_blocked_max_wait_seconds"), 0.0)
	require.Greater(t, g.must(t, "console_diagnostics_oldest_transaction_seconds"), 0.0)
	g.must(t, "console_diagnostics_oldest_idle_in_transaction_seconds")
	g.must(t, "console_diagnostics_dead_tuples", "table", "jobs")
	g.must(t, "console_diagnostics_archiver_failed_total")
	g.must(t, "console_diagnostics_archiver_failing")
	g.must(t, "console_diagnostics_round_duration_seconds")
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_findings", "code", findings.CodeExpiredLeases))
	require.Equal(t, 0.0, g.must(t, "console_diagnostics_findings", "code", findings.CodeArchiverBacklog), "every code has a series")
	require.Equal(t, 3.0, g.must(t, "console_pool_max_connections", "pool", "diagnostics"))
	for name := range g {
		require.True(t, strings.HasPrefix(name, "console_"), name)
	}
	_, jobLabel := g.value("console_diagnostics_queue_ready_jobs", "job_id", "1")
	require.False(t, jobLabel)

	// The cached round serves the next scrapes: no second round within
	// Refresh (15s by default).
	g = gather(t, reg)
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_rounds_total"))
}

// A scrape never waits for a slow round longer than Wait: it is answered at
// once, and the round's values appear in a later scrape.
func TestCollectorScrapeIsBounded(t *testing.T) {
	ctx, url, pool := freshPool(t)
	_, err := pool.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('bounded', 'k')")
	require.NoError(t, err)
	d := open(t, url, diagnostics.Config{})
	reg := collectorOn(t, d, collector.Config{Wait: time.Nanosecond, Refresh: time.Hour})

	start := time.Now()
	g := gather(t, reg)
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, 0.0, g.must(t, "console_diagnostics_last_round_success"))
	_, ok := g.value("console_diagnostics_queue_ready_jobs", "queue", "bounded")
	require.False(t, ok, "the first scrape cannot have waited for the round")

	eventually(t, 20*time.Second, func() (bool, string) {
		g = gather(t, reg)
		_, ok := g.value("console_diagnostics_queue_ready_jobs", "queue", "bounded")
		return ok, "the background round never landed"
	})
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_queue_ready_jobs", "queue", "bounded"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_last_round_success"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_rounds_total"))
}

// When the database goes away, scrapes keep the last good values, say the
// round failed and count the failed check.
func TestCollectorKeepsLastGoodValues(t *testing.T) {
	ctx, url, pool := freshPool(t)
	_, err := pool.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'kept', 'k' FROM generate_series(1, 4)")
	require.NoError(t, err)
	d, err := diagnostics.Open(ctx, url, diagnostics.Config{})
	require.NoError(t, err)
	reg := collectorOn(t, d, collector.Config{Refresh: time.Nanosecond, Wait: 10 * time.Second})
	g := gather(t, reg)
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_last_round_success"))
	require.Equal(t, 4.0, g.must(t, "console_diagnostics_queue_ready_jobs", "queue", "kept"))

	d.Close()
	start := time.Now()
	g = gather(t, reg)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, 0.0, g.must(t, "console_diagnostics_last_round_success"))
	require.Equal(t, 4.0, g.must(t, "console_diagnostics_queue_ready_jobs", "queue", "kept"))
	require.Equal(t, 2.0, g.must(t, "console_diagnostics_rounds_total"))
	require.Equal(t, 1.0, g.must(t, "console_diagnostics_check_failures_total", "check", "connect"))
}

func TestPoolCollector(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(collector.NewPool("engine", pool)))
	require.NoError(t, reg.Register(collector.NewPool("console", pool)))
	require.Error(t, reg.Register(collector.NewPool("engine", pool)), "one name per pool")

	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	g := gather(t, reg)
	conn.Release()
	require.Equal(t, 1.0, g.must(t, "console_pool_acquired_connections", "pool", "engine"))
	require.Equal(t, float64(pool.Config().MaxConns), g.must(t, "console_pool_max_connections", "pool", "console"))
	require.GreaterOrEqual(t, g.must(t, "console_pool_acquires_total", "pool", "engine"), 1.0)
	g.must(t, "console_pool_acquire_wait_seconds_total", "pool", "engine")
	g.must(t, "console_pool_empty_acquires_total", "pool", "engine")
}
