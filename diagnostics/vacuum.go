package diagnostics

import (
	"context"
	"time"
)

// PreparedXact is one prepared (two-phase) transaction waiting for COMMIT
// PREPARED or ROLLBACK PREPARED.
type PreparedXact struct {
	GID        string    `db:"gid" json:"gid"`
	XID        string    `db:"xid" json:"xid"`
	XIDAge     int32     `db:"xid_age" json:"xid_age"`
	Prepared   time.Time `db:"prepared" json:"prepared"`
	AgeSeconds float64   `db:"age_seconds" json:"age_seconds"`
	Owner      string    `db:"owner" json:"owner"`
	Database   string    `db:"database" json:"database"`
}

// PreparedXacts lists prepared transactions, oldest first
// (prepared_xacts.sql).
func PreparedXacts(ctx context.Context, db DBTX) ([]PreparedXact, error) {
	return collect[PreparedXact](ctx, db, CheckPreparedXacts, 0)
}

// PreparedXacts runs prepared_xacts.sql as a panel.
func (d *Diagnostics) PreparedXacts(ctx context.Context) Result[PreparedXact] {
	return panel(ctx, d, CheckPreparedXacts, many(PreparedXacts))
}

// XminHolder is something holding back the xmin horizon.
type XminHolder struct {
	// Kind is backend, prepared_xact, slot, slot_catalog or standby.
	Kind string `db:"kind" json:"kind"`
	// Holder identifies it: a pid, a gid, a slot name or a standby's
	// application_name.
	Holder string `db:"holder" json:"holder"`
	// Database is the backend's, prepared transaction's or logical slot's
	// database; empty for physical slots and standbys.
	Database string `db:"database" json:"database"`
	Xmin     string `db:"xmin" json:"xmin"`
	XIDAge   int32  `db:"xid_age" json:"xid_age"`
	// AgeSeconds is the age of the transaction (backends, prepared
	// transactions). For slots and standbys, which have none, a findings
	// round sets it to how long the console has seen the holder hold this
	// xmin; nil outside a round.
	AgeSeconds *float64 `db:"age_seconds" json:"age_seconds"`
	// FirstSeen is, for slots and standbys in a findings round, when the
	// console first saw the holder hold this xmin: AgeSeconds counts from
	// it, so it is a lower bound. Nil for backends and prepared
	// transactions, and outside a round.
	FirstSeen *time.Time `db:"-" json:"first_seen,omitempty"`
	Detail    string     `db:"detail" json:"detail"`
	// HoldsTables is whether it keeps VACUUM from removing dead rows of
	// this database's tables (the queue tables among them): a backend or
	// prepared transaction of this database, a slot's xmin, a standby's
	// feedback. A slot's catalog_xmin holds only the system catalogs.
	HoldsTables bool `db:"holds_tables" json:"holds_tables"`
}

// XminHorizon lists what holds back the xmin horizon, oldest first
// (xmin_horizon.sql).
func XminHorizon(ctx context.Context, db DBTX) ([]XminHolder, error) {
	return collect[XminHolder](ctx, db, CheckXminHorizon, 0)
}

// XminHorizon runs xmin_horizon.sql as a panel.
func (d *Diagnostics) XminHorizon(ctx context.Context) Result[XminHolder] {
	return panel(ctx, d, CheckXminHorizon, many(XminHorizon))
}

// TableStat is the dead tuples and vacuum history of one table.
type TableStat struct {
	Schema          string     `db:"schema_name" json:"schema"`
	Table           string     `db:"table_name" json:"table"`
	LiveTuples      int64      `db:"n_live_tup" json:"n_live_tup"`
	DeadTuples      int64      `db:"n_dead_tup" json:"n_dead_tup"`
	DeadRatio       float64    `db:"dead_ratio" json:"dead_ratio"`
	ModSinceAnalyze int64      `db:"n_mod_since_analyze" json:"n_mod_since_analyze"`
	LastVacuum      *time.Time `db:"last_vacuum" json:"last_vacuum"`
	LastAutovacuum  *time.Time `db:"last_autovacuum" json:"last_autovacuum"`
	LastAnalyze     *time.Time `db:"last_analyze" json:"last_analyze"`
	LastAutoanalyze *time.Time `db:"last_autoanalyze" json:"last_autoanalyze"`
	VacuumCount     int64      `db:"vacuum_count" json:"vacuum_count"`
	AutovacuumCount int64      `db:"autovacuum_count" json:"autovacuum_count"`
	// QueueTable marks the engine's tables (jobs, outbox_events, ...).
	QueueTable bool `db:"queue_table" json:"queue_table"`
}

