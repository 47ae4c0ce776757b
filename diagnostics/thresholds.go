package diagnostics

import (
	"time"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/queues"
)

// Thresholds decide when evidence becomes a finding. DefaultThresholds gives
// values suited to a production queue database; tests lower them.
type Thresholds struct {
	// RootBlockerWait: lock.root_blocker when a backend has waited this
	// long behind a root blocker, lock.engine_stalled when an engine
	// session has.
	RootBlockerWait time.Duration
	// IdleInTransaction: tx.idle_in_transaction when a session has been
	// idle in an open transaction this long.
	IdleInTransaction time.Duration
	// LongRunningTx: tx.long_running when a client transaction is this old.
	LongRunningTx time.Duration
	// QueueBacklogAge and QueueBacklogReady: queue.backlog when the oldest
	// ready job waited this long, or (if QueueBacklogReady > 0) this many
	// jobs are ready.
	QueueBacklogAge   time.Duration
	QueueBacklogReady int64
	// ExpiredLeases: queue.expired_leases when at least this many running
	// jobs have an expired lease.
	ExpiredLeases int64
	// DeadLetters: queue.dead_letters when at least this many jobs of a
	// queue died within DeadLetterWindow.
	DeadLetters      int64
	DeadLetterWindow time.Duration
	// OutboxBacklogAge and OutboxBacklogPending: outbox.backlog when the
	// oldest pending event waited this long, or (if > 0) this many are
	// pending.
	OutboxBacklogAge     time.Duration
	OutboxBacklogPending int64
	// OutboxDead: outbox.dead when at least this many events are dead.
	OutboxDead int64
	// ReplicationLagBytes and ReplicationLagTime: replication.lag when a
	// standby's replay is this far behind, in bytes or in time.
	ReplicationLagBytes int64
	ReplicationLagTime  time.Duration
	// SlotRetentionBytes: replication.slot_retention when a slot keeps this
	// much WAL (or its wal_status is unreserved or lost).
	SlotRetentionBytes int64
	// SlotExhaustion: replication.slot_retention, whatever the slot
	// retains, when max_slot_wal_keep_size invalidates it within this time
	// at the current WAL rate.
	SlotExhaustion time.Duration
	// SlotInactive: replication.slot_inactive for a slot with no consumer,
	// once inactive this long (measurable on PostgreSQL 17+; earlier, any
	// inactive slot).
	SlotInactive time.Duration
	// WALRate: wal.rate_high when WAL is generated faster than this, in
	// bytes per second.
	WALRate float64
	// ArchiverBacklog: archiver.backlog when this many WAL segments wait
	// to be archived.
	ArchiverBacklog int64
	// PreparedXactAge: prepared_xact.old when a prepared transaction is this
	// old.
	PreparedXactAge time.Duration
	// XminHorizonAge and XminHorizonXIDs: vacuum.xmin_horizon when a holder's
	// transaction is this old, or its xmin this many transactions behind.
	XminHorizonAge  time.Duration
	XminHorizonXIDs int64
	// DeadTuples: table.dead_tuples when a table has this many dead rows.
	DeadTuples int64
	// NotifyQueueUsage: notify.queue_usage when the NOTIFY queue is this
	// full (0 to 1).
	NotifyQueueUsage float64
	// Connections: connections.near_max when this fraction of the slots
	// ordinary roles may use (max_connections less the reserved ones) is
	// taken.
	Connections float64
	// Sequence: sequence.exhaustion when a sequence has used this fraction
	// of its range (the smaller of its own limit and its column's).
	Sequence float64
	// WorkerHeartbeat: a worker is alive when it heartbeated this recently
	// (the window of queues.WorkerList, which the pages use too);
	// workers.none_alive when a queue with ready jobs has no live worker.
	WorkerHeartbeat time.Duration
	// Wraparound: vacuum.wraparound when a database's oldest unfrozen
	// transaction ID or multixact has gone this fraction of the way to
	// WraparoundLimit.
	Wraparound float64
	// IdempotencyStuck: idempotency.stuck when a key has been in
	// 'processing' this long.
	IdempotencyStuck time.Duration
	// LongRunningJob and LongRunningJobFactor: jobs.long_running when a
	// running job has run LongRunningJobFactor times its kind's usual run
	// time, and at least LongRunningJob.
	LongRunningJob       time.Duration
	LongRunningJobFactor int64
	// RiverRescueAfter: river.stuck_running when a River job has run this
	// long, River's RescueStuckJobsAfter (1 h unless the application set
	// it), or LongRunningJobFactor times its kind's usual run time and at
	// least LongRunningJob.
	RiverRescueAfter time.Duration
	// CheckpointRequested and CheckpointWindow: checkpoint.pressure when
	// this fraction of the checkpoints of the last window (at least two)
	// were requested rather than timed.
	CheckpointRequested float64
	CheckpointWindow    time.Duration
	// StandbyConflicts and StandbyConflictWindow:
	// replication.standby_conflicts when replay canceled this many queries
	// on a standby within the window.
	StandbyConflicts      int64
	StandbyConflictWindow time.Duration
	// EngineErrorWindow: engine.errors when a worker's heartbeat reports an
	// engine error (a failed claim, ack or renewal) this recent.
	EngineErrorWindow time.Duration
	// WALDirFactor: wal.dir_size when pg_wal takes this many times what
	// the server keeps there by its settings (the larger of max_wal_size
	// and wal_keep_size).
	WALDirFactor int64
	// WALDirBudget is how large pg_wal may grow: the WAL disk's size, which
	// SQL cannot read ("wal.dir_size=50GB"). Zero means WALDirFactor times
	// what the server keeps, the size wal.dir_size fires at.
	// replication.slot_disk_forecast forecasts against it.
	WALDirBudget int64
	// SlotDiskForecast: replication.slot_disk_forecast when a slot under
	// max_slot_wal_keep_size = -1 (nothing caps what it retains) grows its
	// retained WAL at a rate that brings pg_wal to WALDirBudget within
	// this time.
	SlotDiskForecast time.Duration
	// Deadlocks and DeadlockWindow: lock.deadlocks when the databases
	// counted this many deadlocks within the window.
	Deadlocks      int64
	DeadlockWindow time.Duration
	// RepeatBlockers: lock.repeat_blocker when one root application held
	// up the engine's job claims in this many recorded lock episodes
	// within the last hour (RepeatBlockerWindow).
	RepeatBlockers int64
	// ArchiverStall: archiver.stalled when the oldest segment waiting to
	// be archived is this old and nothing was archived for as long.
	ArchiverStall time.Duration
}

