package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseWhen: the time picker reads what people type, relative to now
// and in their zone, and refuses the rest with a sentence saying what to
// type.
func TestParseWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	now := time.Date(2026, 12, 6, 8, 30, 0, 0, time.UTC) // 09:30 in Berlin
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want time.Time
	}{
		{"now", time.UTC, now},
		{"5m ago", time.UTC, now.Add(-5 * time.Minute)},
		{" 5 min ago ", time.UTC, now.Add(-5 * time.Minute)},
		{"2 hours ago", time.UTC, now.Add(-2 * time.Hour)},
		{"90s ago", time.UTC, now.Add(-90 * time.Second)},
		{"1h30m ago", time.UTC, now.Add(-90 * time.Minute)},
		{"3 days ago", time.UTC, now.Add(-72 * time.Hour)},
		{"03:20", time.UTC, time.Date(2026, 12, 6, 3, 20, 0, 0, time.UTC)},
		{"03:20:15", time.UTC, time.Date(2026, 12, 6, 3, 20, 15, 0, time.UTC)},
		{"23:10", time.UTC, time.Date(2026, 12, 5, 23, 10, 0, 0, time.UTC)}, // not yet today: yesterday's
		{"09:00", berlin, time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)},
		{"today 01:00", time.UTC, time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)},
		{"Yesterday 14:05", time.UTC, time.Date(2026, 12, 5, 14, 5, 0, 0, time.UTC)},
		{"yesterday 14:05", berlin, time.Date(2026, 12, 5, 13, 5, 0, 0, time.UTC)},
		{"2026-12-03 03:20", time.UTC, time.Date(2026, 12, 3, 3, 20, 0, 0, time.UTC)},
		{"2026-12-03 03:20", berlin, time.Date(2026, 12, 3, 2, 20, 0, 0, time.UTC)},
		{"2026-12-03T03:20:15", time.UTC, time.Date(2026, 12, 3, 3, 20, 15, 0, time.UTC)},
		{"2026-12-03T03:20:00Z", berlin, time.Date(2026, 12, 3, 3, 20, 0, 0, time.UTC)},
		{"2026-12-03T03:20:00+01:00", time.UTC, time.Date(2026, 12, 3, 2, 20, 0, 0, time.UTC)},
		{"2026-12-03", time.UTC, time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)},
	} {
		got, err := parseWhen(tc.in, now, tc.loc)
		require.NoError(t, err, tc.in)
		require.True(t, tc.want.Equal(got), "%q in %s: got %s, want %s", tc.in, tc.loc, got, tc.want)
		require.Equal(t, time.UTC, got.Location(), tc.in)
	}
	for _, bad := range []string{"", "yesterday", "25:00", "5 fortnights ago", "-5m ago", "soon", "2026-13-01 00:00", "12/03/2026"} {
		_, err := parseWhen(bad, now, time.UTC)
		require.Error(t, err, "%q is refused", bad)
		require.Contains(t, err.Error(), "type", "%q: the error says what to type", bad)
	}
}

func TestZoneOf(t *testing.T) {
	require.Equal(t, time.UTC, zoneOf(""))
	require.Equal(t, time.UTC, zoneOf("Mars/Olympus_Mons"), "an unknown zone is UTC")
	require.Equal(t, "America/New_York", zoneOf("America/New_York").String())
}
