package diagnostics

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/queues"
)

// QueueStat is one queue's health: backlog, leases, dead letters and the
// operator's settings.
type QueueStat struct {
	Queue              string     `db:"queue" json:"queue"`
	Ready              int64      `db:"ready" json:"ready"`
	Scheduled          int64      `db:"scheduled" json:"scheduled"`
	OldestReadyAt      *time.Time `db:"oldest_ready_at" json:"oldest_ready_at"`
	OldestReadySeconds float64    `db:"oldest_ready_seconds" json:"oldest_ready_seconds"`
	Running            int64      `db:"running" json:"running"`
	ExpiredLeases      int64      `db:"expired_leases" json:"expired_leases"`
	OldestExpiredLease *time.Time `db:"oldest_expired_lease" json:"oldest_expired_lease"`
	// Dead is exact.
	Dead int64 `db:"dead" json:"dead"`
	// DeadRecent counts jobs that died within QueueParams.DeadWindow.
	// Scheduled and DeadRecent stop at QueueParams.CountCap. Running is
	// exact; Ready is exact while Scheduled is below the cap (it is the
	// queue's exact ready total minus Scheduled), an upper bound when
	// Scheduled reached it.
	DeadRecent        int64      `db:"dead_recent" json:"dead_recent"`
	Paused            bool       `db:"paused" json:"paused"`
	MaxWorkers        *int32     `db:"max_workers" json:"max_workers"`
	RatePerSecond     *float64   `db:"rate_per_second" json:"rate_per_second"`
	SettingsUpdatedBy string     `db:"settings_updated_by" json:"settings_updated_by"`
	SettingsUpdatedAt *time.Time `db:"settings_updated_at" json:"settings_updated_at"`
}

// DefaultCountCap is where the queue counts stop when QueueParams.CountCap
// is zero: a count equal to the cap means "at least that many".
const DefaultCountCap = 10_000

// defaultDeadWindow is the window of "recent" dead letters for panels.
const defaultDeadWindow = 15 * time.Minute

// QueueParams are the arguments of QueueHealth and DeadLetters.
type QueueParams struct {
	// DeadWindow is how far back a dead letter counts as recent (DeadRecent);
	// zero means 15 minutes.
	DeadWindow time.Duration
	// CountCap bounds every count so its cost stays bounded on a huge
	// backlog; zero means DefaultCountCap.
	CountCap int64
}

func (p QueueParams) withDefaults() QueueParams {
	if p.DeadWindow <= 0 {
		p.DeadWindow = defaultDeadWindow
	}
	if p.CountCap <= 0 {
		p.CountCap = DefaultCountCap
	}
	return p
}

// QueueHealth reads every queue's ready and running totals from the
// engine's counters and its oldest ready job, scheduled jobs and expired
// leases through probes of the partial indexes (queue_health.sql), and its
// dead letters from the queues package (queues.DeadLetterClassStatsAll:
// exact totals, recent counts capped), so the dead-letter walk has one
// owner. Queues with only dead letters are listed too, in name order with
// the rest.
func QueueHealth(ctx context.Context, db DBTX, p QueueParams) ([]QueueStat, error) {
	stats, _, err := queueHealth(ctx, db, p)
	return stats, err
}

// queueHealth is QueueHealth, also returning every dead-letter group it
// summed (queues.DeadLetterClassStatsAll), so a findings round answers the
// dead-letter check from the same read.
func queueHealth(ctx context.Context, db DBTX, p QueueParams) ([]QueueStat, []DeadLetterGroup, error) {
	p = p.withDefaults()
	q, err := sqlText(CheckQueueHealth, 0)
	if err != nil {
		return nil, nil, err
	}
	rows, err := db.Query(ctx, q, p.CountCap)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CheckQueueHealth, err)
	}
	// Lax: dead and dead_recent come from the second read.
	stats, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[QueueStat])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CheckQueueHealth, err)
	}
	groups, dead, err := queues.DeadLetterClassStatsAll(ctx, db, p.deadLetterStats())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", CheckQueueHealth, err)
	}
	return mergeDeadCounts(stats, dead), groups, nil
}

// deadLetterStats are the queues package's parameters for p (the default
// of at most 200 groups).
func (p QueueParams) deadLetterStats() queues.DeadLetterStatsParams {
	return queues.DeadLetterStatsParams{Window: p.DeadWindow, CountCap: p.CountCap}
}

