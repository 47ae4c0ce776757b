package diagnostics

import (
	"context"
	"github.com/jackc/pgx/v5"
	"time"
)

// Check describes one query of the catalog for the runbook pages: its name
// (the SQL file), a title, and the runbook step it is evidence for.
type Check struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Step is the runbook step slug ("activity", "blocking", ...).
	Step string `json:"step"`
}

// catalog lists every query in the order the runbook uses them.
var catalog = []Check{
	{"server_info", "Server version and role", "window"},
	{"connections", "Connections by application and state", "entry"},
	{"activity", "Activity and oldest transactions", "activity"},
	{"idle_in_transaction", "Idle in transaction", "activity"},
	{"blocking_tree", "Blocking tree", "blocking"},
	{"lock_waits", "Lock waits by relation", "blocking"},
	{"wal_position", "WAL position", "resources"},
	{"wal_stats", "WAL statistics", "resources"},
	{"io_stats", "I/O by backend type and context", "resources"},
	{"checkpointer", "Checkpointer and background writer", "resources"},
	{"copy_progress", "COPY progress", "copy"},
	{"queue_health", "Queues, leases and dead letters", "queues"},
	{"dead_letters", "Dead letters by error class", "queues"},
	{"workers", "Workers and heartbeats", "queues"},
	{"outbox_health", "Outbox and relay", "outbox"},
	{"replication", "Replication (from the primary)", "replication"},
	{"standby_status", "Standby receiver and replay", "replication"},
	{"replication_slots", "Replication slots", "replication"},
	{"archiver", "WAL archiver", "replication"},
	{"statements_top", "Top statements (pg_stat_statements)", "plans"},
	{"prepared_xacts", "Prepared transactions", "verification"},
	{"xmin_horizon", "xmin horizon holders", "verification"},
	{"table_vacuum", "Dead tuples and vacuum of queue tables", "verification"},
	{"invalid_indexes", "Invalid indexes", "verification"},
	{"notify_queue", "NOTIFY queue usage", "verification"},
}

// checkTables lists the application tables each query reads; the catalog
// views need no entry. After a lock timeout, the holders of ACCESS
// EXCLUSIVE locks on these tables are reported as the blockers.
var checkTables = map[string][]string{
	"queue_health":  {"jobs", "queue_settings"},
	"dead_letters":  {"jobs"},
	"workers":       {"workers"},
	"outbox_health": {"outbox_events", "relay_settings"},
}

// tablesOf returns the application tables query name reads.
func tablesOf(name string) []string { return checkTables[name] }

// Catalog lists every query with its title and runbook step.
func Catalog() []Check {
	return append([]Check(nil), catalog...)
}

// defaultDeadWindow is the window of "recent" dead letters for panels.
const defaultDeadWindow = 15 * time.Minute

// Activity runs activity.sql as a panel.
func (d *Diagnostics) Activity(ctx context.Context) Result[Backend] {
	return panel(ctx, d, "activity", many(Activity))
}

// IdleInTransaction runs idle_in_transaction.sql as a panel.
func (d *Diagnostics) IdleInTransaction(ctx context.Context) Result[IdleTx] {
	return panel(ctx, d, "idle_in_transaction", many(IdleInTransaction))
}

// BlockingTree runs blocking_tree.sql as a panel.
func (d *Diagnostics) BlockingTree(ctx context.Context) Result[BlockingNode] {
	return panel(ctx, d, "blocking_tree", many(BlockingTree))
}

// LockWaits runs lock_waits.sql as a panel.
func (d *Diagnostics) LockWaits(ctx context.Context) Result[LockWait] {
	return panel(ctx, d, "lock_waits", many(LockWaits))
}

// Connections runs connections.sql as a panel.
func (d *Diagnostics) Connections(ctx context.Context) Result[ConnectionCount] {
	return panel(ctx, d, "connections", many(Connections))
}

// WALPosition runs wal_position.sql as a panel.
func (d *Diagnostics) WALPosition(ctx context.Context) Result[WALPoint] {
	return panel(ctx, d, "wal_position", one(WALPosition))
}

// WALStats runs wal_stats.sql (or its version variant) as a panel.
func (d *Diagnostics) WALStats(ctx context.Context) Result[WALStat] {
	return panel(ctx, d, "wal_stats", oneV(WALStats))
}

