package queues

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// QueueStat is one queue's health, as the console's pages, findings,
// metrics and flight recorder all read it: the same row live and recorded.
// Its JSON names are those of the recorded samples, so a sample of any age
// decodes into it.
type QueueStat struct {
	Queue string `db:"queue" json:"queue"`
	// Ready counts the ready jobs due now, Scheduled the ready jobs due
	// later. Scheduled stops at CountCap; Ready is the queue's exact ready
	// total (queue_job_counts) minus Scheduled, so it is exact while
	// ReadyExact and an upper bound otherwise.
	Ready     int64 `db:"ready" json:"ready"`
	Scheduled int64 `db:"scheduled" json:"scheduled"`
	// CountCap is where Scheduled and DeadRecent stopped; zero in samples
	// recorded before it was kept, which were counted to DefaultCountCap.
	CountCap int64 `db:"count_cap" json:"count_cap,omitempty"`
	// OldestReadyAt is when the oldest due job became due (nil when none
	// is), OldestReadySeconds how long ago that was.
	OldestReadyAt      *time.Time `db:"oldest_ready_at" json:"oldest_ready_at"`
	OldestReadySeconds float64    `db:"oldest_ready_seconds" json:"oldest_ready_seconds"`
	// Running counts leased jobs, exactly (queue_job_counts);
	// ExpiredLeases those whose lease is past (a dead or stalled worker the
	// reaper has not handled yet), OldestExpiredLease the earliest expiry.
	Running            int64      `db:"running" json:"running"`
	ExpiredLeases      int64      `db:"expired_leases" json:"expired_leases"`
	OldestExpiredLease *time.Time `db:"oldest_expired_lease" json:"oldest_expired_lease"`
	// Dead is exact; DeadRecent counts the jobs that died within
	// QueueHealthParams.DeadWindow, up to CountCap
	// (DeadLetterClassStatsAll).
	Dead       int64 `db:"-" json:"dead"`
	DeadRecent int64 `db:"-" json:"dead_recent"`
	// DoneApprox is estimated from planner statistics (0 when unknown):
	// counting finished rows exactly would need a full scan (QueueCounts).
	DoneApprox        int64      `db:"-" json:"done_approx,omitempty"`
	Paused            bool       `db:"paused" json:"paused"`
	MaxWorkers        *int       `db:"max_workers" json:"max_workers"`
	RatePerSecond     *float64   `db:"rate_per_second" json:"rate_per_second"`
	SettingsUpdatedBy string     `db:"settings_updated_by" json:"settings_updated_by"`
	SettingsUpdatedAt *time.Time `db:"settings_updated_at" json:"settings_updated_at"`
}

// ReadyTotal is every job of the queue in status ready: due now or
// scheduled for later.
func (q QueueStat) ReadyTotal() int64 { return q.Ready + q.Scheduled }

// ReadyExact reports whether Ready is exact: the count of scheduled jobs
// stopped below its cap.
func (q QueueStat) ReadyExact() bool {
	return q.Scheduled < cmp.Or(q.CountCap, DefaultCountCap)
}

// DefaultCountCap is where the bounded counts of QueueHealth, OutboxHealth
// and IdempotencyStuck stop when their cap is zero: a count equal to the
// cap means "at least that many".
const DefaultCountCap = 10_000

// QueueHealthParams bound QueueHealth's reads.
type QueueHealthParams struct {
	// DeadWindow is how far back a dead letter counts as recent
	// (QueueStat.DeadRecent); zero means 15 minutes.
	DeadWindow time.Duration
	// CountCap bounds the counts taken from the jobs themselves, so their
	// cost stays bounded on a huge backlog; zero means DefaultCountCap.
	CountCap int64
}

// DeadLetterStats are the parameters of the dead-letter read QueueHealth
// makes for p (at most DefaultDeadLetterGroups groups).
func (p QueueHealthParams) DeadLetterStats() DeadLetterStatsParams {
	return DeadLetterStatsParams{Window: cmp.Or(p.DeadWindow, 15*time.Minute), CountCap: cmp.Or(p.CountCap, DefaultCountCap)}
}

