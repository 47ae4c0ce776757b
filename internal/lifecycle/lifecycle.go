package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is returned by Start on a Runner started before (stopped or
// not): a service runs once.
var ErrStarted = errors.New("already started")

// Runner runs a service's goroutines from Start to Stop. The zero value is
// ready to use; a Runner must not be copied after first use.
type Runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs each fn in a goroutine of its own with a context derived from
// ctx, which Stop (or ctx ending) cancels, and returns at once. Each fn must
// return once its context is done. Start errs with ErrStarted when the
// Runner was started before.
func (r *Runner) Start(ctx context.Context, fns ...func(ctx context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return ErrStarted
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(func() { fn(ctx) })
	}
	go func() {
		wg.Wait()
		close(r.done)
	}()
	return nil
}

// Stop cancels the goroutines' context and waits for all of them to
// return. It is safe to call before Start, more than once, and from
// several goroutines.
func (r *Runner) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Done returns a channel closed once the goroutines of a started Runner
// have all returned (after Stop, or after ctx ended and they returned), or
// nil before Start.
func (r *Runner) Done() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done
}
