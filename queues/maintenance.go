package queues

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Built-in maintenance kinds, registered on a worker by RegisterMaintenance
// and usually enqueued by schedules.
const (
	// KindArchiveJobs moves done and dead jobs older than the retention from
	// jobs to jobs_archive.
	KindArchiveJobs = "archive_jobs"
	// KindPruneOutbox deletes published outbox events older than the
	// retention.
	KindPruneOutbox = "prune_outbox"
	// KindPruneInbox deletes consumer inbox records older than the
	// retention, which must exceed every redelivery window.
	KindPruneInbox = "prune_inbox"
	// KindPruneJobs deletes done jobs (not dead ones: those are the dead
	// letters) that finished longer ago than the retention. The scheduler
	// leader runs it by itself when SchedulerConfig.JobRetention is set.
	KindPruneJobs = "prune_jobs"
)

// MaintenanceConfig bounds what the maintenance kinds may do to the
// database. Zero values take the documented defaults.
type MaintenanceConfig struct {
	// BatchSize is the rows per statement (default 500); each batch is its
	// own short transaction.
	BatchSize int
	// Retention applies when a job's payload gives none: default 7 days for
	// archive_jobs, prune_outbox and prune_jobs, 30 days for prune_inbox.
	Retention time.Duration
	// MinInboxRetention is the shortest retention prune_inbox accepts
	// (default 7 days): the broker's redelivery and replay windows and the
	// restore window must be shorter.
	MinInboxRetention time.Duration
	// MaxWALBytesPerSecond pauses the run while the server's WAL rate is
	// above it (default 32 MiB/s; negative disables the check).
	MaxWALBytesPerSecond int64
	// MaxReplicaLagBytes pauses the run while any standby's replay lag is
	// above it (default 256 MiB; negative disables the check).
	MaxReplicaLagBytes int64
	// Pause is one pause step (default 1s); MaxPausePerBatch bounds the
	// pauses before one batch (default 1m), after which the run stops as
	// "stopped" rather than pile onto a struggling server.
	Pause            time.Duration
	MaxPausePerBatch time.Duration
	// MaxRuntime ends a run (as finished, to continue next time) after this
	// long (default 15m).
	MaxRuntime time.Duration
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

func (c MaintenanceConfig) withDefaults() MaintenanceConfig {
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.MinInboxRetention <= 0 {
		c.MinInboxRetention = 7 * 24 * time.Hour
	}
	if c.MaxWALBytesPerSecond == 0 {
		c.MaxWALBytesPerSecond = 32 << 20
	}
	if c.MaxReplicaLagBytes == 0 {
		c.MaxReplicaLagBytes = 256 << 20
	}
	if c.Pause <= 0 {
		c.Pause = time.Second
	}
	if c.MaxPausePerBatch <= 0 {
		c.MaxPausePerBatch = time.Minute
	}
	if c.MaxRuntime <= 0 {
		c.MaxRuntime = 15 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// MaintenanceParams is the JSON payload of a maintenance job; every field is
// optional.
type MaintenanceParams struct {
	// Retention is a Go duration ("168h"); rows younger are kept.
	Retention string `json:"retention,omitempty"`
	// BatchSize overrides the configured batch size.
	BatchSize int `json:"batch_size,omitempty"`
	// MaxBatches ends the run after this many batches (0 = until done).
	MaxBatches int `json:"max_batches,omitempty"`
}

// MaintenanceResult is what one run did, as also recorded in
// maintenance_runs.
type MaintenanceResult struct {
	RunID     int64
	Kind      string
	RowsMoved int64
	Batches   int
	// WALBytes is the WAL the server generated during the run (all
	// sessions, so an upper bound of the run's own share).
	WALBytes      int64
	PausedSeconds float64
	// Stopped says the run ended early: an operator asked (MaintenanceStopTx),
	// its context ended, or the server stayed over a threshold too long.
	Stopped bool
}

var maintenanceStatements = map[string]string{
	KindArchiveJobs: "maintenance_archive_jobs",
	KindPruneOutbox: "maintenance_prune_outbox",
	KindPruneInbox:  "maintenance_prune_inbox",
	KindPruneJobs:   "maintenance_prune_jobs",
}

// RunMaintenance runs one maintenance kind to completion in small batches:
// each batch one short statement, then a check of the stop flag, the
// server's WAL rate and the replicas' lag, pausing while either is over its
// threshold. It records its progress in maintenance_runs after every batch.
// Cancelling ctx stops it after the current batch; the result is still
// recorded and returned.
func RunMaintenance(ctx context.Context, pool *pgxpool.Pool, kind string, p MaintenanceParams, cfg MaintenanceConfig, jobID *int64) (MaintenanceResult, error) {
	cfg = cfg.withDefaults()
	stmt, ok := maintenanceStatements[kind]
	if !ok {
		return MaintenanceResult{}, fmt.Errorf("unknown maintenance kind %q", kind)
	}
	retention, err := maintenanceRetention(kind, p, cfg)
	if err != nil {
		return MaintenanceResult{}, err
	}
	batch := cfg.BatchSize
	if p.BatchSize > 0 {
		batch = p.BatchSize
	}
	params, _ := json.Marshal(map[string]any{"retention": retention.String(), "batch_size": batch, "max_batches": p.MaxBatches})
	res := MaintenanceResult{Kind: kind}
	if err := pool.QueryRow(ctx, sqlText("maintenance_run_start"), kind, jobID, params).Scan(&res.RunID); err != nil {
		return res, fmt.Errorf("record %s run: %w", kind, err)
	}
	log := cfg.Logger.With("kind", kind, "run_id", res.RunID)
	startWAL, _, err := walPosition(ctx, pool)
	if err != nil {
		return res, err
	}
	lastWAL, lastAt := startWAL, time.Now()
	deadline := time.Now().Add(cfg.MaxRuntime)

	// Progress is recorded even when ctx has ended.
	record := func(final string, runErr error) (bool, error) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if pos, _, err := walPosition(wctx, pool); err == nil {
			res.WALBytes = pos - startWAL
		}
		var finalState, errText *string
		if final != "" {
			finalState = &final
		}
		if runErr != nil {
			s := runErr.Error()
			errText = &s
		}
		var stop bool
		err := pool.QueryRow(wctx, sqlText("maintenance_run_progress"), res.RunID, res.RowsMoved, res.Batches,
			res.WALBytes, res.PausedSeconds, errText, finalState).Scan(&stop)
		if err != nil {
			return false, fmt.Errorf("record %s run %d progress: %w", kind, res.RunID, err)
		}
		return stop, nil
	}
	finish := func(state string, runErr error) (MaintenanceResult, error) {
		res.Stopped = state == "stopped"
		if _, err := record(state, runErr); err != nil && runErr == nil {
			runErr = err
		}
		log.Info("maintenance run ended", "state", state, "rows", res.RowsMoved, "batches", res.Batches,
			"wal_bytes", res.WALBytes, "paused_seconds", res.PausedSeconds)
		return res, runErr
	}

	for {
		if ctx.Err() != nil {
			return finish("stopped", nil)
		}
		if p.MaxBatches > 0 && res.Batches >= p.MaxBatches || time.Now().After(deadline) {
			return finish("finished", nil)
		}
		tag, err := pool.Exec(ctx, sqlText(stmt), retention.Milliseconds(), batch)
		if err != nil {
			if ctx.Err() != nil {
				return finish("stopped", nil)
			}
			return finish("failed", fmt.Errorf("%s batch %d: %w", kind, res.Batches+1, err))
		}
		res.Batches++
		res.RowsMoved += tag.RowsAffected()
		stop, err := record("", nil)
		if err != nil {
			return finish("failed", err)
		}
		if stop {
			return finish("stopped", nil)
		}
		if tag.RowsAffected() < int64(batch) {
			return finish("finished", nil)
		}
		// Throttle: pause while the server writes WAL too fast or a standby
		// lags, re-measuring over each pause.
		var paused time.Duration
		for {
			pos, lag, err := walPosition(ctx, pool)
			if err != nil {
				if ctx.Err() != nil {
					return finish("stopped", nil)
				}
				return finish("failed", err)
			}
			elapsed := time.Since(lastAt).Seconds()
			walRate := float64(pos-lastWAL) / max(elapsed, 0.001)
			lastWAL, lastAt = pos, time.Now()
			over := (cfg.MaxWALBytesPerSecond > 0 && walRate > float64(cfg.MaxWALBytesPerSecond)) ||
				(cfg.MaxReplicaLagBytes > 0 && lag > cfg.MaxReplicaLagBytes)
			if !over {
				break
			}
			if paused >= cfg.MaxPausePerBatch {
				log.Warn("maintenance stopping: server stayed over its WAL or lag threshold",
					"wal_bytes_per_second", int64(walRate), "replica_lag_bytes", lag)
				return finish("stopped", nil)
			}
			log.Debug("maintenance pausing", "wal_bytes_per_second", int64(walRate), "replica_lag_bytes", lag)
			t := time.NewTimer(cfg.Pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return finish("stopped", nil)
			case <-t.C:
			}
			paused += cfg.Pause
			res.PausedSeconds += cfg.Pause.Seconds()
		}
	}
}

func maintenanceRetention(kind string, p MaintenanceParams, cfg MaintenanceConfig) (time.Duration, error) {
	retention := cfg.Retention
	if p.Retention != "" {
		d, err := time.ParseDuration(p.Retention)
		if err != nil {
			return 0, Permanent(fmt.Errorf("%s retention %q: %w", kind, p.Retention, err))
		}
		retention = d
	}
	if retention <= 0 {
		retention = 7 * 24 * time.Hour
		if kind == KindPruneInbox {
			retention = 30 * 24 * time.Hour
		}
	}
	if kind == KindPruneInbox && retention < cfg.MinInboxRetention {
		return 0, Permanent(fmt.Errorf("prune_inbox retention %s is below the minimum %s: a redelivery after pruning would be applied twice",
			retention, cfg.MinInboxRetention))
	}
	return retention, nil
}

func walPosition(ctx context.Context, db DBTX) (pos, lag int64, err error) {
	if err := db.QueryRow(ctx, sqlText("maintenance_wal_position")).Scan(&pos, &lag); err != nil {
		return 0, 0, fmt.Errorf("read WAL position: %w", err)
	}
	return pos, lag, nil
}

// RegisterMaintenance registers the archive_jobs, prune_outbox,
// prune_inbox and prune_jobs kinds on c. Each job's payload is a MaintenanceParams; a job
// is stopped early by its context (worker shutdown, cancellation) or by
// MaintenanceStopTx, and is not retried then.
func RegisterMaintenance(c *Client, cfg MaintenanceConfig) {
	for kind := range maintenanceStatements {
		c.Handle(kind, func(ctx context.Context, job *Job) error {
			var p MaintenanceParams
			if len(job.Payload) > 0 {
				if err := json.Unmarshal(job.Payload, &p); err != nil {
					return Permanent(fmt.Errorf("%s payload: %w", kind, err))
				}
			}
			id := job.ID
			_, err := RunMaintenance(ctx, c.pool, kind, p, cfg, &id)
			return err
		})
	}
}

// MaintenanceStopTx asks a running maintenance run to stop after its current
// batch, in the caller's transaction (the action commits it with its audit
// row). ErrNotFound when the run is not running.
func MaintenanceStopTx(ctx context.Context, db DBTX, runID int64) error {
	tag, err := db.Exec(ctx, sqlText("maintenance_stop"), runID)
	if err != nil {
		return fmt.Errorf("stop maintenance run %d: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("running maintenance run %d: %w", runID, ErrNotFound)
	}
	return nil
}

// MaintenanceRun is one row of maintenance_runs.
type MaintenanceRun struct {
	ID            int64           `db:"id" json:"id"`
	Kind          string          `db:"kind" json:"kind"`
	JobID         *int64          `db:"job_id" json:"job_id,omitempty"`
	Params        json.RawMessage `db:"params" json:"params"`
	State         string          `db:"state" json:"state"`
	RowsMoved     int64           `db:"rows_moved" json:"rows_moved"`
	Batches       int             `db:"batches" json:"batches"`
	WALBytes      int64           `db:"wal_bytes" json:"wal_bytes"`
	PausedSeconds float64         `db:"paused_seconds" json:"paused_seconds"`
	StopRequested bool            `db:"stop_requested" json:"stop_requested"`
	LastError     *string         `db:"last_error" json:"last_error,omitempty"`
	StartedAt     time.Time       `db:"started_at" json:"started_at"`
	UpdatedAt     time.Time       `db:"updated_at" json:"updated_at"`
	FinishedAt    *time.Time      `db:"finished_at" json:"finished_at,omitempty"`
}

// MaintenanceRunList returns the latest maintenance runs, newest first
// (limit defaults to 50).
func MaintenanceRunList(ctx context.Context, db DBTX, limit int) ([]MaintenanceRun, error) {
	return collectRows[MaintenanceRun](ctx, db, "maintenance_run_list", "list maintenance runs", limitOr(limit, 50))
}
