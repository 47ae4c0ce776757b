package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFormat(t *testing.T) {
	for in, want := range map[float64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 40: "3 TiB"} {
		require.Equal(t, want, humanBytes(in))
	}
	for in, want := range map[float64]string{0.25: "250ms", 5: "5s", 252.4: "4m12s", 3 * 3600: "3h00m", 90000: "1d1h", -3: "0ms"} {
		require.Equal(t, want, humanSeconds(in))
	}
	require.Equal(t, "2.5/s", humanRate(2.5))
	require.Equal(t, "1,235/s", humanRate(1234.6))

	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a := age(now.Add(-252*time.Second), now)
	require.Equal(t, "4m12s ago", a.Text)
	require.Equal(t, "2026-12-02T11:55:48Z", a.UTC)
	require.Equal(t, "in 10s", age(now.Add(10*time.Second), now).Text)
	require.Equal(t, "never", agePtr(nil, now).Text)
	require.Equal(t, "abc…", truncate("abc   def", 4))

	s := spark([]float64{0, 5, 10}, 5, "x")
	require.Equal(t, "0.0,27.0 50.0,14.0 100.0,1.0", s.Points)
	require.Equal(t, "14.0", s.Threshold)
	require.Empty(t, spark([]float64{1}, 0, "x").Points, "one point is no trend")
}