// IOStats runs io_stats.sql (or its version variant) as a panel; the Result
// carries ErrUnsupported before PostgreSQL 16.
func (d *Diagnostics) IOStats(ctx context.Context) Result[IOStat] {
	return panel(ctx, d, "io_stats", IOStats)
}

// Checkpointer runs checkpointer.sql (or its version variant) as a panel.
func (d *Diagnostics) Checkpointer(ctx context.Context) Result[CheckpointerStat] {
	return panel(ctx, d, "checkpointer", oneV(Checkpointer))
}

// CopyProgress runs copy_progress.sql (or its version variant) as a panel.
func (d *Diagnostics) CopyProgress(ctx context.Context) Result[CopyRun] {
	return panel(ctx, d, "copy_progress", CopyProgress)
}

// QueueHealth runs queue_health.sql as a panel, with a 15-minute window for
// recent dead letters.
func (d *Diagnostics) QueueHealth(ctx context.Context) Result[QueueStat] {
	return panel(ctx, d, "queue_health", func(ctx context.Context, db DBTX, _ int) ([]QueueStat, error) {
		return QueueHealth(ctx, db, QueueParams{DeadWindow: d.Thresholds().DeadLetterWindow})
	})
}

// DeadLetters runs dead_letters.sql as a panel.
func (d *Diagnostics) DeadLetters(ctx context.Context) Result[DeadLetterGroup] {
	return panel(ctx, d, "dead_letters", func(ctx context.Context, db DBTX, _ int) ([]DeadLetterGroup, error) {
		return DeadLetters(ctx, db, QueueParams{DeadWindow: d.Thresholds().DeadLetterWindow})
	})
}

// Workers runs workers.sql as a panel.
func (d *Diagnostics) Workers(ctx context.Context) Result[Worker] {
	return panel(ctx, d, "workers", func(ctx context.Context, db DBTX, _ int) ([]Worker, error) {
		return Workers(ctx, db, d.Thresholds().WorkerHeartbeat)
	})
}

// OutboxHealth runs outbox_health.sql as a panel.
func (d *Diagnostics) OutboxHealth(ctx context.Context) Result[OutboxStat] {
	return panel(ctx, d, "outbox_health", func(ctx context.Context, db DBTX, _ int) ([]OutboxStat, error) {
		o, err := OutboxHealth(ctx, db, 0)
		if err != nil {
			return nil, err
		}
		return []OutboxStat{o}, nil
	})
}

// Replication runs replication.sql as a panel.
func (d *Diagnostics) Replication(ctx context.Context) Result[Standby] {
	return panel(ctx, d, "replication", many(Replication))
}

// ReplicationSlots runs replication_slots.sql (or its version variant) as a
// panel, with SecondsToExhaustion from the latest known WAL rate.
func (d *Diagnostics) ReplicationSlots(ctx context.Context) Result[Slot] {
	r := panel(ctx, d, "replication_slots", ReplicationSlots)
	rate := d.knownWALRate()
	for i := range r.Rows {
		r.Rows[i].SecondsToExhaustion = SlotExhaustion(r.Rows[i].SafeWALSize, rate)
	}
	return r
}

// Archiver runs archiver.sql as a panel.
func (d *Diagnostics) Archiver(ctx context.Context) Result[ArchiverStat] {
	return panel(ctx, d, "archiver", one(Archiver))
}

// StatementsTop runs statements_top.sql as a panel; the Result carries
// ErrNotInstalled when pg_stat_statements is not installed.
func (d *Diagnostics) StatementsTop(ctx context.Context) Result[Statement] {
	if info, err := d.ServerInfo(ctx); err == nil && !info.HasPgStatStatements {
		return Result[Statement]{Name: "statements_top", SQL: d.SQL("statements_top"), Err: ErrNotInstalled}
	}
	return panel(ctx, d, "statements_top", many(StatementsTop))
}

// PreparedXacts runs prepared_xacts.sql as a panel.
func (d *Diagnostics) PreparedXacts(ctx context.Context) Result[PreparedXact] {
	return panel(ctx, d, "prepared_xacts", many(PreparedXacts))
}

// XminHorizon runs xmin_horizon.sql as a panel.
func (d *Diagnostics) XminHorizon(ctx context.Context) Result[XminHolder] {
	return panel(ctx, d, "xmin_horizon", many(XminHorizon))
}

