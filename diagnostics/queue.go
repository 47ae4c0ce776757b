package diagnostics

import (
	"context"

	"github.com/pgconsole/console/queues"
)

// QueueStat is one queue's health, the engine's row (queues.QueueHealth).
type QueueStat = queues.QueueStat

// DefaultCountCap is where the queue and outbox counts stop when their cap
// is zero: a count equal to the cap means "at least that many".
const DefaultCountCap = queues.DefaultCountCap

// QueueParams are the arguments of the queue health and dead-letter reads.
type QueueParams = queues.QueueHealthParams

// QueueHealth runs the engine's queue health (queues.QueueHealth) as a
// panel, with the thresholds' window for recent dead letters.
func (d *Diagnostics) QueueHealth(ctx context.Context) Result[QueueStat] {
	return panel(ctx, d, CheckQueueHealth, inDeadWindow(d, queues.QueueHealth))
}

// DeadLetterGroup is the dead jobs of one queue and error class.
type DeadLetterGroup = queues.DeadLetterClassStat

// DeadLetters groups dead jobs by queue and error class, the most recent
// burst first, with the engine's bounded statement
// (queues.DeadLetterClassStats): at most 200 groups, counts capped.
func DeadLetters(ctx context.Context, db DBTX, p QueueParams) ([]DeadLetterGroup, error) {
	return queues.DeadLetterClassStats(ctx, db, p.DeadLetterStats())
}

// DeadLetters runs the dead-letter grouping as a panel.
func (d *Diagnostics) DeadLetters(ctx context.Context) Result[DeadLetterGroup] {
	return panel(ctx, d, CheckDeadLetters, inDeadWindow(d, DeadLetters))
}

// OutboxStat is the outbox relay's backlog, the engine's row
// (queues.OutboxHealth).
type OutboxStat = queues.OutboxStat

// OutboxHealth runs the engine's outbox health (queues.OutboxHealth) as a
// panel.
func (d *Diagnostics) OutboxHealth(ctx context.Context) Result[OutboxStat] {
	return panel(ctx, d, CheckOutboxHealth, func(ctx context.Context, db DBTX, _ int) ([]OutboxStat, error) {
		o, err := queues.OutboxHealth(ctx, db, 0)
		if err != nil {
			return nil, err
		}
		return []OutboxStat{o}, nil
	})
}

// Worker is one engine process of the workers table, the engine's row
// (queues.WorkerList).
type Worker = queues.Worker

// Workers runs the engine's worker list as a panel, alive meaning a
// heartbeat within the workers.none_alive threshold.
func (d *Diagnostics) Workers(ctx context.Context) Result[Worker] {
	return panel(ctx, d, CheckWorkers, func(ctx context.Context, db DBTX, _ int) ([]Worker, error) {
		return queues.WorkerList(ctx, db, d.Thresholds().WorkerHeartbeat)
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
