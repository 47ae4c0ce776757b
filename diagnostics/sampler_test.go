package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// Rates come from deltas; a stats reset between two samples gives no point
// rather than a negative rate.
func TestSamplerRatesAndStatsReset(t *testing.T) {
	ctx, url, db := freshPool(t)
	d := open(t, url, diagnostics.Config{})
	s := sampler.New(d, sampler.Config{Interval: time.Hour, Size: 10})
	write := func() {
		_, err := db.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'sampled', 'k' FROM generate_series(1, 500)")
		require.NoError(t, err)
	}

	s1 := s.SampleNow(ctx)
	require.NotNil(t, s1.WAL)
	require.NotNil(t, s1.WALStats)
	require.NotNil(t, s1.Checkpointer)
	require.NotNil(t, s1.Archiver)
	require.NotNil(t, s1.Outbox)
	require.NotNil(t, s1.Blocked)
	write()
	s.SampleNow(ctx)
	// Reset the WAL statistics: the records counter starts again from zero.
	_, err := db.Exec(ctx, "SELECT pg_stat_reset_shared('wal')")
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() (bool, string) {
		smp := s.SampleNow(ctx)
		return smp.WALStats != nil && smp.WALStats.StatsReset != nil && smp.WALStats.StatsReset.After(s1.At.Add(-time.Second)), fmt.Sprintf("%+v", smp.WALStats)
	})
	write()
	s.SampleNow(ctx)

	samples := s.Samples()
	require.GreaterOrEqual(t, len(samples), 4)
	records := s.Series("wal.records_per_second")
	require.Less(t, len(records), len(samples)-1, "the delta across the reset is dropped")
	require.NotEmpty(t, records)
	for _, p := range records {
		require.GreaterOrEqual(t, p.Value, 0.0)
	}
	wal := s.Series("wal.bytes_per_second")
	require.Len(t, wal, len(samples)-1, "the WAL position never resets")
	require.Greater(t, wal[0].Value, 0.0)
	ready := s.Series("queue.sampled.ready")
	require.Len(t, ready, len(samples))
	require.EqualValues(t, 1000, ready[len(ready)-1].Value)
	require.Contains(t, s.SeriesNames(), "queue.sampled.ready")
	require.Nil(t, s.Series("no.such.series"))

	// The ring keeps Size samples.
	for i := 0; i < 12; i++ {
		s.SampleNow(ctx)
	}
	require.Len(t, s.Samples(), 10)
}

func TestSamplerService(t *testing.T) {
	ctx, url, db := freshPool(t)
	d := open(t, url, diagnostics.Config{})
	s := sampler.New(d, sampler.Config{Interval: 50 * time.Millisecond, Size: 100})
	require.NoError(t, s.Start(ctx))
	require.NotEmpty(t, s.Samples(), "Start returns after a first sample")
	require.Error(t, s.Start(ctx), "started once")
	t.Cleanup(s.Stop)
	eventually(t, 10*time.Second, func() (bool, string) {
		_, err := db.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'svc', 'k' FROM generate_series(1, 100)")
		require.NoError(t, err)
		pts := s.Series("wal.bytes_per_second")
		return len(pts) >= 3, fmt.Sprint(pts)
	})
	s.Stop()
	n := len(s.Samples())
	s.Stop()
	require.Equal(t, n, len(s.Samples()), "no sampling after Stop")
}

// An idle sample reads no blocking tree: its activity rows show nobody
// waiting on a lock, so the blocked count is zero without the tree's read
// of every lock. When a backend waits, the tree is read and counts it.
// Activity and the tree are the server's, and other tests stage lock
// waiters on the shared one: this test has a server of its own.
func TestSampleReadsNoTreeWhenNothingWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.NewServer(t, nil).URL("postgres")
	_, err := migrations.Up(ctx, connect(t, url, "migrate"))
	require.NoError(t, err)
	db := testdb.Pool(t, url)
	d := open(t, url, diagnostics.Config{})
	tree := func() int64 { return d.Cost()[diagnostics.CheckBlockingTree].Statements }
	activity := func() int64 { return d.Cost()[diagnostics.CheckActivity].Statements }

	smp := d.TakeSample(ctx)
	require.NotNil(t, smp.Blocked)
	require.Equal(t, 0, *smp.Blocked)
	require.Zero(t, tree(), "nobody waits: the tree's statement is not sent")
	require.EqualValues(t, 1, activity())

	_, err = db.Exec(ctx, "CREATE TABLE idle_row (id int PRIMARY KEY); INSERT INTO idle_row VALUES (1)")
	require.NoError(t, err)
	holder := connect(t, url, "idle-holder")
	for _, q := range []string{"BEGIN", "SELECT * FROM idle_row FOR UPDATE"} {
		_, err := holder.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	waiter := connect(t, url, "idle-waiter")
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(context.Background(), "UPDATE idle_row SET id = id WHERE id = 1")
		done <- err
	}()
	t.Cleanup(func() { _, _ = holder.Exec(context.Background(), "ROLLBACK"); <-done })
	eventually(t, 15*time.Second, func() (bool, string) {
		smp = d.TakeSample(ctx)
		return smp.Blocked != nil && *smp.Blocked == 1, fmt.Sprintf("blocked %v", smp.Blocked)
	})
	require.Positive(t, tree(), "a backend waits: the tree is read")
}

