package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every duration falls in a bucket whose floor is at most the duration and
// within 1/64 of it, and quantiles come out in rank order.
func TestLatencyHistogram(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 1, 63, 64, 65, 127, 128, 1000, 1234567, time.Second, 90 * time.Second, 1<<62 + 12345} {
		f := bucketFloor(latencyBucket(d))
		require.LessOrEqual(t, f, d, "%d", d)
		require.LessOrEqual(t, float64(d-f), float64(d)/64, "%d", d)
	}
	var h latencyHistogram
	require.Equal(t, time.Duration(0), h.quantile(0.5))
	for i := 1; i <= 100; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	require.InEpsilon(t, float64(50*time.Millisecond), float64(h.quantile(0.5)), 1.0/64)
	require.InEpsilon(t, float64(99*time.Millisecond), float64(h.quantile(0.99)), 1.0/64)
	require.InEpsilon(t, float64(100*time.Millisecond), float64(h.quantile(1)), 1.0/64)
	var sum latencyHistogram
	sum.add(&h)
	sum.add(&h)
	require.Equal(t, int64(200), sum.n.Load())
	require.Equal(t, h.quantile(0.99), sum.quantile(0.99))
}
