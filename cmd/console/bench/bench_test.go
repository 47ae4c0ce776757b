package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

func TestReportJSONIsOneFlatObject(t *testing.T) {
	t.Parallel()
	r := Report{Mode: "burn"}
	r.Add("jobs", "jobs", 300, "")
	r.Add("jobs_per_second", "throughput", 1234.5, "jobs/s")
	r.Add("ratio", "held / free", math.NaN(), "")
	r.Add("exactly_once", "every job done exactly once", true, "")
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, map[string]any{
		"mode": "burn", "jobs": 300.0, "jobs_per_second": 1234.5, "ratio": nil, "exactly_once": true,
	}, got)
	require.Equal(t, 300, r.Value("jobs"))
	require.Nil(t, r.Value("missing"))
}

func TestReportTable(t *testing.T) {
	t.Parallel()
	r := Report{Mode: "scale"}
	r.Add("claim_ratio", "claim, large/small", 1.234, "")
	r.Add("claim_small_ms", "claim, small", 0.5, "ms")
	r.Add("rows", "rows", 1_000_000.0, "")
	r.Add("ratio", "held / free", math.Inf(1), "")
	var out bytes.Buffer
	require.NoError(t, r.WriteTable(&out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, []string{
		"mode                scale",
		"claim, large/small  1.23",
		"claim, small        0.500 ms",
		"rows                1000000",
		"held / free         n/a",
	}, lines)
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	require.Equal(t, time.Duration(5), median(ds))
	require.Equal(t, time.Duration(10), percentile(ds, 0.99))
	require.Equal(t, time.Duration(1), percentile(ds, 0))
	require.Equal(t, time.Duration(0), percentile(nil, 0.5))
	require.True(t, math.IsNaN(ratio(1, 0)))
}

func TestScaleLayoutGrowsEveryPart(t *testing.T) {
	t.Parallel()
	small, large := layoutFor(100_000), layoutFor(10_000_000)
	require.Equal(t, 100_000, small.ready+small.running+small.dead+small.done)
	require.Equal(t, 10_000_000, large.ready+large.running+large.dead+large.done)
	require.Equal(t, 1_000_000, large.dead, "a dead-letter storm: a million dead letters at 10M rows")
	require.Equal(t, 100*small.dead, large.dead)
	require.Equal(t, 100*small.ready, large.ready)
	require.Equal(t, small.running, large.running, "running jobs follow the fleet's concurrency, not history")
	require.Positive(t, layoutFor(1000).done)
}

// Each mode name runs its own function, Modes lists them in help order, and
// an unknown name is refused before anything runs.
func TestModes(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"burn", "continuous", "enqueue", "relay", "floor", "scale", "bloat", "fairness", "footprint", "pressure"}, Modes)
	want := map[string]func(context.Context, Config) (Report, error){
		"burn": Burn, "continuous": Continuous, "enqueue": Enqueue, "relay": Relay,
		"floor": Floor, "scale": Scale, "bloat": Bloat, "fairness": Fairness, "footprint": Footprint,
		"pressure": Pressure,
	}
	for _, m := range modes {
		require.Equal(t, reflect.ValueOf(want[m.name]).Pointer(), reflect.ValueOf(m.run).Pointer(), m.name)
	}
	// A pool that never connects: the name is checked first.
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/none")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = Run(context.Background(), "nope", Config{Pool: pool})
	require.ErrorIs(t, err, ErrUnknownMode)
	require.ErrorContains(t, err, `"nope" (one of burn, continuous,`)
}