// DefaultThresholds returns the thresholds used when none are configured.
func DefaultThresholds() Thresholds {
	return Thresholds{
		RootBlockerWait:       5 * time.Second,
		IdleInTransaction:     60 * time.Second,
		LongRunningTx:         5 * time.Minute,
		QueueBacklogAge:       5 * time.Minute,
		QueueBacklogReady:     0,
		ExpiredLeases:         1,
		DeadLetters:           10,
		DeadLetterWindow:      15 * time.Minute,
		OutboxBacklogAge:      5 * time.Minute,
		OutboxBacklogPending:  0,
		OutboxDead:            1,
		ReplicationLagBytes:   64 << 20,
		ReplicationLagTime:    60 * time.Second,
		SlotRetentionBytes:    1 << 30,
		SlotExhaustion:        time.Hour,
		SlotInactive:          0,
		WALRate:               100 << 20,
		ArchiverBacklog:       16,
		PreparedXactAge:       5 * time.Minute,
		XminHorizonAge:        30 * time.Minute,
		XminHorizonXIDs:       50_000_000,
		DeadTuples:            100_000,
		NotifyQueueUsage:      0.5,
		WorkerHeartbeat:       queues.DefaultWorkerAliveWindow,
		Connections:           0.8,
		Sequence:              0.75,
		Wraparound:            0.25,
		IdempotencyStuck:      10 * time.Minute,
		LongRunningJob:        5 * time.Minute,
		LongRunningJobFactor:  5,
		RiverRescueAfter:      time.Hour,
		CheckpointRequested:   0.5,
		CheckpointWindow:      15 * time.Minute,
		StandbyConflicts:      1,
		StandbyConflictWindow: 15 * time.Minute,
		EngineErrorWindow:     2 * time.Minute,
		WALDirFactor:          2,
		WALDirBudget:          0,
		SlotDiskForecast:      time.Hour,
		Deadlocks:             1,
		DeadlockWindow:        15 * time.Minute,
		ArchiverStall:         10 * time.Minute,
		RepeatBlockers:        episodes.RepeatBlockersMin,
	}
}
