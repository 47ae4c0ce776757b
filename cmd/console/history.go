package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/queues"
)

// pruneHistoryPayload is the payload of a prune_history job; every field is
// optional (defaults: 7 days, 512 MiB).
type pruneHistoryPayload struct {
	// Retention is a Go duration ("168h").
	Retention string `json:"retention,omitempty"`
	// MaxBytes caps the kept documents; negative means no cap.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// registerPruneHistory makes the engine's workers run the prune_history
// maintenance kind, which the migration schedules every 15 minutes.
func registerPruneHistory(c *queues.Client, pool *pgxpool.Pool, logger *slog.Logger) {
	c.Handle(recorder.KindPruneHistory, func(ctx context.Context, job *queues.Job) error {
		var p pruneHistoryPayload
		if len(job.Payload) > 0 {
			if err := json.Unmarshal(job.Payload, &p); err != nil {
				return queues.Permanent(fmt.Errorf("prune_history payload: %w", err))
			}
		}
		params := recorder.HistoryPruneParams{MaxBytes: p.MaxBytes}
		if p.Retention != "" {
			d, err := time.ParseDuration(p.Retention)
			if err != nil || d <= 0 {
				return queues.Permanent(fmt.Errorf("prune_history retention %q: use a positive Go duration such as 168h", p.Retention))
			}
			params.Retention = d
		}
		n, err := recorder.HistoryPrune(ctx, pool, params)
		if err != nil {
			return err
		}
		// Lock episodes are pruned with the history they complete, on
		// their own defaults (30 days, 512 MiB).
		eps, err := episodes.Prune(ctx, pool, episodes.PruneParams{})
		if err != nil {
			return err
		}
		logger.Info("history pruned", "samples", n, "lock_episodes", eps, "job_id", job.ID)
		return nil
	})
}

// recorderName names this console in the history it records: host and pid.
func recorderName() string {
	host, err := os.Hostname()
	if err != nil {
		host = "console"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// pruneHistorySchedule is the schedule that enqueues prune_history.
const pruneHistorySchedule = "prune-history"

// ensurePruneHistorySchedule creates the prune-history schedule (every 15
// minutes on the maintenance queue) unless a schedule of that name exists;
// operators may change or disable it like any other. Several consoles
// starting at once may race: a duplicate is not an error.
func ensurePruneHistorySchedule(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := queues.ScheduleGet(ctx, pool, pruneHistorySchedule); err == nil {
		return nil
	} else if !errors.Is(err, queues.ErrNotFound) {
		return fmt.Errorf("read the %s schedule: %w", pruneHistorySchedule, err)
	}
	_, err := queues.ScheduleCreate(ctx, pool, queues.ScheduleParams{Name: pruneHistorySchedule, Spec: "*/15 * * * *",
		Kind: recorder.KindPruneHistory, Queue: "maintenance", By: "console"})
	if err != nil {
		if _, again := queues.ScheduleGet(ctx, pool, pruneHistorySchedule); again == nil {
			return nil
		}
		return fmt.Errorf("create the %s schedule: %w", pruneHistorySchedule, err)
	}
	return nil
}
