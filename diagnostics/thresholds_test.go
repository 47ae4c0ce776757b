package diagnostics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

func TestThresholdsSet(t *testing.T) {
	for _, tc := range []struct {
		code, value string
		check       func(t *testing.T, th diagnostics.Thresholds)
	}{
		{"tx.long_running", "30s", func(t *testing.T, th diagnostics.Thresholds) { require.Equal(t, 30*time.Second, th.LongRunningTx) }},
		{"table.dead_tuples", "100000", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 100000, th.DeadTuples) }},
		{"replication.slot_retention", "64MB", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 64<<20, th.SlotRetentionBytes) }},
		{"replication.lag", "1GiB", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 1<<30, th.ReplicationLagBytes) }},
		{"replication.lag", "2m", func(t *testing.T, th diagnostics.Thresholds) { require.Equal(t, 2*time.Minute, th.ReplicationLagTime) }},
		{"queue.backlog", "10m", func(t *testing.T, th diagnostics.Thresholds) { require.Equal(t, 10*time.Minute, th.QueueBacklogAge) }},
		{"queue.backlog", "5000", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 5000, th.QueueBacklogReady) }},
		{"wal.rate_high", "50MB", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 50<<20, th.WALRate) }},
		{"wal.rate_high", "1000", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 1000, th.WALRate) }},
		{"notify.queue_usage", "25%", func(t *testing.T, th diagnostics.Thresholds) { require.InDelta(t, 0.25, th.NotifyQueueUsage, 1e-9) }},
		{"notify.queue_usage", "0.8", func(t *testing.T, th diagnostics.Thresholds) { require.InDelta(t, 0.8, th.NotifyQueueUsage, 1e-9) }},
		{"vacuum.xmin_horizon", "1h", func(t *testing.T, th diagnostics.Thresholds) { require.Equal(t, time.Hour, th.XminHorizonAge) }},
		{"wal.dir_size", "3", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 3, th.WALDirFactor) }},
		{"wal.dir_size", "50GB", func(t *testing.T, th diagnostics.Thresholds) { require.EqualValues(t, 50<<30, th.WALDirBudget) }},
		{"replication.slot_disk_forecast", "30m", func(t *testing.T, th diagnostics.Thresholds) { require.Equal(t, 30*time.Minute, th.SlotDiskForecast) }},
	} {
		t.Run(tc.code+"="+tc.value, func(t *testing.T) {
			th := diagnostics.DefaultThresholds()
			require.NoError(t, findings.SetThreshold(&th, tc.code, tc.value))
			tc.check(t, th)
		})
	}
	th := diagnostics.DefaultThresholds()
	require.ErrorContains(t, findings.SetThreshold(&th, "no.such", "1"), "unknown threshold")
	require.ErrorContains(t, findings.SetThreshold(&th, "tx.long_running", "soon"), "duration")
	require.ErrorContains(t, findings.SetThreshold(&th, "replication.slot_retention", "64XB"), "size")
	require.ErrorContains(t, findings.SetThreshold(&th, "notify.queue_usage", "2"), "fraction")
	require.Equal(t, diagnostics.DefaultThresholds(), th, "a refused value changes nothing")
	require.Contains(t, findings.ThresholdCodes(), "lock.root_blocker")
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "64MB": 64 << 20, "1.5GB": 3 << 29, "8kB": 8 << 10, "2 TiB": 2 << 40} {
		got, err := findings.ParseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "MB", "12 parsecs"} {
		_, err := findings.ParseSize(in)
		require.Error(t, err, in)
	}
}

// A server older than 14, or one whose version could not be read, is
// refused with one line that says which; this server is supported.
func TestServerVersionRefusal(t *testing.T) {
	old := diagnostics.Server{VersionNum: 130011, Version: "13.11"}
	err := old.Supported()
	require.ErrorIs(t, err, diagnostics.ErrUnsupportedServer)
	require.Contains(t, err.Error(), "PostgreSQL 13.11")
	require.Contains(t, err.Error(), "older than 14")
	require.NotContains(t, err.Error(), "\n")

	unread := diagnostics.Server{}
	err = unread.Supported()
	require.ErrorIs(t, err, diagnostics.ErrUnsupportedServer)
	require.Contains(t, err.Error(), "did not report its version")

	require.NoError(t, diagnostics.Server{VersionNum: 140000}.Supported())

	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	info, err := diagnostics.ServerInfo(ctx, db)
	require.NoError(t, err)
	require.GreaterOrEqual(t, info.VersionNum, diagnostics.MinVersionNum)
}
