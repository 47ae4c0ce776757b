package diagnostics

import (
	"context"
	"time"
)

// WALPoint is the server's WAL position at one instant: two of them give the
// WAL rate.
type WALPoint struct {
	InRecovery bool      `db:"in_recovery" json:"in_recovery"`
	LSN        string    `db:"lsn" json:"lsn"`
	LSNBytes   int64     `db:"lsn_bytes" json:"lsn_bytes"`
	SampledAt  time.Time `db:"sampled_at" json:"sampled_at"`
}

// WALPosition reads the current WAL position (wal_position.sql).
func WALPosition(ctx context.Context, db DBTX) (WALPoint, error) {
	return collectOne[WALPoint](ctx, db, CheckWALPosition, 0)
}

// WALPosition runs wal_position.sql as a panel.
func (d *Diagnostics) WALPosition(ctx context.Context) Result[WALPoint] {
	return panel(ctx, d, CheckWALPosition, one(WALPosition))
}

// WALRate is the WAL generated per second between two positions, or 0 when
// they are not in order.
func WALRate(from, to WALPoint) float64 {
	dt := to.SampledAt.Sub(from.SampledAt).Seconds()
	if dt <= 0 || to.LSNBytes < from.LSNBytes {
		return 0
	}
	return float64(to.LSNBytes-from.LSNBytes) / dt
}

// WALStat is pg_stat_wal: cumulative WAL counters since StatsReset. The
// write/sync fields are nil on PostgreSQL 18, which moved them to pg_stat_io.
type WALStat struct {
	Records     int64      `db:"wal_records" json:"wal_records"`
	FPI         int64      `db:"wal_fpi" json:"wal_fpi"`
	Bytes       int64      `db:"wal_bytes" json:"wal_bytes"`
	BuffersFull int64      `db:"wal_buffers_full" json:"wal_buffers_full"`
	Write       *int64     `db:"wal_write" json:"wal_write"`
	Sync        *int64     `db:"wal_sync" json:"wal_sync"`
	WriteTimeMS *float64   `db:"wal_write_time_ms" json:"wal_write_time_ms"`
	SyncTimeMS  *float64   `db:"wal_sync_time_ms" json:"wal_sync_time_ms"`
	StatsReset  *time.Time `db:"stats_reset" json:"stats_reset"`
}

// WALStats reads pg_stat_wal (wal_stats.sql; wal_stats_v18.sql on 18+).
func WALStats(ctx context.Context, db DBTX, version int) (WALStat, error) {
	return collectOne[WALStat](ctx, db, CheckWALStats, version)
}

// WALStats runs wal_stats.sql (or its version variant) as a panel.
func (d *Diagnostics) WALStats(ctx context.Context) Result[WALStat] {
	return panel(ctx, d, CheckWALStats, oneV(WALStats))
}

// IOStat is one row of pg_stat_io: cumulative I/O of one backend type on one
// object in one context, in operations and bytes.
type IOStat struct {
	BackendType     string     `db:"backend_type" json:"backend_type"`
	Object          string     `db:"object" json:"object"`
	Context         string     `db:"context" json:"context"`
	Reads           int64      `db:"reads" json:"reads"`
	ReadBytes       int64      `db:"read_bytes" json:"read_bytes"`
	ReadTimeMS      float64    `db:"read_time_ms" json:"read_time_ms"`
	Writes          int64      `db:"writes" json:"writes"`
	WriteBytes      int64      `db:"write_bytes" json:"write_bytes"`
	WriteTimeMS     float64    `db:"write_time_ms" json:"write_time_ms"`
	Extends         int64      `db:"extends" json:"extends"`
	ExtendBytes     int64      `db:"extend_bytes" json:"extend_bytes"`
	Writebacks      int64      `db:"writebacks" json:"writebacks"`
	WritebackTimeMS float64    `db:"writeback_time_ms" json:"writeback_time_ms"`
	Fsyncs          int64      `db:"fsyncs" json:"fsyncs"`
	FsyncTimeMS     float64    `db:"fsync_time_ms" json:"fsync_time_ms"`
	Hits            int64      `db:"hits" json:"hits"`
	Evictions       int64      `db:"evictions" json:"evictions"`
	StatsReset      *time.Time `db:"stats_reset" json:"stats_reset"`
}

// IOStats reads pg_stat_io (io_stats.sql on 16 and 17, io_stats_v18.sql on
// 18+); ErrUnsupported before 16.
func IOStats(ctx context.Context, db DBTX, version int) ([]IOStat, error) {
	return collect[IOStat](ctx, db, CheckIOStats, version)
}

// IOStats runs io_stats.sql (or its version variant) as a panel; the Result
// carries ErrUnsupported before PostgreSQL 16.
func (d *Diagnostics) IOStats(ctx context.Context) Result[IOStat] {
	return panel(ctx, d, CheckIOStats, IOStats)
}

