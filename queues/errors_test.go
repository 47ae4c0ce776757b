package queues

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

type upstreamError struct{ code int }

func (e *upstreamError) Error() string { return fmt.Sprintf("upstream said %d", e.code) }

func TestErrorClass(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("order 123 not found"), "order ? not found"},
		{fmt.Errorf("charge %s: %w", "4f9c2a1e-8d7b-4c3a-9e2f-1a2b3c4d5e6f", errors.New("declined")), "charge ?: declined"},
		{fmt.Errorf("fetch: %w", &upstreamError{503}), "*queues.upstreamError: fetch: upstream said ?"},
		{Permanent(errors.New("blob deadbeef42 missing")), "blob ? missing"},
		{fmt.Errorf("move stock: %w", &pgconn.PgError{Severity: "ERROR", Code: "40P01", Message: "deadlock detected"}), "pg 40P01: move stock: ERROR: deadlock detected"},
		{&panicError{value: "x"}, "panic"},
		{errors.New("multi\nline"), "multi"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, ErrorClass(c.err), c.err.Error())
	}
	long := ErrorClass(errors.New(string(make([]byte, 500))))
	require.LessOrEqual(t, len(long), 96)
	require.True(t, IsPermanent(fmt.Errorf("wrapped: %w", Permanent(errors.New("x")))))
	require.False(t, IsPermanent(errors.New("x")))
	require.Nil(t, Permanent(nil))
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	base, cap := 100*time.Millisecond, 5*time.Second
	require.Equal(t, 100*time.Millisecond, BackoffCeiling(1, base, cap))
	require.Equal(t, 200*time.Millisecond, BackoffCeiling(2, base, cap))
	require.Equal(t, 3200*time.Millisecond, BackoffCeiling(6, base, cap))
	require.Equal(t, cap, BackoffCeiling(7, base, cap))
	require.Equal(t, cap, BackoffCeiling(1000, base, cap), "no overflow")
	require.Equal(t, base, BackoffCeiling(0, base, cap))

	// Full jitter: uniform over [0, ceiling]. Check bounds, mean and that
	// every decile is populated roughly evenly.
	const n = 20000
	for _, attempt := range []int{1, 4, 50} {
		ceiling := BackoffCeiling(attempt, base, cap)
		var sum float64
		var deciles [10]int
		for range n {
			d := Backoff(attempt, base, cap)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling)
			f := float64(d) / float64(ceiling)
			sum += f
			deciles[min(int(f*10), 9)]++
		}
		mean := sum / n
		require.InDelta(t, 0.5, mean, 0.02, "attempt %d mean", attempt)
		for i, c := range deciles {
			require.InDelta(t, n/10, c, 5*math.Sqrt(n/10), "attempt %d decile %d", attempt, i)
		}
	}
}
