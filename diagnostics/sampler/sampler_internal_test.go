package sampler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
)

func TestSeriesSkipsCounterResets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reset1, reset2 := t0.Add(-time.Hour), t0.Add(25*time.Second)
	s := &Sampler{cfg: Config{Interval: 10 * time.Second}, ring: make([]diagnostics.Sample, 8)}
	add := func(at time.Duration, records int64, reset time.Time, lsn int64) {
		s.ring[s.next] = diagnostics.Sample{At: t0.Add(at), WALStats: &diagnostics.WALStat{Records: records, StatsReset: &reset}, WAL: &diagnostics.WALPoint{LSNBytes: lsn}}
		s.next++
	}
	add(0, 100, reset1, 1000)
	add(10*time.Second, 200, reset1, 2000) // +10/s
	add(20*time.Second, 150, reset1, 3000) // went down: a reset we did not see
	add(30*time.Second, 10, reset2, 4000)  // stats_reset changed
	add(40*time.Second, 110, reset2, 5000) // +10/s
	pts := s.Series("wal.records_per_second")
	require.Equal(t, []Point{{At: t0.Add(10 * time.Second), Value: 10}, {At: t0.Add(40 * time.Second), Value: 10}}, pts)
	require.Len(t, s.Series("wal.bytes_per_second"), 4)
	rate, ok := s.freshWALRate()
	require.False(t, ok, "samples from long ago are not fresh (rate %v)", rate)
}