// TableVacuum runs table_vacuum.sql as a panel.
func (d *Diagnostics) TableVacuum(ctx context.Context) Result[TableStat] {
	return panel(ctx, d, "table_vacuum", many(TableVacuum))
}

// InvalidIndexes runs invalid_indexes.sql as a panel.
func (d *Diagnostics) InvalidIndexes(ctx context.Context) Result[InvalidIndex] {
	return panel(ctx, d, "invalid_indexes", many(InvalidIndexes))
}

// NotifyQueue runs notify_queue.sql as a panel.
func (d *Diagnostics) NotifyQueue(ctx context.Context) Result[NotifyUsage] {
	return panel(ctx, d, "notify_queue", one(NotifyQueue))
}

// ServerInfoPanel runs server_info.sql as a panel.
func (d *Diagnostics) ServerInfoPanel(ctx context.Context) Result[Server] {
	return panel(ctx, d, "server_info", one(ServerInfo))
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
	r := Result[StandbyState]{Name: "standby_status " + s.name, SQL: d.SQL("standby_status")}
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
	for _, c := range catalog {
		if c.Name == "standby_status" {
			if len(d.standbys) == 0 {
				out = append(out, untyped(d.standbyStatus(ctx, standbyPool{name: "self", pool: d.pool})))
			}
			for _, r := range d.StandbyStatus(ctx) {
				out = append(out, untyped(r))
			}
			continue
		}
		if r, ok := d.Panel(ctx, c.Name); ok {
			out = append(out, r)
		}
	}
	return out
}

// Panel runs one query of the catalog by name, for pages that load each
// panel on its own. standby_status merges the rows of every configured
// standby (and reports the first failure). ok is false for an unknown name.
func (d *Diagnostics) Panel(ctx context.Context, name string) (PanelResult, bool) {
	switch name {
	case "server_info":
		return untyped(d.ServerInfoPanel(ctx)), true
	case "connections":
		return untyped(d.Connections(ctx)), true
	case "activity":
		return untyped(d.Activity(ctx)), true
	case "idle_in_transaction":
		return untyped(d.IdleInTransaction(ctx)), true
	case "blocking_tree":
		return untyped(d.BlockingTree(ctx)), true
	case "lock_waits":
		return untyped(d.LockWaits(ctx)), true
	case "wal_position":
		return untyped(d.WALPosition(ctx)), true
	case "wal_stats":
		return untyped(d.WALStats(ctx)), true
	case "io_stats":
		return untyped(d.IOStats(ctx)), true
	case "checkpointer":
		return untyped(d.Checkpointer(ctx)), true
	case "copy_progress":
		return untyped(d.CopyProgress(ctx)), true
	case "queue_health":
		return untyped(d.QueueHealth(ctx)), true
	case "dead_letters":
		return untyped(d.DeadLetters(ctx)), true
	case "workers":
		return untyped(d.Workers(ctx)), true
	case "outbox_health":
		return untyped(d.OutboxHealth(ctx)), true
	case "replication":
		return untyped(d.Replication(ctx)), true
	case "standby_status":
		merged := PanelResult{Name: name, SQL: d.SQL(name)}
		for _, r := range d.StandbyStatus(ctx) {
			u := untyped(r)
			merged.Rows = append(merged.Rows, u.Rows...)
			merged.Took += u.Took
			if merged.Err == nil && u.Err != nil {
				merged.Err, merged.TimedOut, merged.LockedBy = u.Err, u.TimedOut, u.LockedBy
			}
		}
		return merged, true
	case "replication_slots":
		return untyped(d.ReplicationSlots(ctx)), true
	case "archiver":
		return untyped(d.Archiver(ctx)), true
	case "statements_top":
		return untyped(d.StatementsTop(ctx)), true
	case "prepared_xacts":
		return untyped(d.PreparedXacts(ctx)), true
	case "xmin_horizon":
		return untyped(d.XminHorizon(ctx)), true
	case "table_vacuum":
		return untyped(d.TableVacuum(ctx)), true
	case "invalid_indexes":
		return untyped(d.InvalidIndexes(ctx)), true
	case "notify_queue":
		return untyped(d.NotifyQueue(ctx)), true
	}
	return PanelResult{}, false
}
