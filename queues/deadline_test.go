package queues

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLeaseDeadlineArithmetic: the local deadline counts from when the
// claim or renewal was sent, and falls a tenth of the lease before the
// database's lease ends.
func TestLeaseDeadlineArithmetic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sent, lease, want time.Duration
	}{
		{0, 30 * time.Second, 27 * time.Second},
		{5 * time.Second, 30 * time.Second, 32 * time.Second},
		{time.Second, 2 * time.Second, 2800 * time.Millisecond},
		{time.Hour, 10 * time.Millisecond, time.Hour + 9*time.Millisecond},
	} {
		require.Equal(t, tc.want, leaseDeadline(tc.sent, tc.lease), "sent %s, lease %s", tc.sent, tc.lease)
		require.Less(t, leaseDeadline(tc.sent, tc.lease), tc.sent+tc.lease, "the local deadline comes before the database's")
	}
	require.Equal(t, 3*time.Second, leaseMargin(30*time.Second))
}

// TestExpireLeases: the lease watch cancels exactly the jobs whose local
// deadline passed, with cause ErrLeaseDeadline (an ErrLeaseLost), and says
// when the next deadline falls.
func TestExpireLeases(t *testing.T) {
	t.Parallel()
	c := &Client{epoch: time.Now(), cfg: ClientConfig{LeaseDuration: 10 * time.Second}}
	add := func(id int64, deadline time.Duration) *jobContext {
		ctx, cancel := context.WithCancelCause(context.Background())
		jc := &jobContext{Context: ctx, job: &Job{ID: id}, cancel: cancel, client: c}
		jc.deadline.Store(int64(deadline))
		jc.slot = c.running.add(runningJob{id: id, generation: 1, cancel: cancel, jc: jc})
		return jc
	}
	past := add(1, 5*time.Second)
	due := add(2, 7*time.Second) // exactly now: due
	later := add(3, 9*time.Second)
	latest := add(4, 12*time.Second)

	next, ok := c.expireLeases(7 * time.Second)
	require.True(t, ok)
	require.Equal(t, 9*time.Second, next, "the earliest deadline still ahead")
	for _, jc := range []*jobContext{past, due} {
		cause := context.Cause(jc)
		require.ErrorIs(t, cause, ErrLeaseDeadline, "job %d", jc.job.ID)
		require.ErrorIs(t, cause, ErrLeaseLost, "job %d", jc.job.ID)
	}
	for _, jc := range []*jobContext{later, latest} {
		require.NoError(t, jc.Err(), "job %d was cancelled before its deadline", jc.job.ID)
	}

	// A renewal moves a deadline; the watch then leaves the job running.
	later.deadline.Store(int64(20 * time.Second))
	next, ok = c.expireLeases(13 * time.Second)
	require.True(t, ok)
	require.Equal(t, 20*time.Second, next)
	require.ErrorIs(t, context.Cause(latest), ErrLeaseDeadline)
	require.NoError(t, later.Err())

	// Without the renewed job nothing is left ahead.
	c.running.remove(later.slot, later.job.ID)
	_, ok = c.expireLeases(time.Hour)
	require.False(t, ok)
	require.True(t, errors.Is(context.Cause(past), ErrLeaseDeadline))
}

// TestLeaseDeadlineOfContext: a handler reads its lease's local deadline
// from its context, and from contexts derived from it.
func TestLeaseDeadlineOfContext(t *testing.T) {
	t.Parallel()
	_, ok := LeaseDeadline(context.Background())
	require.False(t, ok, "a context that is no job's has no lease")
	c := &Client{epoch: time.Now()}
	jc := &jobContext{Context: context.Background(), job: &Job{ID: 1}, client: c}
	jc.deadline.Store(int64(3 * time.Second))
	ctx, cancel := context.WithTimeout(jc, time.Minute)
	defer cancel()
	d, ok := LeaseDeadline(ctx)
	require.True(t, ok)
	require.Equal(t, c.epoch.Add(3*time.Second), d)
}
