package lifecycle_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pgconsole/console/internal/lifecycle"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitClosed fails the test when ch is not closed within a generous
// deadline (a hang, not a slow machine).
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not done after 10s", what)
	}
}

func TestStartRunsEveryFuncUntilStop(t *testing.T) {
	t.Parallel()
	var r lifecycle.Runner
	r.Stop() // before Start: nothing to stop
	require.Nil(t, r.Done())

	var running, returned atomic.Int32
	started := make(chan struct{}, 3)
	loop := func(ctx context.Context) {
		running.Add(1)
		started <- struct{}{}
		<-ctx.Done()
		returned.Add(1)
	}
	require.NoError(t, r.Start(context.Background(), loop, loop, loop))
	for range 3 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("a goroutine did not start")
		}
	}
	select {
	case <-r.Done():
		t.Fatal("done before Stop")
	default:
	}
	r.Stop()
	require.Equal(t, int32(3), returned.Load(), "Stop returned before every goroutine did")
	waitClosed(t, r.Done(), "Done after Stop")
	r.Stop() // twice is fine

	err := r.Start(context.Background(), loop)
	require.True(t, errors.Is(err, lifecycle.ErrStarted), "a second Start: %v", err)
	require.Equal(t, int32(3), running.Load())
}

func TestParentContextEndsTheService(t *testing.T) {
	t.Parallel()
	var r lifecycle.Runner
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, r.Start(ctx, func(ctx context.Context) { <-ctx.Done() }))
	cancel()
	waitClosed(t, r.Done(), "Done after the parent context ended")
	r.Stop()
}

func TestConcurrentStops(t *testing.T) {
	t.Parallel()
	var r lifecycle.Runner
	require.NoError(t, r.Start(context.Background(), func(ctx context.Context) { <-ctx.Done() }))
	stopped := make(chan struct{})
	for range 4 {
		go func() { r.Stop(); stopped <- struct{}{} }()
	}
	for range 4 {
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("a concurrent Stop hung")
		}
	}
}
