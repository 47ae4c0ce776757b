package diagnostics_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// primaryWithSchema starts a dedicated server with extra settings and
// migrates its postgres database.
func primaryWithSchema(t *testing.T, extra map[string]string) *pgserver.Server {
	t.Helper()
	// Start the shared server first: testdb's lazily created base folder is
	// written without a lock, and setup must not race a dedicated server.
	testdb.AdminURL(t)
	srv := testdb.NewServer(t, withSettings(extra))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE filler (id bigserial PRIMARY KEY, pad text)")
	require.NoError(t, err)
	return srv
}

// smallWALPrimary starts a primary whose max_wal_size and min_wal_size are
// 32MB, so that a bounded number of writes outgrows them, with extra
// settings over that; it returns the primary and a session on it that
// writes WAL (writeWAL).
func smallWALPrimary(t *testing.T, extra map[string]string) (*pgserver.Server, *pgx.Conn) {
	t.Helper()
	settings := map[string]string{"max_wal_size": "32MB", "min_wal_size": "32MB"}
	maps.Copy(settings, extra)
	primary := primaryWithSchema(t, settings)
	return primary, connect(t, primary.URL("postgres"), "wal-writer")
}

// primaryWithSlot is smallWALPrimary with a physical slot named slot that
// keeps WAL from now on, with nothing consuming it.
func primaryWithSlot(t *testing.T, extra map[string]string, slot string) (*pgserver.Server, *pgx.Conn) {
	t.Helper()
	primary, conn := smallWALPrimary(t, extra)
	_, err := conn.Exec(context.Background(), "SELECT pg_create_physical_replication_slot($1, true)", slot)
	require.NoError(t, err)
	return primary, conn
}

// primaryAndStandby starts a primary and a streaming standby named app, and
// opens Diagnostics on the primary that also reads the standby, with
// replication.lag firing on lagBytes of replay lag alone.
func primaryAndStandby(t *testing.T, app string, lagBytes int64) (primary, standby *pgserver.Server, d *diagnostics.Diagnostics) {
	t.Helper()
	primary = primaryWithSchema(t, nil)
	standby = testdb.Standby(t, primary, nil, app)
	th := diagnostics.DefaultThresholds()
	th.ReplicationLagBytes = lagBytes
	th.ReplicationLagTime = 0
	d = open(t, primary.URL("postgres"), diagnostics.Config{
		Thresholds: &th, StandbyURLs: []string{standby.URL("postgres")}, WALSampleWindow: 100 * time.Millisecond,
	})
	return primary, standby, d
}

// writeWAL inserts rows on the primary to generate roughly n bytes of WAL.
func writeWAL(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	rows := n / 1100
	_, err := conn.Exec(context.Background(),
		"INSERT INTO filler (pad) SELECT repeat(md5(g::text), 30) FROM generate_series(1, $1) AS g", rows)
	require.NoError(t, err)
}

// A real streaming standby with replay paused while the primary writes:
// replication.lag appears from both sides with growing bytes; resuming
// clears it.
func TestStandbyReplayPausedLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lagBytes int64 = 256 << 10
	primary, standby, d := primaryAndStandby(t, "standby1", lagBytes)
	writer, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { writer.Close(context.Background()) })
	sconn, err := pgx.Connect(ctx, standby.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { sconn.Close(context.Background()) })

	eventually(t, 30*time.Second, func() (bool, string) {
		r := d.Replication(ctx)
		for _, s := range r.Rows {
			if s.ApplicationName == "standby1" && s.State == "streaming" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %+v", r.Status(), r.Rows)
	})
	st := d.StandbyStatus(ctx)
	require.Len(t, st, 1)
	require.NoError(t, st[0].Err)
	require.True(t, st[0].Rows[0].InRecovery)
	require.Equal(t, "streaming", st[0].Rows[0].ReceiverStatus)

	_, err = sconn.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() (bool, string) {
		var state string
		require.NoError(t, sconn.QueryRow(ctx, "SELECT pg_get_wal_replay_pause_state()").Scan(&state))
		return state == "paused", state
	})

	// Lag grows while replay is paused and writes continue.
	lagOf := func(rep findings.Report) (primarySide, standbySide int64, paused bool) {
		if f, ok := findingFor(rep, findings.CodeReplicationLag, "application_name", "standby1"); ok {
			primarySide = f.Subject["replay_lag_bytes"].(int64)
		}
		for _, f := range findingsWith(rep, findings.CodeReplicationLag) {
			if f.Subject["standby"] != nil {
				standbySide = f.Subject["replay_lag_bytes"].(int64)
				paused = f.Subject["paused"].(bool)
			}
		}
		return
	}
	var first, firstStandby int64
	eventually(t, 30*time.Second, func() (bool, string) {
		writeWAL(t, writer, 1<<20)
		rep, err := findings.Run(ctx, d)
		require.NoError(t, err)
		p, s, paused := lagOf(rep)
		first, firstStandby = p, s
		return p > 0 && s > 0 && paused, fmt.Sprint(codes(rep))
	})
	require.GreaterOrEqual(t, first, lagBytes)
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	paused := findingsWith(rep, findings.CodeReplayPaused)
	require.Len(t, paused, 1, "paused replay is a finding of its own: %v", codes(rep))
	require.Equal(t, "paused", paused[0].Subject["replay_pause_state"])
	require.Empty(t, findingsWith(rep, findings.CodeStandbyReceiver), "the receiver still streams")
	eventually(t, 30*time.Second, func() (bool, string) {
		writeWAL(t, writer, 1<<20)
		rep, err := findings.Run(ctx, d)
		require.NoError(t, err)
		p, s, _ := lagOf(rep)
		return p > first && s > firstStandby, fmt.Sprintf("primary side %d (first %d), standby side %d (first %d)", p, first, s, firstStandby)
	})

	// Resume: the standby catches up and the finding clears.
	_, err = sconn.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() (bool, string) {
		rep, err := findings.Run(ctx, d)
		require.NoError(t, err)
		return len(findingsWith(rep, findings.CodeReplicationLag)) == 0, fmt.Sprint(codes(rep))
	})
}