// mergeDeadCounts sets each queue's dead counts, adding the queues that have
// nothing but dead letters; both inputs and the result are in queue order.
func mergeDeadCounts(stats []QueueStat, dead []queues.DeadLetterQueueCount) []QueueStat {
	out := make([]QueueStat, 0, len(stats)+len(dead))
	i, k := 0, 0
	for i < len(stats) || k < len(dead) {
		switch {
		case k == len(dead) || (i < len(stats) && stats[i].Queue < dead[k].Queue):
			out = append(out, stats[i])
			i++
		case i == len(stats) || dead[k].Queue < stats[i].Queue:
			out = append(out, QueueStat{Queue: dead[k].Queue, Dead: dead[k].Dead, DeadRecent: dead[k].DeadRecent})
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

// queueHealthSQL is what QueueHealth runs, both statements, for the panel
// that shows operators its SQL.
func queueHealthSQL() string {
	q, _ := sqlText(CheckQueueHealth, 0)
	return q + "\n-- then the dead letters of every queue, summed by queue:\n" + queues.DeadLetterClassStatsSQL()
}

// QueueHealth runs queue_health.sql as a panel, with a 15-minute window for
// recent dead letters.
func (d *Diagnostics) QueueHealth(ctx context.Context) Result[QueueStat] {
	return panel(ctx, d, CheckQueueHealth, inDeadWindow(d, QueueHealth))
}

// DeadLetterGroup is the dead jobs of one queue and error class.
type DeadLetterGroup = queues.DeadLetterClassStat

// DeadLetters groups dead jobs by queue and error class, the most recent
// burst first, with the engine's bounded statement
// (queues.DeadLetterClassStats): at most 200 groups, counts capped.
func DeadLetters(ctx context.Context, db DBTX, p QueueParams) ([]DeadLetterGroup, error) {
	p = p.withDefaults()
	return queues.DeadLetterClassStats(ctx, db, p.deadLetterStats())
}

// DeadLetters runs the dead-letter grouping as a panel.
func (d *Diagnostics) DeadLetters(ctx context.Context) Result[DeadLetterGroup] {
	return panel(ctx, d, CheckDeadLetters, inDeadWindow(d, DeadLetters))
}

// OutboxStat is the outbox relay's backlog.
type OutboxStat struct {
	Pending              int64      `db:"pending" json:"pending"`
	PendingLater         int64      `db:"pending_later" json:"pending_later"`
	OldestPendingAt      *time.Time `db:"oldest_pending_at" json:"oldest_pending_at"`
	OldestPendingSeconds float64    `db:"oldest_pending_seconds" json:"oldest_pending_seconds"`
	Inflight             int64      `db:"inflight" json:"inflight"`
	ExpiredLeases        int64      `db:"expired_leases" json:"expired_leases"`
	Dead                 int64      `db:"dead" json:"dead"`
	LastDeadAt           *time.Time `db:"last_dead_at" json:"last_dead_at"`
	RelayPaused          bool       `db:"relay_paused" json:"relay_paused"`
	// AcceptedUnmarked counts the undelivered events the broker accepted
	// (accepted_at set) that the relay has not marked published: its mark
	// failed, or it died between recording the acceptance and the mark.
	// Each will be published again. OldestAcceptedAt is the earliest
	// acceptance among them, AcceptedUnmarkedIDs the ten oldest ids.
	AcceptedUnmarked    int64      `db:"accepted_unmarked" json:"accepted_unmarked"`
	OldestAcceptedAt    *time.Time `db:"oldest_accepted_at" json:"oldest_accepted_at"`
	AcceptedUnmarkedIDs []int64    `db:"accepted_unmarked_ids" json:"accepted_unmarked_ids"`
}

// OutboxHealth reads the outbox backlog through its partial indexes
// (outbox_health.sql); counts stop at countCap (zero means
// DefaultCountCap).
func OutboxHealth(ctx context.Context, db DBTX, countCap int64) (OutboxStat, error) {
	if countCap <= 0 {
		countCap = DefaultCountCap
	}
	return collectOne[OutboxStat](ctx, db, CheckOutboxHealth, 0, countCap)
}

// OutboxHealth runs outbox_health.sql as a panel.
func (d *Diagnostics) OutboxHealth(ctx context.Context) Result[OutboxStat] {
	return panel(ctx, d, CheckOutboxHealth, func(ctx context.Context, db DBTX, _ int) ([]OutboxStat, error) {
		o, err := OutboxHealth(ctx, db, 0)
		if err != nil {
			return nil, err
		}
		return []OutboxStat{o}, nil
	})
}

// Worker is one engine process of the workers table.
type Worker struct {
	ID              string     `db:"id" json:"id"`
	Host            string     `db:"host" json:"host"`
	PID             int32      `db:"pid" json:"pid"`
	Queues          []string   `db:"queues" json:"queues"`
	Concurrency     int32      `db:"concurrency" json:"concurrency"`
	InFlight        int32      `db:"in_flight" json:"in_flight"`
	Version         string     `db:"version" json:"version"`
	StartedAt       time.Time  `db:"started_at" json:"started_at"`
	LastSeenAt      time.Time  `db:"last_seen_at" json:"last_seen_at"`
	StoppedAt       *time.Time `db:"stopped_at" json:"stopped_at"`
	LastSeenSeconds float64    `db:"last_seen_seconds" json:"last_seen_seconds"`
	// Alive is not stopped and heartbeated within the window passed to
	// Workers.
	Alive bool `db:"alive" json:"alive"`
	// RecentErrors are the last engine errors the worker met talking to the
	// database (claims, acks, renewals...), newest last, as of its last
	// heartbeat.
	RecentErrors []queues.EngineError `db:"recent_errors" json:"recent_errors"`
	// ReclaimedAt is when another process found this worker dead (its
	// heartbeat stale and its session gone from the server) and took back
	// its ReclaimedJobs running jobs at once, before their leases expired.
	ReclaimedAt   *time.Time `db:"reclaimed_at" json:"reclaimed_at,omitempty"`
	ReclaimedJobs int32      `db:"reclaimed_jobs" json:"reclaimed_jobs,omitempty"`
}

// LastError is the worker's newest engine error as one line ("claim 53100:
// could not extend file ..."), or "" when it reported none.
func (w Worker) LastError() string {
	if len(w.RecentErrors) == 0 {
		return ""
	}
	e := w.RecentErrors[len(w.RecentErrors)-1]
	return EngineErrorText(e)
}

// EngineErrorText renders an engine error for panels and evidence (one
// line: operation, SQLSTATE, message).
func EngineErrorText(e queues.EngineError) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s: %s", e.Op, e.SQLState, e.Error))
}

// Serves reports whether the worker works queue (an empty list means every
// queue).
func (w Worker) Serves(queue string) bool {
	if len(w.Queues) == 0 {
		return true
	}
	for _, q := range w.Queues {
		if q == queue {
			return true
		}
	}
	return false
}

// Workers lists engine processes with their heartbeat age (workers.sql);
// aliveWindow decides Alive.
func Workers(ctx context.Context, db DBTX, aliveWindow time.Duration) ([]Worker, error) {
	return collect[Worker](ctx, db, CheckWorkers, 0, aliveWindow.Seconds())
}

// Workers runs workers.sql as a panel.
func (d *Diagnostics) Workers(ctx context.Context) Result[Worker] {
	return panel(ctx, d, CheckWorkers, func(ctx context.Context, db DBTX, _ int) ([]Worker, error) {
		return Workers(ctx, db, d.Thresholds().WorkerHeartbeat)
	})
}

// queueTables are the tables of the queue engine (a fixed set, so labels
// and panels built from it stay bounded).
var queueTables = map[string]bool{
	"jobs": true, "jobs_archive": true, "outbox_events": true, "consumer_inbox": true,
	"idempotency_requests": true, "queue_settings": true, "workers": true, "schedules": true,
}

// inDeadWindow adapts a query over the queues to panel, counting as recent
// the dead letters of the current thresholds' DeadLetterWindow.
func inDeadWindow[T any](d *Diagnostics, fn func(context.Context, DBTX, QueueParams) ([]T, error)) func(context.Context, DBTX, int) ([]T, error) {
	return func(ctx context.Context, db DBTX, _ int) ([]T, error) {
		return fn(ctx, db, QueueParams{DeadWindow: d.Thresholds().DeadLetterWindow})
	}
}
