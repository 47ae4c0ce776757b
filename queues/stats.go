package queues

import (
	"context"
)

// QueueStat is one queue's line on the overview.
type QueueStat struct {
	Queue string `db:"queue"`
	// Ready counts every ready job, Due those whose available_at has come.
	Ready int64 `db:"ready"`
	Due   int64 `db:"due"`
	// Running counts leased jobs; ExpiredLeases those whose lease is past
	// (a dead or stalled worker the reaper has not handled yet).
	Running       int64 `db:"running"`
	ExpiredLeases int64 `db:"expired_leases"`
	Dead          int64 `db:"dead"`
	// DoneApprox is estimated from planner statistics (0 when unknown):
	// counting finished rows exactly would need a full scan.
	DoneApprox int64 `db:"done_approx"`
	// OldestReadySeconds is the age of the oldest due ready job.
	OldestReadySeconds float64  `db:"oldest_ready_seconds"`
	Paused             bool     `db:"paused"`
	MaxWorkers         *int     `db:"max_workers"`
	RatePerSecond      *float64 `db:"rate_per_second"`
}

// QueueStats returns per-queue counts from the partial indexes only, so it
// stays cheap with millions of finished rows.
func QueueStats(ctx context.Context, db DBTX) ([]QueueStat, error) {
	return collectRows[QueueStat](ctx, db, "queue_stats", "queue stats")
}
