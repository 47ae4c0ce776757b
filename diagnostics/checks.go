package diagnostics

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/sqlset"
	"github.com/pgconsole/console/queues"
)

// Names of the checks of the catalog: a check is one query (its SQL file is
// sql/<name>.sql) and its entry in checks. Pages, runbook steps and
// findings refer to a check by these names.
const (
	CheckServerInfo        = "server_info"
	CheckConnections       = "connections"
	CheckWALPosition       = "wal_position"
	CheckBlockingTree      = "blocking_tree"
	CheckBlockedJobs       = "blocked_jobs"
	CheckActivity          = "activity"
	CheckIdleInTransaction = "idle_in_transaction"
	CheckLockWaits         = "lock_waits"
	CheckWALStats          = "wal_stats"
	CheckIOStats           = "io_stats"
	CheckCheckpointer      = "checkpointer"
	CheckCopyProgress      = "copy_progress"
	CheckQueueHealth       = "queue_health"
	CheckDeadLetters       = "dead_letters"
	CheckTenantBacklog     = "tenant_backlog"
	CheckWorkers           = "workers"
	CheckOutboxHealth      = "outbox_health"
	CheckReplication       = "replication"
	CheckStandbyStatus     = "standby_status"
	CheckReplicationSlots  = "replication_slots"
	CheckArchiver          = "archiver"
	CheckStatementsTop     = "statements_top"
	CheckPreparedXacts     = "prepared_xacts"
	CheckXminHorizon       = "xmin_horizon"
	CheckTableVacuum       = "table_vacuum"
	CheckInvalidIndexes    = "invalid_indexes"
	CheckNotifyQueue       = "notify_queue"
	CheckConnectionUse     = "connection_pressure"
	CheckSequenceUse       = "sequence_exhaustion"
	CheckWraparound        = "wraparound"
	CheckIdempotencyStuck  = "idempotency_stuck"
	CheckLongRunningJobs   = "long_running_jobs"
	CheckStandbyConflicts  = "standby_conflicts"
	CheckWALDir            = "wal_dir"
	CheckDeadlocks         = "deadlocks"
	CheckRepeatBlockers    = "lock_episode_repeats"
)

// Check is one query of the catalog and everything the console does with
// it: the panel that shows it, where its rows land in a findings round and
// in a sampler sample, and whether the metrics collector exports them.
type Check struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Step is the runbook step the check is evidence for (StepActivity,
	// StepBlocking, ...).
	Step string `json:"step"`
	// AlsoSteps are the other runbook steps that show its panel, after
	// their own checks' (the queue panel is evidence for the entry step
	// too).
	AlsoSteps []string `json:"also_steps,omitempty"`
	// EmptyTitle and EmptyWhy say what an empty result means on the panel
	// (EmptyWhy starts with a space when set); an empty EmptyTitle lets the
	// page say "No rows.".
	EmptyTitle string `json:"-"`
	EmptyWhy   string `json:"-"`
	// Columns are the panel's columns, in order. The blocking tree has none:
	// its page draws it as a tree.
	Columns []Column `json:"-"`

	// tables lists the application tables the query reads (the catalog
	// views need no entry): after a lock timeout, the holders of ACCESS
	// EXCLUSIVE locks on them are reported as the blockers.
	tables []string
	// variants are the query's files by server version, oldest first; nil
	// means one file named after the check.
	variants []variant
	// statement returns the query's text when another package owns it (the
	// engine owns every statement on its tables); nil for the check's own
	// file.
	statement func() string
	// panel runs the query as a panel on the diagnostics pool.
	panel func(d *Diagnostics, ctx context.Context) PanelResult
	// round reads the query in a findings round; nil when rounds skip it.
	round *roundPart
	// slow marks a check that reads the whole catalog (every table, index
	// or sequence), so its cost grows with the schema, not with the
	// incident: the shared rounds read it on the slow clock
	// (Config.SlowInterval, within Config.SlowBudget) and reuse that read
	// in between (Round.SlowAt), and the sampler takes its rows from there.
	slow bool
	// metrics marks a check whose section of the round the Collector
	// exports: when the check fails, the Collector serves its last good
	// value.
	metrics bool
	// sample reads the query into a Sampler sample; nil when the sampler
	// skips it.
	sample func(ctx context.Context, db DBTX, s *sampleState) error
	// sampleRound takes the sample's value from a shared round that read
	// the check at most Config.PanelMaxAge before the sample, instead of
	// sample reading it again; nil when the sampler always reads it. Only
	// gauges are taken so (never a counter a rate is computed from, whose
	// time must be the sample's).
	sampleRound func(r Round, s *Sample)
	// sampleAfter names a sampled check the sampler reads before this one,
	// whose rows sampleKnown may answer from.
	sampleAfter string
	// sampleKnown takes the sample's value from what the sample's earlier
	// checks read, when they settle it, and reports whether they did: the
	// sampler then sends no statement for the check. Nil when only the
	// check's own statement can say.
	sampleKnown func(s *sampleState) bool
	// History is the key of the flight recorder's document (HistoryChecks)
	// that keeps this check's rows, so its panel can be shown as it was;
	// empty when history does not keep them.
	History string `json:"history,omitempty"`
	// historyRows decodes the recorded value of History, sampled at at,
	// into the panel's rows; set exactly when History is.
	historyRows func(data json.RawMessage, at time.Time) ([]any, error)
}

// variant is a version-specific file of a query: used from its MinVersion
// (server_version_num) up.
type variant = sqlset.Variant

// roundState is what the checks of one findings round share.
type roundState struct {
	round      *Round
	version    int
	thresholds Thresholds
	// queueParams caps the queue counts; the cap must not hide a
	// configured threshold.
	queueParams QueueParams
	// walFrom is the WAL position read first, from which the round measures
	// the WAL rate; nil when it could not be read.
	walFrom *WALPoint
	// deadGroups are every dead-letter group, read with the queue health
	// (in the round's one snapshot); nil when that read failed.
	deadGroups []DeadLetterGroup
}

// roundPart is how a check takes part in a findings round: read stores its
// rows in the round, keep copies them from a previous round.
type roundPart struct {
	read func(ctx context.Context, db DBTX, s *roundState) error
	keep func(prev Round, next *Round)
	// rows are the check's rows as a round holds them, as a panel lists
	// them (a one-row check's pointer is one row, or none when nil).
	rows func(r Round) []any
}

// section is the roundPart of a check whose rows land in one field of
// Round; the field is set only when read succeeds.
func section[T any](field func(*Round) *T, read func(context.Context, DBTX, *roundState) (T, error)) *roundPart {
	return &roundPart{
		read: func(ctx context.Context, db DBTX, s *roundState) error {
			v, err := read(ctx, db, s)
			if err == nil {
				*field(s.round) = v
			}
			return err
		},
		keep: func(prev Round, next *Round) { *field(next) = *field(&prev) },
		rows: func(r Round) []any { return rowsOf(*field(&r)) },
	}
}