// QueueHealth returns every queue's health (QueueStat), in queue name
// order, at a cost that follows the number of queues, not the backlog or
// the history: ready and running from the engine's counters and its oldest
// due job, scheduled jobs and expired leases through probes of the partial
// indexes (queue_health.sql), dead letters from DeadLetterClassStatsAll and
// the done estimate from QueueCounts, so each has one statement. Queues
// with only dead letters or only settings are listed too.
func QueueHealth(ctx context.Context, db DBTX, p QueueHealthParams) ([]QueueStat, error) {
	stats, _, err := QueueHealthAll(ctx, db, p)
	return stats, err
}

// QueueHealthAll is QueueHealth, also returning every dead-letter group it
// summed (DeadLetterClassStatsAll, in its order), so a caller that shows
// both reads the dead letters once.
func QueueHealthAll(ctx context.Context, db DBTX, p QueueHealthParams) ([]QueueStat, []DeadLetterClassStat, error) {
	dp := p.DeadLetterStats()
	stats, err := collectRows[QueueStat](ctx, db, "queue_health", "queue health", dp.CountCap)
	if err != nil {
		return nil, nil, err
	}
	groups, dead, err := DeadLetterClassStatsAll(ctx, db, dp)
	if err != nil {
		return nil, nil, fmt.Errorf("queue health: %w", err)
	}
	counts, err := QueueCounts(ctx, db)
	if err != nil {
		return nil, nil, fmt.Errorf("queue health: %w", err)
	}
	stats = mergeDeadCounts(stats, dead, dp.CountCap)
	done := make(map[string]int64, len(counts))
	for _, c := range counts {
		done[c.Queue] = c.DoneApprox
	}
	for i := range stats {
		stats[i].DoneApprox = done[stats[i].Queue]
	}
	return stats, groups, nil
}

// QueueDoneRecentWindow is how many of the newest done jobs
// QueueDoneRecent reads when its window is zero.
const QueueDoneRecentWindow = 10_000

// QueueDoneRecent counts the jobs of queue among the newest window done
// jobs (zero means QueueDoneRecentWindow): a queue whose jobs are all done
// is in no count QueueHealth reads, and a positive answer says it exists.
// Zero means none of them: the queue's done jobs are older, or it has none.
func QueueDoneRecent(ctx context.Context, db DBTX, queue string, window int64) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, sqlText("queue_done_recent"), queue, cmp.Or(max(window, 0), QueueDoneRecentWindow)).Scan(&n); err != nil {
		return 0, fmt.Errorf("count recent done jobs of queue %q: %w", queue, err)
	}
	return n, nil
}

// QueueHealthSQL is what QueueHealth runs, every statement, for the panel
// that shows operators its SQL.
func QueueHealthSQL() string {
	return sqlText("queue_health") +
		"\n-- then the dead letters of every queue, summed by queue:\n" + sqlText("dead_letter_class_stats") +
		"\n-- then the done estimate of every queue:\n" + sqlText("queue_counts")
}

// mergeDeadCounts sets each queue's dead counts, adding the queues that
// have nothing but dead letters; both inputs and the result are in queue
// order.
func mergeDeadCounts(stats []QueueStat, dead []DeadLetterQueueCount, countCap int64) []QueueStat {
	out := make([]QueueStat, 0, len(stats)+len(dead))
	i, k := 0, 0
	for i < len(stats) || k < len(dead) {
		switch {
		case k == len(dead) || (i < len(stats) && stats[i].Queue < dead[k].Queue):
			out = append(out, stats[i])
			i++
		case i == len(stats) || dead[k].Queue < stats[i].Queue:
			out = append(out, QueueStat{Queue: dead[k].Queue, CountCap: countCap, Dead: dead[k].Dead, DeadRecent: dead[k].DeadRecent})
			k++
		default:
			s := stats[i]
			s.Dead, s.DeadRecent = dead[k].Dead, dead[k].DeadRecent
			out = append(out, s)
			i, k = i+1, k+1
		}
	}
	return out
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
// probe of the backlog, unlike QueueHealth), so its cost follows the number
// of queues and error classes only, for pages that show counts on every
// request (the job list's tabs).
func QueueCounts(ctx context.Context, db DBTX) ([]QueueCount, error) {
	return collectRows[QueueCount](ctx, db, "queue_counts", "queue counts")
}
