package queues

import (
	"context"
	"sync"
	"time"
)

// retentionRunner runs the done-job retention for the scheduler leader: at
// most one run at a time, the first soon after leadership is won, then one
// every SchedulerConfig.RetentionEvery. A run goes on in the background, so
// a long one never delays the schedules' ticks; stopping the scheduler
// stops it after its current batch.
type retentionRunner struct {
	last    time.Time
	running sync.WaitGroup
	busy    bool
	mu      sync.Mutex
}

// maybeRun starts a retention run when one is due and none is running.
func (r *retentionRunner) maybeRun(ctx context.Context, s *Scheduler) {
	if s.cfg.JobRetention <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy || (!r.last.IsZero() && time.Since(r.last) < s.cfg.RetentionEvery) {
		return
	}
	r.busy, r.last = true, time.Now()
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		defer func() { r.mu.Lock(); r.busy = false; r.mu.Unlock() }()
		cfg := s.cfg.Maintenance
		if cfg.Logger == nil {
			cfg.Logger = s.log
		}
		p := MaintenanceParams{Retention: s.cfg.JobRetention.String()}
		if _, err := RunMaintenance(ctx, s.pool, KindPruneJobs, p, cfg, nil); err != nil && ctx.Err() == nil {
			s.log.Warn("done-job retention run failed; it runs again next time", "error", err)
		}
	}()
}

// wait returns when no retention run is going on.
func (r *retentionRunner) wait() { r.running.Wait() }