// TableVacuum lists the queue tables and the tables with the most dead rows
// (table_vacuum.sql).
func TableVacuum(ctx context.Context, db DBTX) ([]TableStat, error) {
	return collect[TableStat](ctx, db, CheckTableVacuum, 0)
}

// TableVacuum runs table_vacuum.sql as a panel.
func (d *Diagnostics) TableVacuum(ctx context.Context) Result[TableStat] {
	return panel(ctx, d, CheckTableVacuum, many(TableVacuum))
}

// InvalidIndex is an index that is not valid or not ready.
type InvalidIndex struct {
	Schema     string `db:"schema_name" json:"schema"`
	Index      string `db:"index_name" json:"index"`
	Table      string `db:"table_name" json:"table"`
	Valid      bool   `db:"valid" json:"valid"`
	Ready      bool   `db:"ready" json:"ready"`
	Definition string `db:"definition" json:"definition"`
}

// InvalidIndexes lists invalid or not-ready indexes (invalid_indexes.sql).
func InvalidIndexes(ctx context.Context, db DBTX) ([]InvalidIndex, error) {
	return collect[InvalidIndex](ctx, db, CheckInvalidIndexes, 0)
}

// InvalidIndexes runs invalid_indexes.sql as a panel.
func (d *Diagnostics) InvalidIndexes(ctx context.Context) Result[InvalidIndex] {
	return panel(ctx, d, CheckInvalidIndexes, many(InvalidIndexes))
}

// Statement is one row of pg_stat_statements.
type Statement struct {
	QueryID         int64   `db:"queryid" json:"queryid"`
	Calls           int64   `db:"calls" json:"calls"`
	Rows            int64   `db:"rows" json:"rows"`
	TotalExecTimeMS float64 `db:"total_exec_time_ms" json:"total_exec_time_ms"`
	MeanExecTimeMS  float64 `db:"mean_exec_time_ms" json:"mean_exec_time_ms"`
	MaxExecTimeMS   float64 `db:"max_exec_time_ms" json:"max_exec_time_ms"`
	MeanPlanTimeMS  float64 `db:"mean_plan_time_ms" json:"mean_plan_time_ms"`
	SharedBlksHit   int64   `db:"shared_blks_hit" json:"shared_blks_hit"`
	SharedBlksRead  int64   `db:"shared_blks_read" json:"shared_blks_read"`
	TempBlksWritten int64   `db:"temp_blks_written" json:"temp_blks_written"`
	WALBytes        int64   `db:"wal_bytes" json:"wal_bytes"`
	Query           string  `db:"query" json:"query"`
}

// StatementsTop lists the statements of this database with the most total
// execution time (statements_top.sql). It fails when pg_stat_statements is
// not installed; Diagnostics.StatementsTop checks first and returns
// ErrNotInstalled.
func StatementsTop(ctx context.Context, db DBTX) ([]Statement, error) {
	return collect[Statement](ctx, db, CheckStatementsTop, 0)
}

// StatementsTop runs statements_top.sql as a panel; the Result carries
// ErrNotInstalled when pg_stat_statements is not installed.
func (d *Diagnostics) StatementsTop(ctx context.Context) Result[Statement] {
	if info, err := d.ServerInfo(ctx); err == nil && !info.HasPgStatStatements {
		return Result[Statement]{Name: CheckStatementsTop, SQL: d.SQL(CheckStatementsTop), Err: ErrNotInstalled}
	}
	return panel(ctx, d, CheckStatementsTop, many(StatementsTop))
}

// NotifyUsage is the fraction of the NOTIFY queue in use.
type NotifyUsage struct {
	Usage float64 `db:"usage" json:"usage"`
}

// NotifyQueue reads pg_notification_queue_usage() (notify_queue.sql).
func NotifyQueue(ctx context.Context, db DBTX) (NotifyUsage, error) {
	return collectOne[NotifyUsage](ctx, db, CheckNotifyQueue, 0)
}

// NotifyQueue runs notify_queue.sql as a panel.
func (d *Diagnostics) NotifyQueue(ctx context.Context) Result[NotifyUsage] {
	return panel(ctx, d, CheckNotifyQueue, one(NotifyQueue))
}