// A sample's statements run in its transaction without a savepoint each
// (a savepoint and its release are two more round trips a statement), and
// a check that fails, aborting that transaction, does not cost the checks
// after it: they run in a new one.
func TestSampleSendsNoSavepoints(t *testing.T) {
	ctx, url, db := freshPool(t)
	d := open(t, url, diagnostics.Config{})
	savepoints := func() int64 {
		var n int64
		require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND query ILIKE 'savepoint%'`).Scan(&n))
		return n
	}
	d.TakeSample(ctx) // the server's version and the slow clock's first read, each with savepoints of its own
	before := savepoints()
	smp := d.TakeSample(ctx)
	require.Equal(t, before, savepoints(), "no savepoint per statement")
	require.NotNil(t, smp.WAL)
	require.NotNil(t, smp.Archiver)

	// queue_health waits on a lock past lock_timeout and fails: the
	// checks sampled after it are still read.
	holder := connect(t, url, "sample-locker")
	for _, q := range []string{"BEGIN", "LOCK TABLE queue_job_counts IN ACCESS EXCLUSIVE MODE"} {
		_, err := holder.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() { _, _ = holder.Exec(context.Background(), "ROLLBACK") })
	smp = d.TakeSample(ctx)
	require.Nil(t, smp.Queues, "queue_health waited on the lock and failed")
	require.NotNil(t, smp.Outbox, "read after the failure, in a new transaction")
	require.NotNil(t, smp.Archiver, "read after the failure, in a new transaction")
	require.NotNil(t, smp.PreparedXacts, "read after the failure, in a new transaction")
}

// With no replication slot (what most samples meet), the slots query
// neither lists pg_wal nor reads its setting: both are read for the first
// slot's row only.
func TestSlotsListNoWALDirWithoutASlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A server of its own: the slots are the server's, and other tests
	// make theirs on the shared one.
	srv := testdb.NewServer(t, nil)
	conn := connect(t, srv.URL("postgres"), "slots-reader")
	_, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	require.NoError(t, err)
	var version int
	require.NoError(t, conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version))
	// Count the statements query_to_xml runs inside the slots query too.
	_, err = conn.Exec(ctx, "SET pg_stat_statements.track = 'all'")
	require.NoError(t, err)
	listings := func() int64 {
		var n int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND query LIKE 'SELECT sum(size) AS b FROM pg_ls_waldir()%'`).Scan(&n))
		return n
	}
	before := listings()
	rows, err := diagnostics.ReplicationSlots(ctx, conn, version)
	require.NoError(t, err)
	require.Empty(t, rows)
	require.Equal(t, before, listings(), "pg_wal is not listed for no slot")
}

// With archiving off, the archiver's row does not read pg_settings (a scan
// of every setting) to say whether an archive command is set: nothing
// would be archived either way.
func TestArchiverReadsNoSettingsWhenArchivingIsOff(t *testing.T) {
	ctx, _, db := freshPool(t)
	var mode string
	require.NoError(t, db.QueryRow(ctx, "SELECT current_setting('archive_mode')").Scan(&mode))
	require.Equal(t, "off", mode, "the test server does not archive")
	a, err := diagnostics.Archiver(ctx, db)
	require.NoError(t, err)
	require.Equal(t, "off", a.ArchiveMode)
	require.Nil(t, a.ArchivingConfigured, "not read with archiving off")
}
