package diagnostics

import (
	"context"

	"github.com/pgconsole/console/queues"
)

// LongRunningJob is a running job that has run far longer than its kind
// usually does, the engine's row (queues.LongRunningJobs).
type LongRunningJob = queues.LongRunningJob

// LongJobParams are the arguments of queues.LongRunningJobs.
type LongJobParams = queues.LongJobParams

func longJobParams(t Thresholds) LongJobParams {
	return LongJobParams{MinRunning: t.LongRunningJob, Factor: float64(t.LongRunningJobFactor)}
}

// LongRunningJobs runs the engine's long-running jobs
// (queues.LongRunningJobs) as a panel with the current thresholds of
// jobs.long_running.
func (d *Diagnostics) LongRunningJobs(ctx context.Context) Result[LongRunningJob] {
	return panel(ctx, d, CheckLongRunningJobs, func(ctx context.Context, db DBTX, _ int) ([]LongRunningJob, error) {
		return queues.LongRunningJobs(ctx, db, longJobParams(d.Thresholds()))
	})
}
