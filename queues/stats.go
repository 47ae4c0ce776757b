package queues

import (
	"context"
)

// QueueStat is one queue's line on the overview.
type QueueStat struct {
	Queue string `db:"queue"`
	// Ready counts every ready job, exactly (queue_job_counts). Due counts
	// those whose available_at has come: Ready minus the jobs scheduled for
	// later, which are counted up to QueueStatsScheduledCap per queue and
	// priority; DueExact is false when that count reached the cap, and Due
	// is then an upper bound.
	Ready    int64 `db:"ready"`
	Due      int64 `db:"due"`
	DueExact bool  `db:"due_exact"`
	// Running counts leased jobs, exactly (queue_job_counts); ExpiredLeases
	// those whose lease is past (a dead or stalled worker the reaper has not
	// handled yet).
	Running       int64 `db:"running"`
	ExpiredLeases int64 `db:"expired_leases"`
	Dead          int64 `db:"dead"`
	// DoneApprox is estimated from planner statistics (0 when unknown):
	// counting finished rows exactly would need a full scan. It is
	// QueueCounts', read by a second statement.
	DoneApprox int64 `db:"-"`
	// OldestReadySeconds is the age of the oldest due ready job.
	OldestReadySeconds float64  `db:"oldest_ready_seconds"`
	Paused             bool     `db:"paused"`
	MaxWorkers         *int     `db:"max_workers"`
	RatePerSecond      *float64 `db:"rate_per_second"`
}

// QueueStatsScheduledCap is where QueueStats stops counting a queue's jobs
// scheduled for later, per priority: it bounds the only count QueueStats
// takes from the jobs themselves.
const QueueStatsScheduledCap = 10_000

// QueueStats returns per-queue counts whose cost follows the number of
// queues, not the backlog or the history: ready, running and dead are exact
// counters kept by triggers on jobs (queue_job_counts, dead_letter_counts),
// the oldest due job is an index probe per queue and priority, and only the
// jobs scheduled for later are counted from jobs, up to
// QueueStatsScheduledCap (QueueStat.DueExact).
func QueueStats(ctx context.Context, db DBTX) ([]QueueStat, error) {
	stats, err := collectRows[QueueStat](ctx, db, "queue_stats", "queue stats", QueueStatsScheduledCap)
	if err != nil {
		return nil, err
	}
	counts, err := QueueCounts(ctx, db)
	if err != nil {
		return nil, err
	}
	done := make(map[string]int64, len(counts))
	for _, c := range counts {
		done[c.Queue] = c.DoneApprox
	}
	for i := range stats {
		stats[i].DoneApprox = done[stats[i].Queue]
	}
	return stats, nil
}

// QueueCount is one queue's job counts for the job list's tabs.
type QueueCount struct {
	Queue string `db:"queue"`
	// Ready, Running and Dead are exact (the engine's counters); DoneApprox
	// is estimated from planner statistics (0 when unknown).
	Ready      int64 `db:"ready"`
	Running    int64 `db:"running"`
	Dead       int64 `db:"dead"`
	DoneApprox int64 `db:"done_approx"`
}

// QueueCounts returns every queue with jobs that are ready, running or
// dead, with its counts, from the counters alone: it never reads jobs (no
// probe of the backlog, unlike QueueStats), so its cost follows the number
// of queues and error classes only, for pages that show counts on every
// request (the job list's tabs).
func QueueCounts(ctx context.Context, db DBTX) ([]QueueCount, error) {
	return collectRows[QueueCount](ctx, db, "queue_counts", "queue counts")
}