// A real logical slot with no consumer while WAL is generated:
// replication.slot_retention with retained bytes rising, slot_inactive, a
// time to exhaustion from the WAL rate; and a failing archive_command.
func TestLogicalSlotWithoutConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, map[string]string{
		"max_slot_wal_keep_size": "1GB",
		"archive_mode":           "on",
		"archive_command":        "false",
	})
	conn, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, "SELECT pg_create_logical_replication_slot('orders_cdc', 'pgoutput')")
	require.NoError(t, err)

	// WAL keeps coming while the rounds run, as in production.
	bg, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		defer bg.Close(context.Background())
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			bg.Exec(ctx, "INSERT INTO filler (pad) SELECT repeat('x', 1000) FROM generate_series(1, 20)")
		}
	}()
	t.Cleanup(func() { close(stop); <-writerDone })

	th := diagnostics.DefaultThresholds()
	th.SlotRetentionBytes = 512 << 10
	th.WALRate = 1
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: &th, WALSampleWindow: 100 * time.Millisecond})

	retained := func(rep findings.Report) (int64, findings.Finding) {
		f, ok := findingFor(rep, findings.CodeSlotRetention, "slot_name", "orders_cdc")
		if !ok {
			return 0, f
		}
		return f.Subject["retained_bytes"].(int64), f
	}
	var first int64
	var rep findings.Report
	eventually(t, 30*time.Second, func() (bool, string) {
		writeWAL(t, conn, 1<<20)
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		first, _ = retained(rep)
		return first > 0, fmt.Sprint(codes(rep))
	})
	inactive, ok := findingFor(rep, findings.CodeSlotInactive, "slot_name", "orders_cdc")
	require.True(t, ok, "%v", codes(rep))
	require.Equal(t, "/runbook/rb-b", inactive.Runbook)

	var f findings.Finding
	eventually(t, 30*time.Second, func() (bool, string) {
		writeWAL(t, conn, 1<<20)
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		var n int64
		n, f = retained(rep)
		return n > first, fmt.Sprintf("retained %d, first %d", n, first)
	})
	require.Equal(t, "reserved", f.Subject["wal_status"])
	require.NotNil(t, f.Subject["safe_wal_size"], "max_slot_wal_keep_size is set")
	require.NotNil(t, f.Subject["seconds_to_exhaustion"], "the WAL rate is known from the previous round: %+v", f)
	require.Len(t, findingsWith(rep, findings.CodeWALRateHigh), 1, "wal.rate_high over 1 B/s: %v", codes(rep))

	slots := d.ReplicationSlots(ctx)
	require.NoError(t, slots.Err)
	require.Equal(t, "orders_cdc", slots.Rows[0].SlotName)
	require.False(t, slots.Rows[0].Active)
	require.NotNil(t, slots.Rows[0].CatalogXmin, "a logical slot holds catalog_xmin")
	require.Positive(t, slots.Rows[0].MaxSlotWALKeepBytes, "max_slot_wal_keep_size in bytes")
	require.NotNil(t, slots.Rows[0].PGWALBytes, "a superuser may list pg_wal")
	require.GreaterOrEqual(t, *slots.Rows[0].PGWALBytes, slots.Rows[0].RetainedBytes, "pg_wal holds at least what the slot retains")

	// The archiver fails on every segment.
	_, err = conn.Exec(ctx, "SELECT pg_switch_wal()")
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() (bool, string) {
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		return len(findingsWith(rep, findings.CodeArchiverFailing)) == 1, fmt.Sprint(codes(rep))
	})

	_, err = conn.Exec(ctx, "SELECT pg_drop_replication_slot('orders_cdc')")
	require.NoError(t, err)
}