// rowsOf lists v, a Round field, as panel rows: a slice's elements, or a
// pointer's value (none when nil).
func rowsOf(v any) []any {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice:
		var out []any // nil when empty, as a panel's own read leaves it
		for i := range rv.Len() {
			out = append(out, rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer:
		if !rv.IsNil() {
			return []any{rv.Elem().Interface()}
		}
	}
	return nil
}

// ignoreRound adapts a query that needs nothing from the round.
func ignoreRound[T any](fn func(context.Context, DBTX) (T, error)) func(context.Context, DBTX, *roundState) (T, error) {
	return func(ctx context.Context, db DBTX, _ *roundState) (T, error) { return fn(ctx, db) }
}

// pointer adapts a single-row query to a Round field that is nil until the
// query succeeds.
func pointer[T any](fn func(context.Context, DBTX) (T, error)) func(context.Context, DBTX) (*T, error) {
	return func(ctx context.Context, db DBTX) (*T, error) {
		v, err := fn(ctx, db)
		return &v, err
	}
}

// typed adapts a typed panel method to Check.panel.
func typed[T any](method func(*Diagnostics, context.Context) Result[T]) func(*Diagnostics, context.Context) PanelResult {
	return func(d *Diagnostics, ctx context.Context) PanelResult { return untyped(method(d, ctx)) }
}

// checks is the catalog, in the order a findings round reads it: the WAL
// position first, so the round's WAL rate spans the whole round, then the
// blocking tree, the most urgent evidence. It is built in init because its
// entries run queries that look the catalog up (variants, tables).
var checks []Check

// checkIndex finds an entry of checks by name.
var checkIndex map[string]int

func init() {
	checks = []Check{
		{
			Name: CheckServerInfo, Title: "Server version and role", Step: StepWindow,
			panel: typed((*Diagnostics).ServerInfoPanel),
			Columns: []Column{
				intCol("version_num", AsCount, func(r Server) int { return r.VersionNum }),
				textCol("version", AsText, func(r Server) string { return r.Version }),
				boolCol("in_recovery", func(r Server) bool { return r.InRecovery }),
				textCol("database", AsText, func(r Server) string { return r.Database }),
				boolCol("has_pg_stat_statements", func(r Server) bool { return r.HasPgStatStatements }),
				textCol("track_io_timing", AsText, func(r Server) string { return r.TrackIOTiming }),
				textCol("max_slot_wal_keep_size", AsText, func(r Server) string { return r.MaxSlotWALKeepSize }),
				intCol("pid", AsID, func(r Server) int32 { return r.PID }),
			},
		},
		{
			Name: CheckConnections, Title: "Connections by application and state", Step: StepEntry,
			AlsoSteps:  []string{StepWindow},
			EmptyTitle: "No connections.",
			panel:      typed((*Diagnostics).Connections),
			Columns: []Column{
				textCol("database", AsText, func(r ConnectionCount) string { return r.Database }),
				textCol("application_name", AsText, func(r ConnectionCount) string { return r.ApplicationName }),
				textCol("state", AsText, func(r ConnectionCount) string { return r.State }),
				intCol("connections", AsCount, func(r ConnectionCount) int64 { return r.Connections }),
				intCol("max_connections", AsCount, func(r ConnectionCount) int64 { return r.MaxConnections }),
			},
		},
		{
			Name: CheckWALPosition, Title: "WAL position", Step: StepResources,
			panel:   typed((*Diagnostics).WALPosition),
			History: HistoryWAL, historyRows: recordedWAL,
			round:  &roundPart{read: readWALAnchor},
			sample: sampleWALPosition,
			Columns: []Column{
				boolCol("in_recovery", func(r WALPoint) bool { return r.InRecovery }),
				textCol("lsn", AsText, func(r WALPoint) string { return r.LSN }),
				intCol("lsn_bytes", AsBytes, func(r WALPoint) int64 { return r.LSNBytes }),
				timeCol("sampled_at", func(r WALPoint) time.Time { return r.SampledAt }),
			},
		},
		{
			Name: CheckBlockingTree, Title: "Blocking tree", Step: StepBlocking,
			AlsoSteps:  []string{StepMitigations},
			EmptyTitle: "Nobody is waiting on a lock.",
			EmptyWhy:   " When a backend waits on another, the chain up to its root blocker appears here.",
			panel:      typed((*Diagnostics).BlockingTree),
			History:    HistoryBlockingTree, historyRows: recorded[BlockingNode],
			round:       section(func(r *Round) *[]BlockingNode { return &r.Blocking }, ignoreRound(BlockingTree)),
			metrics:     true,
			sample:      sampleBlocked,
			sampleRound: func(r Round, s *Sample) { s.Blocked = blockedCount(r.Blocking) },
			sampleAfter: CheckActivity,
			sampleKnown: knownUnblocked,
		},
		{
			Name: CheckBlockedJobs, Title: "Jobs waiting on a lock", Step: StepBlocking,
			EmptyTitle: "No running job waits on a lock.",
			EmptyWhy:   " A job whose own session (queues.JobConn) waits on a lock would be listed here with its queue and kind; the blocking tree shows whom it waits for.",
			statement:  queues.JobsWaitingOnLocksSQL,
			tables:     []string{"jobs"},
			panel:      typed((*Diagnostics).BlockedJobs),
			round:      section(func(r *Round) *[]BlockedJob { return &r.BlockedJobs }, ignoreRound(BlockedJobs)),
			Columns: []Column{
				intCol("job_id", AsID, func(r BlockedJob) int64 { return r.JobID }),
				textCol("queue", AsText, func(r BlockedJob) string { return r.Queue }),
				textCol("kind", AsText, func(r BlockedJob) string { return r.Kind }),
				intCol("pid", AsID, func(r BlockedJob) int32 { return r.PID }),
				floatCol("wait_seconds", AsSeconds, func(r BlockedJob) float64 { return r.WaitSeconds }),
			},
		},
		{
			Name: CheckActivity, Title: "Activity and oldest transactions", Step: StepActivity,
			AlsoSteps:  []string{StepCopy},
			EmptyTitle: "No client backends besides the console.",
			EmptyWhy:   " Sessions of applications and workers would be listed here, oldest transaction first.",
			panel:      typed((*Diagnostics).Activity),
			History:    HistoryActivity, historyRows: recorded[Backend],
			round:       section(func(r *Round) *[]Backend { return &r.Activity }, ignoreRound(Activity)),
			metrics:     true,
			sample:      sampleOldestXact,
			sampleRound: func(r Round, s *Sample) { s.OldestXactSeconds = oldestXact(r.Activity) },
			Columns: []Column{
				intCol("pid", AsID, func(r Backend) int32 { return r.PID }),
				textCol("application_name", AsText, func(r Backend) string { return r.ApplicationName }),
				textCol("client_addr", AsText, func(r Backend) string { return r.ClientAddr }),
				textCol("state", AsText, func(r Backend) string { return r.State }),
				textCol("wait_event_type", AsText, func(r Backend) string { return r.WaitEventType }),
				textCol("wait_event", AsText, func(r Backend) string { return r.WaitEvent }),
				floatCol("xact_age_seconds", AsSeconds, func(r Backend) float64 { return r.XactAgeSeconds }),
				floatCol("query_age_seconds", AsSeconds, func(r Backend) float64 { return r.QueryAgeSeconds }),
				optIntCol("xmin_age", AsCount, func(r Backend) *int32 { return r.XminAge }),
				idsCol("blocked_by", func(r Backend) []int32 { return r.BlockedBy }),
				textCol("query", AsQuery, func(r Backend) string { return r.Query }),
			},
		},
		{
			Name: CheckIdleInTransaction, Title: "Idle in transaction", Step: StepActivity,
			EmptyTitle: "No session is idle in a transaction.",
			EmptyWhy:   " A session that opened a transaction and stopped talking would hold its locks and the xmin horizon; it would show here.",
			panel:      typed((*Diagnostics).IdleInTransaction),
			round:      section(func(r *Round) *[]IdleTx { return &r.IdleTx }, ignoreRound(IdleInTransaction)),
			metrics:    true,
			Columns: []Column{
				intCol("pid", AsID, func(r IdleTx) int32 { return r.PID }),
				textCol("application_name", AsText, func(r IdleTx) string { return r.ApplicationName }),
				textCol("client_addr", AsText, func(r IdleTx) string { return r.ClientAddr }),
				textCol("state", AsText, func(r IdleTx) string { return r.State }),
				floatCol("idle_seconds", AsSeconds, func(r IdleTx) float64 { return r.IdleSeconds }),
				floatCol("xact_age_seconds", AsSeconds, func(r IdleTx) float64 { return r.XactAgeSeconds }),
				textCol("last_query", AsQuery, func(r IdleTx) string { return r.LastQuery }),
			},
		},
		{
			Name: CheckLockWaits, Title: "Lock waits by relation", Step: StepBlocking,
			EmptyTitle: "No lock waits.",
			EmptyWhy:   " Relations with backends waiting to lock them would be listed here.",
			panel:      typed((*Diagnostics).LockWaits),
			Columns: []Column{
				textCol("locktype", AsText, func(r LockWait) string { return r.LockType }),
				textCol("relation", AsText, func(r LockWait) string { return r.Relation }),
				textCol("mode", AsText, func(r LockWait) string { return r.Mode }),
				intCol("waiting", AsCount, func(r LockWait) int64 { return r.Waiting }),
				floatCol("max_wait_seconds", AsSeconds, func(r LockWait) float64 { return r.MaxWaitSeconds }),
				idsCol("pids", func(r LockWait) []int32 { return r.PIDs }),
			},
		},
		{
			Name: CheckWALStats, Title: "WAL statistics", Step: StepResources,
			variants: []variant{{MinVersion: 0, File: "wal_stats"}, {MinVersion: 180000, File: "wal_stats_v18"}},
			panel:    typed((*Diagnostics).WALStats),
			sample:   sampleWALStats,
			Columns: []Column{
				intCol("wal_records", AsCount, func(r WALStat) int64 { return r.Records }),
				intCol("wal_fpi", AsCount, func(r WALStat) int64 { return r.FPI }),
				intCol("wal_bytes", AsBytes, func(r WALStat) int64 { return r.Bytes }),
				intCol("wal_buffers_full", AsCount, func(r WALStat) int64 { return r.BuffersFull }),
				optIntCol("wal_write", AsCount, func(r WALStat) *int64 { return r.Write }),
				optIntCol("wal_sync", AsCount, func(r WALStat) *int64 { return r.Sync }),
				optFloatCol("wal_write_time_ms", AsNumber, func(r WALStat) *float64 { return r.WriteTimeMS }),
				optFloatCol("wal_sync_time_ms", AsNumber, func(r WALStat) *float64 { return r.SyncTimeMS }),
				optTimeCol("stats_reset", func(r WALStat) *time.Time { return r.StatsReset }),
			},
		},
		{
			Name: CheckIOStats, Title: "I/O by backend type and context", Step: StepResources,
			EmptyTitle: "No I/O statistics.",
			EmptyWhy:   " pg_stat_io exists from PostgreSQL 16.",
			variants:   []variant{{MinVersion: 160000, File: "io_stats"}, {MinVersion: 180000, File: "io_stats_v18"}},
			panel:      typed((*Diagnostics).IOStats),
			sample:     sampleIO,
			Columns: []Column{
				textCol("backend_type", AsText, func(r IOStat) string { return r.BackendType }),
				textCol("object", AsText, func(r IOStat) string { return r.Object }),
				textCol("context", AsText, func(r IOStat) string { return r.Context }),
				intCol("reads", AsCount, func(r IOStat) int64 { return r.Reads }),
				intCol("read_bytes", AsBytes, func(r IOStat) int64 { return r.ReadBytes }),
				floatCol("read_time_ms", AsNumber, func(r IOStat) float64 { return r.ReadTimeMS }),
				intCol("writes", AsCount, func(r IOStat) int64 { return r.Writes }),
				intCol("write_bytes", AsBytes, func(r IOStat) int64 { return r.WriteBytes }),
				floatCol("write_time_ms", AsNumber, func(r IOStat) float64 { return r.WriteTimeMS }),
				intCol("extends", AsCount, func(r IOStat) int64 { return r.Extends }),
				intCol("extend_bytes", AsBytes, func(r IOStat) int64 { return r.ExtendBytes }),
				intCol("writebacks", AsCount, func(r IOStat) int64 { return r.Writebacks }),
				floatCol("writeback_time_ms", AsNumber, func(r IOStat) float64 { return r.WritebackTimeMS }),
				intCol("fsyncs", AsCount, func(r IOStat) int64 { return r.Fsyncs }),
				floatCol("fsync_time_ms", AsNumber, func(r IOStat) float64 { return r.FsyncTimeMS }),
				intCol("hits", AsCount, func(r IOStat) int64 { return r.Hits }),
				intCol("evictions", AsCount, func(r IOStat) int64 { return r.Evictions }),
				optTimeCol("stats_reset", func(r IOStat) *time.Time { return r.StatsReset }),
			},
		},
		{
			Name: CheckCheckpointer, Title: "Checkpointer and background writer", Step: StepResources,
			variants: []variant{{MinVersion: 0, File: "checkpointer"}, {MinVersion: 170000, File: "checkpointer_v17"}},
			panel:    typed((*Diagnostics).Checkpointer),
			round:    section(func(r *Round) **CheckpointerStat { return &r.Checkpointer }, readCheckpointer),
			sample:   sampleCheckpointer,
			Columns: []Column{
				intCol("checkpoints_timed", AsCount, func(r CheckpointerStat) int64 { return r.CheckpointsTimed }),
				intCol("checkpoints_requested", AsCount, func(r CheckpointerStat) int64 { return r.CheckpointsRequested }),
				floatCol("write_time_ms", AsNumber, func(r CheckpointerStat) float64 { return r.WriteTimeMS }),
				floatCol("sync_time_ms", AsNumber, func(r CheckpointerStat) float64 { return r.SyncTimeMS }),
				intCol("buffers_checkpoint", AsCount, func(r CheckpointerStat) int64 { return r.BuffersCheckpoint }),
				intCol("buffers_clean", AsCount, func(r CheckpointerStat) int64 { return r.BuffersClean }),
				intCol("maxwritten_clean", AsCount, func(r CheckpointerStat) int64 { return r.MaxwrittenClean }),
				optIntCol("buffers_backend", AsCount, func(r CheckpointerStat) *int64 { return r.BuffersBackend }),
				intCol("buffers_alloc", AsCount, func(r CheckpointerStat) int64 { return r.BuffersAlloc }),
				optTimeCol("stats_reset", func(r CheckpointerStat) *time.Time { return r.StatsReset }),
				optTimeCol("bgwriter_stats_reset", func(r CheckpointerStat) *time.Time { return r.BgwriterStatsReset }),
				intCol("max_wal_size", AsBytes, func(r CheckpointerStat) int64 { return r.MaxWALSize }),
				floatCol("checkpoint_timeout", AsSeconds, func(r CheckpointerStat) float64 { return r.CheckpointTimeout }),
			},
		},
		{
			Name: CheckCopyProgress, Title: "COPY progress", Step: StepCopy,
			EmptyTitle: "No COPY is running.",
			EmptyWhy:   " Bulk loads in progress would show their progress here.",
			variants:   []variant{{MinVersion: 0, File: "copy_progress"}, {MinVersion: 170000, File: "copy_progress_v17"}},
			panel:      typed((*Diagnostics).CopyProgress),
			Columns: []Column{
				intCol("pid", AsID, func(r CopyRun) int32 { return r.PID }),
				textCol("database", AsText, func(r CopyRun) string { return r.Database }),
				textCol("relation", AsText, func(r CopyRun) string { return r.Relation }),
				textCol("command", AsText, func(r CopyRun) string { return r.Command }),
				textCol("type", AsText, func(r CopyRun) string { return r.Type }),
				intCol("bytes_processed", AsCount, func(r CopyRun) int64 { return r.BytesProcessed }),
				intCol("bytes_total", AsCount, func(r CopyRun) int64 { return r.BytesTotal }),
				intCol("tuples_processed", AsCount, func(r CopyRun) int64 { return r.TuplesProcessed }),
				intCol("tuples_excluded", AsCount, func(r CopyRun) int64 { return r.TuplesExcluded }),
				optIntCol("tuples_skipped", AsCount, func(r CopyRun) *int64 { return r.TuplesSkipped }),
				floatCol("running_seconds", AsSeconds, func(r CopyRun) float64 { return r.RunningSeconds }),
			},
		},
		{
			Name: CheckQueueHealth, Title: "Queues, leases and dead letters", Step: StepQueues,
			AlsoSteps:  []string{StepEntry, StepMitigations, StepVerification},
			statement:  queues.QueueHealthSQL,
			EmptyTitle: "No queue has jobs yet.",
			EmptyWhy:   " Each queue's ready, running and dead counts appear here once jobs are enqueued.",
			tables:     []string{"jobs", "queue_settings", "dead_letter_counts", "queue_job_counts"},
			panel:      typed((*Diagnostics).QueueHealth),
			History:    HistoryQueues, historyRows: recorded[QueueStat],
			round:   section(func(r *Round) *[]QueueStat { return &r.Queues }, readQueues),
			metrics: true,
			sample:  sampleQueues,
			Columns: []Column{
				textCol("queue", AsText, func(r QueueStat) string { return r.Queue }),
				intCol("ready", AsCount, func(r QueueStat) int64 { return r.Ready }),
				intCol("scheduled", AsCount, func(r QueueStat) int64 { return r.Scheduled }),
				floatCol("oldest_ready_seconds", AsSeconds, func(r QueueStat) float64 { return r.OldestReadySeconds }),
				intCol("running", AsCount, func(r QueueStat) int64 { return r.Running }),
				intCol("expired_leases", AsCount, func(r QueueStat) int64 { return r.ExpiredLeases }),
				intCol("dead", AsCount, func(r QueueStat) int64 { return r.Dead }),
				intCol("dead_recent", AsCount, func(r QueueStat) int64 { return r.DeadRecent }),
				boolCol("paused", func(r QueueStat) bool { return r.Paused }),
				optIntCol("max_workers", AsCount, func(r QueueStat) *int { return r.MaxWorkers }),
				optFloatCol("rate_per_second", AsRate, func(r QueueStat) *float64 { return r.RatePerSecond }),
				optTimeCol("settings_updated_at", func(r QueueStat) *time.Time { return r.SettingsUpdatedAt }),
			},
		},
		{
			Name: CheckDeadLetters, Title: "Dead letters by error class", Step: StepQueues,
			statement:  queues.DeadLetterClassStatsSQL,
			EmptyTitle: "No dead letters.",
			EmptyWhy:   " Jobs that used up their attempts or failed permanently would be grouped here by error class.",
			tables:     []string{"jobs", "dead_letter_counts"},
			panel:      typed((*Diagnostics).DeadLetters),
			round:      section(func(r *Round) *[]DeadLetterGroup { return &r.DeadLetters }, readDeadLetters),
			Columns: []Column{
				textCol("queue", AsText, func(r DeadLetterGroup) string { return r.Queue }),
				textCol("error_class", AsText, func(r DeadLetterGroup) string { return r.ErrorClass }),
				intCol("dead", AsCount, func(r DeadLetterGroup) int64 { return r.Dead }),
				intCol("dead_recent", AsCount, func(r DeadLetterGroup) int64 { return r.DeadRecent }),
				optTimeCol("last_finished_at", func(r DeadLetterGroup) *time.Time { return r.LastFinishedAt }),
			},
		},
		{
			Name: CheckTenantBacklog, Title: "Tenants by oldest ready job", Step: StepQueues,
			statement:  queues.TenantReadySQL,
			EmptyTitle: "No ready job has a tenant.",
			EmptyWhy:   " Queues whose jobs carry a tenant show each tenant's backlog here, the longest wait first.",
			tables:     []string{"jobs"},
			panel:      typed((*Diagnostics).TenantBacklog),
			round:      section(func(r *Round) *[]TenantBacklog { return &r.Tenants }, readTenantBacklogs),
			metrics:    true,
			Columns: []Column{
				textCol("queue", AsText, func(r TenantBacklog) string { return r.Queue }),
				textCol("tenant", AsText, func(r TenantBacklog) string { return TenantLabel(r) }),
				floatCol("oldest_ready_seconds", AsSeconds, func(r TenantBacklog) float64 { return r.OldestReadySeconds }),
				intCol("ready", AsCount, func(r TenantBacklog) int64 { return r.Ready }),
				intCol("running", AsCount, func(r TenantBacklog) int64 { return r.Running }),
				intCol("tenants", AsCount, func(r TenantBacklog) int64 { return r.Tenants }),
			},
		},
		{
			Name: CheckWorkers, Title: "Workers and heartbeats", Step: StepQueues,
			AlsoSteps:  []string{StepEntry},
			EmptyTitle: "No worker has registered.",
			EmptyWhy:   " Engine processes heartbeat a row here; start one with `console worker`.",
			statement:  queues.WorkerListSQL,
			tables:     []string{"workers"},
			panel:      typed((*Diagnostics).Workers),
			History:    HistoryWorkers, historyRows: recorded[Worker],
			round:   section(func(r *Round) *[]Worker { return &r.Workers }, readWorkers),
			metrics: true,
			sample:  sampleWorkers,
			Columns: []Column{
				textCol("id", AsText, func(r Worker) string { return r.ID }),
				textCol("host", AsText, func(r Worker) string { return r.Host }),
				intCol("pid", AsID, func(r Worker) int { return r.PID }),
				namesCol("queues", func(r Worker) []string { return r.Queues }),
				intCol("concurrency", AsCount, func(r Worker) int { return r.Concurrency }),
				intCol("in_flight", AsCount, func(r Worker) int { return r.InFlight }),
				textCol("version", AsText, func(r Worker) string { return r.Version }),
				timeCol("started_at", func(r Worker) time.Time { return r.StartedAt }),
				timeCol("last_seen_at", func(r Worker) time.Time { return r.LastSeenAt }),
				optTimeCol("stopped_at", func(r Worker) *time.Time { return r.StoppedAt }),
				floatCol("last_seen_seconds", AsSeconds, func(r Worker) float64 { return r.LastSeenSeconds }),
				boolCol("alive", func(r Worker) bool { return r.Alive }),
				textCol("recent_errors", AsText, Worker.LastError),
			},
		},
		{
			Name: CheckOutboxHealth, Title: "Outbox and relay", Step: StepOutbox,
			AlsoSteps:  []string{StepVerification},
			EmptyTitle: "No outbox activity.",
			statement:  queues.OutboxHealthSQL,
			tables:     []string{"outbox_events", "relay_settings"},
			panel:      typed((*Diagnostics).OutboxHealth),
			History:    HistoryOutbox, historyRows: recordedOne[OutboxStat],
			round:   section(func(r *Round) **OutboxStat { return &r.Outbox }, readOutbox),
			metrics: true,
			sample:  sampleOutbox,
			Columns: []Column{
				intCol("pending", AsCount, func(r OutboxStat) int64 { return r.Pending }),
				intCol("pending_later", AsCount, func(r OutboxStat) int64 { return r.PendingLater }),
				optTimeCol("oldest_pending_at", func(r OutboxStat) *time.Time { return r.OldestPendingAt }),
				floatCol("oldest_pending_seconds", AsSeconds, func(r OutboxStat) float64 { return r.OldestPendingSeconds }),
				intCol("inflight", AsCount, func(r OutboxStat) int64 { return r.Inflight }),
				intCol("expired_leases", AsCount, func(r OutboxStat) int64 { return r.ExpiredLeases }),
				intCol("dead", AsCount, func(r OutboxStat) int64 { return r.Dead }),
				optTimeCol("last_dead_at", func(r OutboxStat) *time.Time { return r.LastDeadAt }),
				boolCol("relay_paused", func(r OutboxStat) bool { return r.RelayPaused }),
				intCol("accepted_unmarked", AsCount, func(r OutboxStat) int64 { return r.AcceptedUnmarked }),
				optTimeCol("oldest_accepted_at", func(r OutboxStat) *time.Time { return r.OldestAcceptedAt }),
				idsCol("accepted_unmarked_ids", func(r OutboxStat) []int64 { return r.AcceptedUnmarkedIDs }),
			},
		},
		{
			Name: CheckReplication, Title: "Replication (from the primary)", Step: StepReplication,
			EmptyTitle: "No standby is attached.",
			EmptyWhy:   " Streaming standbys connected to this server would be listed with their lag here.",
			panel:      typed((*Diagnostics).Replication),
			History:    HistoryReplication, historyRows: recorded[Standby],
			round:   section(func(r *Round) *[]Standby { return &r.Replication }, ignoreRound(Replication)),
			metrics: true,
			sample:  sampleReplication,
			Columns: []Column{
				intCol("pid", AsID, func(r Standby) int32 { return r.PID }),
				textCol("application_name", AsText, func(r Standby) string { return r.ApplicationName }),
				textCol("client_addr", AsText, func(r Standby) string { return r.ClientAddr }),
				textCol("state", AsText, func(r Standby) string { return r.State }),
				textCol("sync_state", AsText, func(r Standby) string { return r.SyncState }),
				intCol("sent_lag_bytes", AsBytes, func(r Standby) int64 { return r.SentLagBytes }),
				intCol("write_lag_bytes", AsBytes, func(r Standby) int64 { return r.WriteLagBytes }),
				intCol("flush_lag_bytes", AsBytes, func(r Standby) int64 { return r.FlushLagBytes }),
				intCol("replay_lag_bytes", AsBytes, func(r Standby) int64 { return r.ReplayLagBytes }),
				optFloatCol("write_lag_seconds", AsSeconds, func(r Standby) *float64 { return r.WriteLagSeconds }),
				optFloatCol("flush_lag_seconds", AsSeconds, func(r Standby) *float64 { return r.FlushLagSeconds }),
				optFloatCol("replay_lag_seconds", AsSeconds, func(r Standby) *float64 { return r.ReplayLagSeconds }),
				optIntCol("xmin_age", AsCount, func(r Standby) *int32 { return r.XminAge }),
				optTimeCol("reply_time", func(r Standby) *time.Time { return r.ReplyTime }),
			},
		},
		{
			Name: CheckStandbyStatus, Title: "Standby receiver and replay", Step: StepReplication,
			EmptyTitle: "No standby configured.",
			EmptyWhy:   " Set STANDBY_URLS to read receiver and replay state from standbys.",
			panel:      (*Diagnostics).standbyStatusPanel,
			Columns: []Column{
				boolCol("in_recovery", func(r StandbyState) bool { return r.InRecovery }),
				textCol("receive_lsn", AsCode, func(r StandbyState) string { return r.ReceiveLSN }),
				textCol("replay_lsn", AsCode, func(r StandbyState) string { return r.ReplayLSN }),
				intCol("replay_lag_bytes", AsBytes, func(r StandbyState) int64 { return r.ReplayLagBytes }),
				optTimeCol("last_replay_at", func(r StandbyState) *time.Time { return r.LastReplayAt }),
				floatCol("replay_delay_seconds", AsSeconds, func(r StandbyState) float64 { return r.ReplayDelaySeconds }),
				textCol("replay_pause_state", AsText, func(r StandbyState) string { return r.ReplayPauseState }),
				textCol("receiver_status", AsText, func(r StandbyState) string { return r.ReceiverStatus }),
				textCol("sender_host", AsText, func(r StandbyState) string { return r.SenderHost }),
				intCol("sender_port", AsCount, func(r StandbyState) int32 { return r.SenderPort }),
				textCol("slot_name", AsText, func(r StandbyState) string { return r.SlotName }),
				textCol("flushed_lsn", AsCode, func(r StandbyState) string { return r.FlushedLSN }),
				textCol("latest_end_lsn", AsCode, func(r StandbyState) string { return r.LatestEndLSN }),
				optTimeCol("last_msg_receipt_time", func(r StandbyState) *time.Time { return r.LastMsgReceiptTime }),
				optTimeCol("latest_end_time", func(r StandbyState) *time.Time { return r.LatestEndTime }),
				textCol("url", AsText, func(r StandbyState) string { return r.URL }),
			},
		},
		{
			Name: CheckReplicationSlots, Title: "Replication slots", Step: StepReplication,
			EmptyTitle: "No replication slots.",
			EmptyWhy:   " Physical and logical slots, with the WAL they retain, would be listed here.",
			variants:   []variant{{MinVersion: 0, File: "replication_slots"}, {MinVersion: 170000, File: "replication_slots_v17"}},
			panel:      typed((*Diagnostics).ReplicationSlots),
			History:    HistorySlots, historyRows: recorded[Slot],
			round:   section(func(r *Round) *[]Slot { return &r.Slots }, readSlots),
			metrics: true,
			sample:  sampleSlots,
			Columns: []Column{
				textCol("slot_name", AsText, func(r Slot) string { return r.SlotName }),
				textCol("plugin", AsText, func(r Slot) string { return r.Plugin }),
				textCol("slot_type", AsText, func(r Slot) string { return r.SlotType }),
				textCol("database", AsText, func(r Slot) string { return r.Database }),
				boolCol("temporary", func(r Slot) bool { return r.Temporary }),
				boolCol("active", func(r Slot) bool { return r.Active }),
				optIntCol("active_pid", AsID, func(r Slot) *int32 { return r.ActivePID }),
				optTextCol("xmin", AsCode, func(r Slot) *string { return r.Xmin }),
				optTextCol("catalog_xmin", AsCode, func(r Slot) *string { return r.CatalogXmin }),
				optIntCol("xmin_age", AsCount, func(r Slot) *int32 { return r.XminAge }),
				optIntCol("catalog_xmin_age", AsCount, func(r Slot) *int32 { return r.CatalogXminAge }),
				optTextCol("restart_lsn", AsCode, func(r Slot) *string { return r.RestartLSN }),
				optTextCol("confirmed_flush_lsn", AsCode, func(r Slot) *string { return r.ConfirmedFlushLSN }),
				intCol("retained_bytes", AsBytes, func(r Slot) int64 { return r.RetainedBytes }),
				textCol("wal_status", AsText, func(r Slot) string { return r.WALStatus }),
				optIntCol("safe_wal_size", AsBytes, func(r Slot) *int64 { return r.SafeWALSize }),
				optTimeCol("inactive_since", func(r Slot) *time.Time { return r.InactiveSince }),
				textCol("invalidation_reason", AsText, func(r Slot) string { return r.InvalidationReason }),
				optFloatCol("seconds_to_exhaustion", AsNumber, func(r Slot) *float64 { return r.SecondsToExhaustion }),
			},
		},
		{
			Name: CheckArchiver, Title: "WAL archiver", Step: StepReplication,
			EmptyTitle: "No archiver statistics.",
			panel:      typed((*Diagnostics).Archiver),
			round:      section(func(r *Round) **ArchiverStat { return &r.Archiver }, ignoreRound(pointer(Archiver))),
			metrics:    true,
			sample:     sampleArchiver,
			Columns: []Column{
				textCol("archive_mode", AsText, func(r ArchiverStat) string { return r.ArchiveMode }),
				intCol("archived_count", AsCount, func(r ArchiverStat) int64 { return r.ArchivedCount }),
				intCol("failed_count", AsCount, func(r ArchiverStat) int64 { return r.FailedCount }),
				textCol("last_archived_wal", AsText, func(r ArchiverStat) string { return r.LastArchivedWAL }),
				optTimeCol("last_archived_time", func(r ArchiverStat) *time.Time { return r.LastArchivedTime }),
				textCol("last_failed_wal", AsText, func(r ArchiverStat) string { return r.LastFailedWAL }),
				optTimeCol("last_failed_time", func(r ArchiverStat) *time.Time { return r.LastFailedTime }),
				boolCol("failing", func(r ArchiverStat) bool { return r.Failing }),
				optTimeCol("stats_reset", func(r ArchiverStat) *time.Time { return r.StatsReset }),
			},
		},
		{
			Name: CheckStatementsTop, Title: "Top statements (pg_stat_statements)", Step: StepPlans,
			EmptyTitle: "No statements recorded.",
			EmptyWhy:   " Install pg_stat_statements (shared_preload_libraries and CREATE EXTENSION) to see the top statements.",
			panel:      typed((*Diagnostics).StatementsTop),
			Columns: []Column{
				intCol("queryid", AsCount, func(r Statement) int64 { return r.QueryID }),
				intCol("calls", AsCount, func(r Statement) int64 { return r.Calls }),
				intCol("rows", AsCount, func(r Statement) int64 { return r.Rows }),
				floatCol("total_exec_time_ms", AsNumber, func(r Statement) float64 { return r.TotalExecTimeMS }),
				floatCol("mean_exec_time_ms", AsNumber, func(r Statement) float64 { return r.MeanExecTimeMS }),
				floatCol("max_exec_time_ms", AsNumber, func(r Statement) float64 { return r.MaxExecTimeMS }),
				floatCol("mean_plan_time_ms", AsNumber, func(r Statement) float64 { return r.MeanPlanTimeMS }),
				intCol("shared_blks_hit", AsCount, func(r Statement) int64 { return r.SharedBlksHit }),
				intCol("shared_blks_read", AsCount, func(r Statement) int64 { return r.SharedBlksRead }),
				intCol("temp_blks_written", AsCount, func(r Statement) int64 { return r.TempBlksWritten }),
				intCol("wal_bytes", AsBytes, func(r Statement) int64 { return r.WALBytes }),
				textCol("query", AsQuery, func(r Statement) string { return r.Query }),
			},
		},
		{
			Name: CheckPreparedXacts, Title: "Prepared transactions", Step: StepVerification,
			EmptyTitle:  "No prepared transactions.",
			EmptyWhy:    " Two-phase transactions waiting for a decision would be listed here.",
			panel:       typed((*Diagnostics).PreparedXacts),
			round:       section(func(r *Round) *[]PreparedXact { return &r.Prepared }, ignoreRound(PreparedXacts)),
			metrics:     true,
			sample:      samplePrepared,
			sampleRound: func(r Round, s *Sample) { n := len(r.Prepared); s.PreparedXacts = &n },
			Columns: []Column{
				textCol("gid", AsCode, func(r PreparedXact) string { return r.GID }),
				textCol("xid", AsText, func(r PreparedXact) string { return r.XID }),
				intCol("xid_age", AsCount, func(r PreparedXact) int32 { return r.XIDAge }),
				timeCol("prepared", func(r PreparedXact) time.Time { return r.Prepared }),
				floatCol("age_seconds", AsSeconds, func(r PreparedXact) float64 { return r.AgeSeconds }),
				textCol("owner", AsText, func(r PreparedXact) string { return r.Owner }),
				textCol("database", AsText, func(r PreparedXact) string { return r.Database }),
			},
		},
		{
			Name: CheckXminHorizon, Title: "xmin horizon holders", Step: StepVerification,
			EmptyTitle: "Nothing holds the xmin horizon back.",
			panel:      typed((*Diagnostics).XminHorizon),
			round:      section(func(r *Round) *[]XminHolder { return &r.Xmin }, ignoreRound(XminHorizon)),
			Columns: []Column{
				textCol("kind", AsText, func(r XminHolder) string { return r.Kind }),
				textCol("holder", AsText, func(r XminHolder) string { return r.Holder }),
				textCol("xmin", AsCode, func(r XminHolder) string { return r.Xmin }),
				intCol("xid_age", AsCount, func(r XminHolder) int32 { return r.XIDAge }),
				optFloatCol("age_seconds", AsSeconds, func(r XminHolder) *float64 { return r.AgeSeconds }),
				textCol("detail", AsText, func(r XminHolder) string { return r.Detail }),
			},
		},
		{
			Name: CheckTableVacuum, Title: "Dead tuples and vacuum of queue tables", Step: StepVerification,
			AlsoSteps:  []string{StepPlans},
			EmptyTitle: "No table statistics yet.",
			panel:      typed((*Diagnostics).TableVacuum),
			round:      section(func(r *Round) *[]TableStat { return &r.Tables }, ignoreRound(TableVacuum)),
			slow:       true,
			metrics:    true,
			sample:     sampleTables,
			Columns: []Column{
				textCol("schema", AsText, func(r TableStat) string { return r.Schema }),
				textCol("table", AsText, func(r TableStat) string { return r.Table }),
				intCol("n_live_tup", AsCount, func(r TableStat) int64 { return r.LiveTuples }),
				intCol("n_dead_tup", AsCount, func(r TableStat) int64 { return r.DeadTuples }),
				floatCol("dead_ratio", AsPercent, func(r TableStat) float64 { return r.DeadRatio }),
				intCol("n_mod_since_analyze", AsCount, func(r TableStat) int64 { return r.ModSinceAnalyze }),
				optTimeCol("last_vacuum", func(r TableStat) *time.Time { return r.LastVacuum }),
				optTimeCol("last_autovacuum", func(r TableStat) *time.Time { return r.LastAutovacuum }),
				optTimeCol("last_analyze", func(r TableStat) *time.Time { return r.LastAnalyze }),
				optTimeCol("last_autoanalyze", func(r TableStat) *time.Time { return r.LastAutoanalyze }),
				intCol("vacuum_count", AsCount, func(r TableStat) int64 { return r.VacuumCount }),
				intCol("autovacuum_count", AsCount, func(r TableStat) int64 { return r.AutovacuumCount }),
			},
		},
		{
			Name: CheckInvalidIndexes, Title: "Invalid indexes", Step: StepVerification,
			AlsoSteps:  []string{StepPlans},
			EmptyTitle: "No invalid indexes.",
			EmptyWhy:   " An index left invalid by a failed CREATE INDEX CONCURRENTLY would show here.",
			panel:      typed((*Diagnostics).InvalidIndexes),
			round:      section(func(r *Round) *[]InvalidIndex { return &r.Invalid }, ignoreRound(InvalidIndexes)),
			slow:       true,
			Columns: []Column{
				textCol("schema", AsText, func(r InvalidIndex) string { return r.Schema }),
				textCol("index", AsText, func(r InvalidIndex) string { return r.Index }),
				textCol("table", AsText, func(r InvalidIndex) string { return r.Table }),
				boolCol("valid", func(r InvalidIndex) bool { return r.Valid }),
				boolCol("ready", func(r InvalidIndex) bool { return r.Ready }),
				textCol("definition", AsText, func(r InvalidIndex) string { return r.Definition }),
			},
		},
		{
			Name: CheckNotifyQueue, Title: "NOTIFY queue usage", Step: StepVerification,
			panel: typed((*Diagnostics).NotifyQueue),
			round: section(func(r *Round) **NotifyUsage { return &r.Notify }, ignoreRound(pointer(NotifyQueue))),
			Columns: []Column{
				floatCol("usage", AsNumber, func(r NotifyUsage) float64 { return r.Usage }),
			},
		},
		{
			Name: CheckConnectionUse, Title: "Connections by database, user, application and state", Step: StepEntry,
			EmptyTitle: "No client connections.",
			panel:      typed((*Diagnostics).ConnectionPressure),
			round:      section(func(r *Round) *[]ConnectionGroup { return &r.Connections }, ignoreRound(ConnectionPressure)),
			Columns: []Column{
				textCol("database", AsText, func(r ConnectionGroup) string { return r.Database }),
				textCol("user", AsText, func(r ConnectionGroup) string { return r.User }),
				textCol("application_name", AsText, func(r ConnectionGroup) string { return r.Application }),
				textCol("state", AsText, func(r ConnectionGroup) string { return r.State }),
				intCol("connections", AsCount, func(r ConnectionGroup) int64 { return r.Connections }),
				textCol("client_addr", AsText, func(r ConnectionGroup) string { return r.ClientAddr }),
				intCol("used", AsCount, func(r ConnectionGroup) int64 { return r.Used }),
				intCol("max_connections", AsCount, func(r ConnectionGroup) int64 { return r.MaxConnections }),
				intCol("reserved", AsCount, func(r ConnectionGroup) int64 { return r.Reserved }),
			},
		},
		{
			Name: CheckSequenceUse, Title: "Sequences closest to their limit", Step: StepVerification,
			EmptyTitle: "No sequences.",
			panel:      typed((*Diagnostics).SequenceExhaustion),
			round:      section(func(r *Round) *[]SequenceUse { return &r.Sequences }, ignoreRound(SequenceExhaustion)),
			slow:       true,
			Columns: []Column{
				textCol("sequence", AsCode, func(r SequenceUse) string { return r.Sequence }),
				textCol("data_type", AsText, func(r SequenceUse) string { return r.DataType }),
				textCol("table", AsText, func(r SequenceUse) string { return r.Table }),
				textCol("column", AsText, func(r SequenceUse) string { return r.Column }),
				textCol("column_type", AsText, func(r SequenceUse) string { return r.ColumnType }),
				intCol("last_value", AsCount, func(r SequenceUse) int64 { return r.LastValue }),
				intCol("limit", AsCount, func(r SequenceUse) int64 { return r.Limit }),
				floatCol("used_fraction", AsPercent, func(r SequenceUse) float64 { return r.UsedFraction }),
			},
		},
		{
			Name: CheckWraparound, Title: "Transaction ID and multixact wraparound", Step: StepVerification,
			panel: typed((*Diagnostics).Wraparound),
			round: section(func(r *Round) *[]WraparoundAge { return &r.Wraparound }, readWraparound),
			slow:  true,
			Columns: []Column{
				textCol("kind", AsText, func(r WraparoundAge) string { return r.Kind }),
				textCol("database", AsText, func(r WraparoundAge) string { return r.Database }),
				textCol("name", AsCode, func(r WraparoundAge) string { return r.Name }),
				intCol("xid_age", AsCount, func(r WraparoundAge) int64 { return r.XIDAge }),
				intCol("mxid_age", AsCount, func(r WraparoundAge) int64 { return r.MXIDAge }),
				intCol("freeze_max_age", AsCount, func(r WraparoundAge) int64 { return r.FreezeMaxAge }),
				intCol("multixact_freeze_max_age", AsCount, func(r WraparoundAge) int64 { return r.MultixactFreezeMaxAge }),
			},
		},
		{
			Name: CheckIdempotencyStuck, Title: "Idempotency keys stuck in processing", Step: StepEntry,
			EmptyTitle: "No idempotency key is stuck.",
			EmptyWhy:   " A key claimed by a request that never completed would be listed here once older than the idempotency.stuck threshold.",
			statement:  queues.IdempotencyStuckSQL,
			tables:     []string{"idempotency_requests"},
			panel:      typed((*Diagnostics).IdempotencyStuck),
			round:      section(func(r *Round) *[]StuckIdempotencyKey { return &r.Idempotency }, readIdempotency),
			Columns: []Column{
				textCol("scope", AsText, func(r StuckIdempotencyKey) string { return r.Scope }),
				textCol("key", AsCode, func(r StuckIdempotencyKey) string { return r.Key }),
				timeCol("created_at", func(r StuckIdempotencyKey) time.Time { return r.CreatedAt }),
				optTimeCol("locked_until", func(r StuckIdempotencyKey) *time.Time { return r.LockedUntil }),
				floatCol("age_seconds", AsSeconds, func(r StuckIdempotencyKey) float64 { return r.AgeSeconds }),
				intCol("total", AsCount, func(r StuckIdempotencyKey) int64 { return r.Total }),
			},
		},
		{
			Name: CheckLongRunningJobs, Title: "Jobs running far longer than usual for their kind", Step: StepQueues,
			EmptyTitle: "No job runs far longer than its kind usually does.",
			EmptyWhy:   " A running job whose run time is many times the recent 95th percentile of its kind would be listed here.",
			statement:  queues.LongRunningJobsSQL,
			tables:     []string{"jobs", "job_kind_runs"},
			panel:      typed((*Diagnostics).LongRunningJobs),
			round:      section(func(r *Round) *[]LongRunningJob { return &r.LongJobs }, readLongRunningJobs),
			Columns: []Column{
				intCol("job_id", AsID, func(r LongRunningJob) int64 { return r.JobID }),
				textCol("queue", AsText, func(r LongRunningJob) string { return r.Queue }),
				textCol("kind", AsText, func(r LongRunningJob) string { return r.Kind }),
				textCol("lease_owner", AsText, func(r LongRunningJob) string { return r.LeaseOwner }),
				timeCol("started_at", func(r LongRunningJob) time.Time { return r.StartedAt }),
				intCol("attempts", AsCount, func(r LongRunningJob) int32 { return r.Attempts }),
				floatCol("running_seconds", AsSeconds, func(r LongRunningJob) float64 { return r.RunningSeconds }),
				floatCol("usual_seconds", AsSeconds, func(r LongRunningJob) float64 { return r.UsualSeconds }),
				intCol("samples", AsCount, func(r LongRunningJob) int64 { return r.Samples }),
			},
		},
		{
			Name: CheckWALDir, Title: "WAL directory size", Step: StepResources,
			panel: typed((*Diagnostics).WALDir),
			round: section(func(r *Round) **WALDirStat { return &r.WALDir }, ignoreRound(pointer(WALDir))),
			Columns: []Column{
				boolCol("readable", func(r WALDirStat) bool { return r.Readable }),
				optIntCol("wal_bytes", AsBytes, func(r WALDirStat) *int64 { return r.Bytes }),
				optIntCol("segments", AsCount, func(r WALDirStat) *int64 { return r.Segments }),
				intCol("max_wal_size", AsBytes, func(r WALDirStat) int64 { return r.MaxWALSize }),
				intCol("wal_keep_size", AsBytes, func(r WALDirStat) int64 { return r.WALKeepSize }),
			},
		},
		{
			Name: CheckStandbyConflicts, Title: "Standby query conflicts", Step: StepReplication,
			EmptyTitle: "No standby configured.",
			EmptyWhy:   " Set STANDBY_URLS to read each standby's canceled queries (pg_stat_database_conflicts).",
			panel:      (*Diagnostics).standbyConflictsPanel,
			Columns: []Column{
				textCol("standby", AsText, func(r StandbyConflict) string { return r.Standby }),
				textCol("database", AsText, func(r StandbyConflict) string { return r.Database }),
				intCol("tablespace", AsCount, func(r StandbyConflict) int64 { return r.Tablespace }),
				intCol("lock", AsCount, func(r StandbyConflict) int64 { return r.Lock }),
				intCol("snapshot", AsCount, func(r StandbyConflict) int64 { return r.Snapshot }),
				intCol("bufferpin", AsCount, func(r StandbyConflict) int64 { return r.Bufferpin }),
				intCol("deadlock", AsCount, func(r StandbyConflict) int64 { return r.Deadlock }),
				intCol("total", AsCount, func(r StandbyConflict) int64 { return r.Total }),
			},
		},
		{
			Name: CheckDeadlocks, Title: "Deadlocks by database", Step: StepBlocking,
			EmptyTitle: "No database statistics.",
			panel:      typed((*Diagnostics).Deadlocks),
			round:      section(func(r *Round) *[]DeadlockStat { return &r.DeadlockStats }, ignoreRound(Deadlocks)),
			Columns: []Column{
				textCol("database", AsText, func(r DeadlockStat) string { return r.Database }),
				intCol("deadlocks", AsCount, func(r DeadlockStat) int64 { return r.Deadlocks }),
				optTimeCol("stats_reset", func(r DeadlockStat) *time.Time { return r.StatsReset }),
				boolCol("log_lock_waits", func(r DeadlockStat) bool { return r.LogLockWaits }),
				textCol("deadlock_timeout", AsText, func(r DeadlockStat) string { return r.DeadlockTimeout }),
			},
		},
		{
			// The recorded lock episodes of the last hour change little
			// from one round to the next: the slow clock reads them.
			Name: CheckRepeatBlockers, Title: "Applications that held up the job claims (lock episodes, last hour)", Step: StepBlocking,
			statement:  episodes.RepeatBlockersSQL,
			EmptyTitle: "No recorded lock episode held up a job claim in the last hour.",
			EmptyWhy:   " The lock-episode recorder keeps every lock wait it sees once a second; an application whose locks made the engine's claims wait is listed here with how often.",
			tables:     []string{"lock_episodes"},
			panel:      typed((*Diagnostics).RepeatBlockers),
			round:      section(func(r *Round) *[]RepeatBlocker { return &r.RepeatBlockers }, readRepeatBlockers),
			slow:       true,
			Columns: []Column{
				textCol("root_application", AsText, func(r RepeatBlocker) string { return r.RootApplication }),
				intCol("episodes", AsCount, func(r RepeatBlocker) int { return r.Episodes }),
				intCol("claims_delayed", AsCount, func(r RepeatBlocker) int { return r.ClaimsDelayed }),
				floatCol("waited_seconds", AsSeconds, func(r RepeatBlocker) float64 { return r.WaitedSeconds }),
				timeCol("last_at", func(r RepeatBlocker) time.Time { return r.LastAt }),
			},
		},
	}
	checkIndex = make(map[string]int, len(checks))
	variants := make(map[string][]variant)
	for i, c := range checks {
		checkIndex[c.Name] = i
		if c.variants != nil {
			variants[c.Name] = c.variants
		}
	}
	queries.WithVariants(variants)
}

// CheckNamed returns the check of the catalog called name.
func CheckNamed(name string) (Check, bool) {
	i, ok := checkIndex[name]
	if !ok {
		return Check{}, false
	}
	return checks[i], true
}

// Catalog lists every check in catalog order. The slice is a copy.
func Catalog() []Check {
	return append([]Check(nil), checks...)
}

// StepPanels lists the checks whose panels a runbook step (or page) shows:
// those that are evidence for it (Check.Step), then those it borrows
// (Check.AlsoSteps), each in catalog order.
func StepPanels(step string) []string {
	var own, also []string
	for _, c := range checks {
		switch {
		case c.Step == step:
			own = append(own, c.Name)
		case slices.Contains(c.AlsoSteps, step):
			also = append(also, c.Name)
		}
	}
	return append(own, also...)
}

// tablesOf returns the application tables query name reads.
func tablesOf(name string) []string {
	c, _ := CheckNamed(name)
	return c.tables
}

// readWALAnchor reads the WAL position a round measures its rate from.
func readWALAnchor(ctx context.Context, db DBTX, s *roundState) error {
	p, err := WALPosition(ctx, db)
	if err == nil {
		s.walFrom = &p
	}
	return err
}

func readQueues(ctx context.Context, db DBTX, s *roundState) ([]QueueStat, error) {
	stats, groups, err := queues.QueueHealthAll(ctx, db, s.queueParams)
	if err == nil {
		s.deadGroups = groups
	}
	return stats, err
}

// readDeadLetters takes the groups the queue health read, in the same
// snapshot and order, when it succeeded: the window's deaths are read once
// a round.
func readDeadLetters(ctx context.Context, db DBTX, s *roundState) ([]DeadLetterGroup, error) {
	if s.deadGroups != nil {
		return s.deadGroups[:min(len(s.deadGroups), queues.DefaultDeadLetterGroups)], nil
	}
	return DeadLetters(ctx, db, s.queueParams)
}

func readWorkers(ctx context.Context, db DBTX, s *roundState) ([]Worker, error) {
	return queues.WorkerList(ctx, db, s.thresholds.WorkerHeartbeat)
}

// readOutbox counts up to the largest outbox threshold, so the cap never
// hides one.
func readOutbox(ctx context.Context, db DBTX, s *roundState) (*OutboxStat, error) {
	o, err := queues.OutboxHealth(ctx, db, max(DefaultCountCap, s.thresholds.OutboxBacklogPending, s.thresholds.OutboxDead))
	return &o, err
}

func readIdempotency(ctx context.Context, db DBTX, s *roundState) ([]StuckIdempotencyKey, error) {
	return queues.IdempotencyStuck(ctx, db, s.thresholds.IdempotencyStuck, 0)
}

func readLongRunningJobs(ctx context.Context, db DBTX, s *roundState) ([]LongRunningJob, error) {
	return queues.LongRunningJobs(ctx, db, longJobParams(s.thresholds))
}

func readCheckpointer(ctx context.Context, db DBTX, s *roundState) (*CheckpointerStat, error) {
	c, err := Checkpointer(ctx, db, s.version)
	return &c, err
}

func readSlots(ctx context.Context, db DBTX, s *roundState) ([]Slot, error) {
	return ReplicationSlots(ctx, db, s.version)
}

// sampleState is what the checks of one sample share.
type sampleState struct {
	sample     *Sample
	version    int
	thresholds Thresholds
	// slow returns the slow clock's last read of the catalog-wide checks,
	// which the sampler takes their rows from instead of reading them
	// itself every sample.
	slow func(context.Context) Round
	// activity is the sample's activity rows; nil until read, and when
	// the read failed.
	activity []Backend
}

// sampleWALPosition also dates the sample by the server's clock.
func sampleWALPosition(ctx context.Context, db DBTX, s *sampleState) error {
	p, err := WALPosition(ctx, db)
	if err == nil {
		s.sample.WAL = &p
		s.sample.At = p.SampledAt.UTC()
	}
	return err
}

func sampleWALStats(ctx context.Context, db DBTX, s *sampleState) error {
	w, err := WALStats(ctx, db, s.version)
	if err == nil {
		s.sample.WALStats = &w
	}
	return err
}

func sampleCheckpointer(ctx context.Context, db DBTX, s *sampleState) error {
	c, err := Checkpointer(ctx, db, s.version)
	if err == nil {
		s.sample.Checkpointer = &c
	}
	return err
}

func sampleArchiver(ctx context.Context, db DBTX, s *sampleState) error {
	a, err := Archiver(ctx, db)
	if err == nil {
		s.sample.Archiver = &a
	}
	return err
}

// sampleIO sums pg_stat_io over every row.
func sampleIO(ctx context.Context, db DBTX, s *sampleState) error {
	rows, err := IOStats(ctx, db, s.version)
	if err != nil {
		return err
	}
	var tot IOTotals
	for _, r := range rows {
		tot.ReadBytes += r.ReadBytes
		tot.WriteBytes += r.WriteBytes
		tot.ExtendBytes += r.ExtendBytes
		if r.StatsReset != nil && (tot.StatsReset == nil || r.StatsReset.Before(*tot.StatsReset)) {
			tot.StatsReset = r.StatsReset
		}
	}
	s.sample.IO = &tot
	return nil
}

func sampleReplication(ctx context.Context, db DBTX, s *sampleState) (err error) {
	s.sample.Replication, err = Replication(ctx, db)
	return err
}

func sampleSlots(ctx context.Context, db DBTX, s *sampleState) (err error) {
	s.sample.Slots, err = ReplicationSlots(ctx, db, s.version)
	return err
}

func sampleQueues(ctx context.Context, db DBTX, s *sampleState) (err error) {
	s.sample.Queues, err = queues.QueueHealth(ctx, db, QueueParams{DeadWindow: s.thresholds.DeadLetterWindow})
	return err
}

func sampleWorkers(ctx context.Context, db DBTX, s *sampleState) (err error) {
	s.sample.Workers, err = queues.WorkerList(ctx, db, s.thresholds.WorkerHeartbeat)
	return err
}

func sampleOutbox(ctx context.Context, db DBTX, s *sampleState) error {
	o, err := queues.OutboxHealth(ctx, db, 0)
	if err == nil {
		s.sample.Outbox = &o
	}
	return err
}

// sampleBlocked counts the backends waiting in the blocking tree.
func sampleBlocked(ctx context.Context, db DBTX, s *sampleState) error {
	nodes, err := BlockingTree(ctx, db)
	if err == nil {
		s.sample.Blocked = blockedCount(nodes)
	}
	return err
}

// blockedCount is how many nodes of a blocking tree wait (every node but
// the roots).
func blockedCount(nodes []BlockingNode) *int {
	n := 0
	for _, x := range nodes {
		if !x.IsRoot {
			n++
		}
	}
	return &n
}

// knownUnblocked settles the sample's blocked count at zero, without
// reading the blocking tree, when the sample's activity rows (read just
// before) show no backend waiting on a lock: the tree's statement reads
// every lock of the server, and most samples find nobody waiting. Rows cut
// off by activity.sql's LIMIT settle nothing.
func knownUnblocked(s *sampleState) bool {
	if s.activity == nil || len(s.activity) >= activityLimit {
		return false
	}
	for _, b := range s.activity {
		if b.WaitEventType == "Lock" || len(b.BlockedBy) > 0 {
			return false
		}
	}
	zero := 0
	s.sample.Blocked = &zero
	return true
}

// activityLimit is activity.sql's LIMIT.
const activityLimit = 500

// sampleOldestXact keeps the age of the oldest client transaction, and
// the rows for the checks sampled after it (knownUnblocked).
func sampleOldestXact(ctx context.Context, db DBTX, s *sampleState) error {
	rows, err := Activity(ctx, db)
	if err == nil {
		s.sample.OldestXactSeconds = oldestXact(rows)
		s.activity = rows
		if s.activity == nil {
			s.activity = []Backend{}
		}
	}
	return err
}

// oldestXact is the age of the oldest client backend's transaction in
// rows, 0 when none is in one.
func oldestXact(rows []Backend) *float64 {
	oldest := 0.0
	for _, b := range rows {
		if b.BackendType == "client backend" && b.XactAgeSeconds > oldest {
			oldest = b.XactAgeSeconds
		}
	}
	return &oldest
}

func samplePrepared(ctx context.Context, db DBTX, s *sampleState) error {
	px, err := PreparedXacts(ctx, db)
	if err == nil {
		n := len(px)
		s.sample.PreparedXacts = &n
	}
	return err
}

func sampleTables(ctx context.Context, _ DBTX, s *sampleState) error {
	r := s.slow(ctx)
	if r.Failed(CheckTableVacuum) {
		return fmt.Errorf("%s on the slow clock failed", CheckTableVacuum)
	}
	s.sample.Tables = r.Tables
	return nil
}
