package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
)

// A slow-clock read that falls inside the idle window is in the window's
// ledger; the idle figure counts it once, spread over the slow clock's
// interval, and the window's fast work per second of window.
func TestIdleCostCountsEachStatementOnce(t *testing.T) {
	t.Parallel()
	window := map[string]diagnostics.CheckCost{
		"wal_position":  {Statements: 2, Seconds: 0.040},
		"lock_watcher":  {Statements: 1, Seconds: 0.020},
		"table_vacuum":  {Statements: 1, Seconds: 0.600}, // the slow clock read inside the window
		"wraparound":    {Statements: 1, Seconds: 0.003},
		"never_sampled": {},
	}
	slowRead := map[string]time.Duration{
		"table_vacuum":    600 * time.Millisecond,
		"wraparound":      3 * time.Millisecond,
		"invalid_indexes": 120 * time.Millisecond,
	}
	total, by := idleCost(window, 20*time.Second, slowRead, 2*time.Minute)

	// Fast: (40 + 20) ms over 20 s = 3 ms/s; slow: (600 + 3 + 120) ms
	// over 120 s = 6.025 ms/s.
	require.InDelta(t, 3+6.025, total, 1e-9)
	require.Equal(t, []idleShare{
		{Check: "table_vacuum", MsPerSecond: 5, Slow: true},
		{Check: "wal_position", MsPerSecond: 2},
		{Check: "invalid_indexes", MsPerSecond: 1, Slow: true},
		{Check: "lock_watcher", MsPerSecond: 1},
		{Check: "wraparound", MsPerSecond: 0.025, Slow: true},
	}, roundShares(by))
}

func TestCostDeltaKeepsWhatSentStatements(t *testing.T) {
	t.Parallel()
	before := map[string]diagnostics.CheckCost{"a": {Statements: 3, Seconds: 1}, "b": {Statements: 1, Seconds: 0.5}}
	after := map[string]diagnostics.CheckCost{"a": {Statements: 5, Seconds: 1.25}, "b": {Statements: 1, Seconds: 0.5}, "c": {Statements: 1, Seconds: 0.1}}
	require.Equal(t, map[string]diagnostics.CheckCost{"a": {Statements: 2, Seconds: 0.25}, "c": {Statements: 1, Seconds: 0.1}}, costDelta(before, after))
}

// roundShares rounds each share to a microsecond per second, so float
// sums compare exactly.
func roundShares(by []idleShare) []idleShare {
	out := make([]idleShare, len(by))
	for i, s := range by {
		s.MsPerSecond = float64(int64(s.MsPerSecond*1000+0.5)) / 1000
		out[i] = s
	}
	return out
}