// CheckpointerStat is the checkpointer's and background writer's cumulative
// counters, in one shape whatever the version. BuffersBackend is nil on 17+.
type CheckpointerStat struct {
	CheckpointsTimed     int64      `db:"checkpoints_timed" json:"checkpoints_timed"`
	CheckpointsRequested int64      `db:"checkpoints_requested" json:"checkpoints_requested"`
	WriteTimeMS          float64    `db:"write_time_ms" json:"write_time_ms"`
	SyncTimeMS           float64    `db:"sync_time_ms" json:"sync_time_ms"`
	BuffersCheckpoint    int64      `db:"buffers_checkpoint" json:"buffers_checkpoint"`
	BuffersClean         int64      `db:"buffers_clean" json:"buffers_clean"`
	MaxwrittenClean      int64      `db:"maxwritten_clean" json:"maxwritten_clean"`
	BuffersBackend       *int64     `db:"buffers_backend" json:"buffers_backend"`
	BuffersAlloc         int64      `db:"buffers_alloc" json:"buffers_alloc"`
	StatsReset           *time.Time `db:"stats_reset" json:"stats_reset"`
	BgwriterStatsReset   *time.Time `db:"bgwriter_stats_reset" json:"bgwriter_stats_reset"`
	// MaxWALSize (bytes) and CheckpointTimeout (seconds) are the settings
	// that request a checkpoint or time one.
	MaxWALSize        int64   `db:"max_wal_size" json:"max_wal_size"`
	CheckpointTimeout float64 `db:"checkpoint_timeout" json:"checkpoint_timeout"`
}

// Checkpointer reads the checkpoint and background-writer counters
// (checkpointer.sql from pg_stat_bgwriter before 17, checkpointer_v17.sql
// from pg_stat_checkpointer on 17+).
func Checkpointer(ctx context.Context, db DBTX, version int) (CheckpointerStat, error) {
	return collectOne[CheckpointerStat](ctx, db, CheckCheckpointer, version)
}

// Checkpointer runs checkpointer.sql (or its version variant) as a panel.
func (d *Diagnostics) Checkpointer(ctx context.Context) Result[CheckpointerStat] {
	return panel(ctx, d, CheckCheckpointer, oneV(Checkpointer))
}

// CopyRun is one COPY in progress.
type CopyRun struct {
	PID             int32   `db:"pid" json:"pid"`
	Database        string  `db:"datname" json:"database"`
	Relation        string  `db:"relation" json:"relation"`
	Command         string  `db:"command" json:"command"`
	Type            string  `db:"type" json:"type"`
	BytesProcessed  int64   `db:"bytes_processed" json:"bytes_processed"`
	BytesTotal      int64   `db:"bytes_total" json:"bytes_total"`
	TuplesProcessed int64   `db:"tuples_processed" json:"tuples_processed"`
	TuplesExcluded  int64   `db:"tuples_excluded" json:"tuples_excluded"`
	TuplesSkipped   *int64  `db:"tuples_skipped" json:"tuples_skipped"`
	RunningSeconds  float64 `db:"running_seconds" json:"running_seconds"`
}

// CopyProgress lists running COPY commands (copy_progress.sql;
// copy_progress_v17.sql with tuples_skipped on 17+).
func CopyProgress(ctx context.Context, db DBTX, version int) ([]CopyRun, error) {
	return collect[CopyRun](ctx, db, CheckCopyProgress, version)
}

// CopyProgress runs copy_progress.sql (or its version variant) as a panel.
func (d *Diagnostics) CopyProgress(ctx context.Context) Result[CopyRun] {
	return panel(ctx, d, CheckCopyProgress, CopyProgress)
}

// WALDirStat is the size of pg_wal and the settings that bound what the
// server keeps there.
type WALDirStat struct {
	// Readable is false when the role may not list pg_wal (it needs
	// pg_monitor); Bytes and Segments are nil then.
	Readable    bool   `db:"readable" json:"readable"`
	Bytes       *int64 `db:"wal_bytes" json:"wal_bytes"`
	Segments    *int64 `db:"segments" json:"segments"`
	MaxWALSize  int64  `db:"max_wal_size" json:"max_wal_size"`
	WALKeepSize int64  `db:"wal_keep_size" json:"wal_keep_size"`
}

// Expected is what pg_wal holds when nothing retains WAL: the larger of
// max_wal_size and wal_keep_size.
func (w WALDirStat) Expected() int64 { return max(w.MaxWALSize, w.WALKeepSize) }

// WALDir reads the size of pg_wal (wal_dir.sql).
func WALDir(ctx context.Context, db DBTX) (WALDirStat, error) {
	return collectOne[WALDirStat](ctx, db, CheckWALDir, 0)
}

// WALDir runs wal_dir.sql as a panel.
func (d *Diagnostics) WALDir(ctx context.Context) Result[WALDirStat] {
	return panel(ctx, d, CheckWALDir, one(WALDir))
}
