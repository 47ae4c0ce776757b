package diagnostics

import (
	"context"
	"github.com/jackc/pgx/v5"
	"time"
)

// defaultDeadWindow is the window of "recent" dead letters for panels.
const defaultDeadWindow = 15 * time.Minute

// Activity runs activity.sql as a panel.
func (d *Diagnostics) Activity(ctx context.Context) Result[Backend] {
	return panel(ctx, d, CheckActivity, many(Activity))
}

// IdleInTransaction runs idle_in_transaction.sql as a panel.
func (d *Diagnostics) IdleInTransaction(ctx context.Context) Result[IdleTx] {
	return panel(ctx, d, CheckIdleInTransaction, many(IdleInTransaction))
}

// BlockingTree runs blocking_tree.sql as a panel.
func (d *Diagnostics) BlockingTree(ctx context.Context) Result[BlockingNode] {
	return panel(ctx, d, CheckBlockingTree, many(BlockingTree))
}

// LockWaits runs lock_waits.sql as a panel.
func (d *Diagnostics) LockWaits(ctx context.Context) Result[LockWait] {
	return panel(ctx, d, CheckLockWaits, many(LockWaits))
}

// Connections runs connections.sql as a panel.
func (d *Diagnostics) Connections(ctx context.Context) Result[ConnectionCount] {
	return panel(ctx, d, CheckConnections, many(Connections))
}

// WALPosition runs wal_position.sql as a panel.
func (d *Diagnostics) WALPosition(ctx context.Context) Result[WALPoint] {
	return panel(ctx, d, CheckWALPosition, one(WALPosition))
}

// WALStats runs wal_stats.sql (or its version variant) as a panel.
func (d *Diagnostics) WALStats(ctx context.Context) Result[WALStat] {
	return panel(ctx, d, CheckWALStats, oneV(WALStats))
}

// IOStats runs io_stats.sql (or its version variant) as a panel; the Result
// carries ErrUnsupported before PostgreSQL 16.
func (d *Diagnostics) IOStats(ctx context.Context) Result[IOStat] {
	return panel(ctx, d, CheckIOStats, IOStats)
}

// Checkpointer runs checkpointer.sql (or its version variant) as a panel.
func (d *Diagnostics) Checkpointer(ctx context.Context) Result[CheckpointerStat] {
	return panel(ctx, d, CheckCheckpointer, oneV(Checkpointer))
}

// CopyProgress runs copy_progress.sql (or its version variant) as a panel.
func (d *Diagnostics) CopyProgress(ctx context.Context) Result[CopyRun] {
	return panel(ctx, d, CheckCopyProgress, CopyProgress)
}

// QueueHealth runs queue_health.sql as a panel, with a 15-minute window for
// recent dead letters.
func (d *Diagnostics) QueueHealth(ctx context.Context) Result[QueueStat] {
	return panel(ctx, d, CheckQueueHealth, func(ctx context.Context, db DBTX, _ int) ([]QueueStat, error) {
		return QueueHealth(ctx, db, QueueParams{DeadWindow: d.Thresholds().DeadLetterWindow})
	})
}

// DeadLetters runs dead_letters.sql as a panel.
func (d *Diagnostics) DeadLetters(ctx context.Context) Result[DeadLetterGroup] {
	return panel(ctx, d, CheckDeadLetters, func(ctx context.Context, db DBTX, _ int) ([]DeadLetterGroup, error) {
		return DeadLetters(ctx, db, QueueParams{DeadWindow: d.Thresholds().DeadLetterWindow})
	})
}

// Workers runs workers.sql as a panel.
func (d *Diagnostics) Workers(ctx context.Context) Result[Worker] {
	return panel(ctx, d, CheckWorkers, func(ctx context.Context, db DBTX, _ int) ([]Worker, error) {
		return Workers(ctx, db, d.Thresholds().WorkerHeartbeat)
	})
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

// Replication runs replication.sql as a panel.
func (d *Diagnostics) Replication(ctx context.Context) Result[Standby] {
	return panel(ctx, d, CheckReplication, many(Replication))
}

// ReplicationSlots runs replication_slots.sql (or its version variant) as a
// panel, with SecondsToExhaustion from the latest known WAL rate.
func (d *Diagnostics) ReplicationSlots(ctx context.Context) Result[Slot] {
	r := panel(ctx, d, CheckReplicationSlots, ReplicationSlots)
	rate := d.knownWALRate()
	for i := range r.Rows {
		r.Rows[i].SecondsToExhaustion = SlotExhaustion(r.Rows[i].SafeWALSize, rate)
	}
	return r
}

// Archiver runs archiver.sql as a panel.
func (d *Diagnostics) Archiver(ctx context.Context) Result[ArchiverStat] {
	return panel(ctx, d, CheckArchiver, one(Archiver))
}

// StatementsTop runs statements_top.sql as a panel; the Result carries
// ErrNotInstalled when pg_stat_statements is not installed.
func (d *Diagnostics) StatementsTop(ctx context.Context) Result[Statement] {
	if info, err := d.ServerInfo(ctx); err == nil && !info.HasPgStatStatements {
		return Result[Statement]{Name: CheckStatementsTop, SQL: d.SQL(CheckStatementsTop), Err: ErrNotInstalled}
	}
	return panel(ctx, d, CheckStatementsTop, many(StatementsTop))
}

// PreparedXacts runs prepared_xacts.sql as a panel.
func (d *Diagnostics) PreparedXacts(ctx context.Context) Result[PreparedXact] {
	return panel(ctx, d, CheckPreparedXacts, many(PreparedXacts))
}

// XminHorizon runs xmin_horizon.sql as a panel.
func (d *Diagnostics) XminHorizon(ctx context.Context) Result[XminHolder] {
	return panel(ctx, d, CheckXminHorizon, many(XminHorizon))
}

// TableVacuum runs table_vacuum.sql as a panel.
func (d *Diagnostics) TableVacuum(ctx context.Context) Result[TableStat] {
	return panel(ctx, d, CheckTableVacuum, many(TableVacuum))
}

// InvalidIndexes runs invalid_indexes.sql as a panel.
func (d *Diagnostics) InvalidIndexes(ctx context.Context) Result[InvalidIndex] {
	return panel(ctx, d, CheckInvalidIndexes, many(InvalidIndexes))
}

// NotifyQueue runs notify_queue.sql as a panel.
func (d *Diagnostics) NotifyQueue(ctx context.Context) Result[NotifyUsage] {
	return panel(ctx, d, CheckNotifyQueue, one(NotifyQueue))
}

// ServerInfoPanel runs server_info.sql as a panel.
func (d *Diagnostics) ServerInfoPanel(ctx context.Context) Result[Server] {
	return panel(ctx, d, CheckServerInfo, one(ServerInfo))
}

// StandbyStatus runs standby_status.sql on every standby of
// Config.StandbyURLs, one Result per standby, in order (Name is
// "standby_status <host:port>").
func (d *Diagnostics) StandbyStatus(ctx context.Context) []Result[StandbyState] {
	out := make([]Result[StandbyState], 0, len(d.standbys))
	for _, s := range d.standbys {
		out = append(out, d.standbyStatus(ctx, s))
	}
	return out
}

func (d *Diagnostics) standbyStatus(ctx context.Context, s standbyPool) Result[StandbyState] {
	r := Result[StandbyState]{Name: CheckStandbyStatus + " " + s.name, SQL: d.SQL(CheckStandbyStatus)}
	var st StandbyState
	p := d.exec(ctx, s.pool, pgx.ReadCommitted, r.Name, func(ctx context.Context, db DBTX) error {
		var err error
		st, err = StandbyStatus(ctx, db)
		return err
	})
	st.URL = s.name
	if p.Err == nil {
		r.Rows = []StandbyState{st}
	}
	r.Err, r.TimedOut, r.LockedBy, r.Took = p.Err, p.TimedOut, p.LockedBy, p.Took
	return r
}

// PanelResult is a Result with its rows untyped, for code that walks the
// whole catalog (capturing evidence, the catalog test).
type PanelResult = Result[any]

func untyped[T any](r Result[T]) PanelResult {
	out := PanelResult{Name: r.Name, SQL: r.SQL, Err: r.Err, TimedOut: r.TimedOut, LockedBy: r.LockedBy, Took: r.Took}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, row)
	}
	return out
}

// RunCatalog runs every query of the catalog once, as panels, in catalog
// order (standby_status once per configured standby, or on this server when
// there is none, where it reports in_recovery false).
func (d *Diagnostics) RunCatalog(ctx context.Context) []PanelResult {
	var out []PanelResult
	for _, c := range checks {
		if c.Name != CheckStandbyStatus {
			out = append(out, c.panel(d, ctx))
			continue
		}
		if len(d.standbys) == 0 {
			out = append(out, untyped(d.standbyStatus(ctx, standbyPool{name: "self", pool: d.pool})))
		}
		for _, r := range d.StandbyStatus(ctx) {
			out = append(out, untyped(r))
		}
	}
	return out
}

// Panel runs one query of the catalog by name, for pages that load each
// panel on its own. standby_status merges the rows of every configured
// standby (and reports the first failure). ok is false for an unknown name.
func (d *Diagnostics) Panel(ctx context.Context, name string) (PanelResult, bool) {
	c, ok := CheckNamed(name)
	if !ok {
		return PanelResult{}, false
	}
	return c.panel(d, ctx), true
}

// standbyStatusPanel is standby_status as one panel: the rows of every
// configured standby, and the first failure.
func (d *Diagnostics) standbyStatusPanel(ctx context.Context) PanelResult {
	merged := PanelResult{Name: CheckStandbyStatus, SQL: d.SQL(CheckStandbyStatus)}
	for _, r := range d.StandbyStatus(ctx) {
		u := untyped(r)
		merged.Rows = append(merged.Rows, u.Rows...)
		merged.Took += u.Took
		if merged.Err == nil && u.Err != nil {
			merged.Err, merged.TimedOut, merged.LockedBy = u.Err, u.TimedOut, u.LockedBy
		}
	}
	return merged
}
