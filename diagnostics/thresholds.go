package diagnostics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
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
	// WorkerHeartbeat: a worker is alive when it heartbeated this recently;
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
		WorkerHeartbeat:       60 * time.Second,
		Connections:           0.8,
		Sequence:              0.75,
		Wraparound:            0.25,
		IdempotencyStuck:      10 * time.Minute,
		LongRunningJob:        5 * time.Minute,
		LongRunningJobFactor:  5,
		CheckpointRequested:   0.5,
		CheckpointWindow:      15 * time.Minute,
		StandbyConflicts:      1,
		StandbyConflictWindow: 15 * time.Minute,
		EngineErrorWindow:     2 * time.Minute,
		WALDirFactor:          2,
		WALDirBudget:          0,
		SlotDiskForecast:      time.Hour,
	}
}

// thresholdKind is the unit of a threshold value.
type thresholdKind int

const (
	kindDuration thresholdKind = iota
	kindCount
	kindSize
	kindRate
	kindFraction
)

// thresholdSetting is one settable threshold: a code (a finding code, or
// code.suffix for a second dimension) and the field it sets.
type thresholdSetting struct {
	kind thresholdKind
	dur  func(*Thresholds) *time.Duration
	num  func(*Thresholds) *int64
	flt  func(*Thresholds) *float64
}

func durSetting(f func(*Thresholds) *time.Duration) thresholdSetting {
	return thresholdSetting{kind: kindDuration, dur: f}
}
func countSetting(f func(*Thresholds) *int64) thresholdSetting {
	return thresholdSetting{kind: kindCount, num: f}
}
func sizeSetting(f func(*Thresholds) *int64) thresholdSetting {
	return thresholdSetting{kind: kindSize, num: f}
}

// thresholdSettings maps each settable code to its field. Codes with two
// dimensions take either: "queue.backlog=10m" sets the age,
// "queue.backlog=5000" the count.
var thresholdSettings = map[string][]thresholdSetting{
	CodeRootBlocker:       {durSetting(func(t *Thresholds) *time.Duration { return &t.RootBlockerWait })},
	CodeEngineStalled:     {durSetting(func(t *Thresholds) *time.Duration { return &t.RootBlockerWait })},
	CodeIdleInTransaction: {durSetting(func(t *Thresholds) *time.Duration { return &t.IdleInTransaction })},
	CodeLongRunning:       {durSetting(func(t *Thresholds) *time.Duration { return &t.LongRunningTx })},
	CodeQueueBacklog:      {durSetting(func(t *Thresholds) *time.Duration { return &t.QueueBacklogAge }), countSetting(func(t *Thresholds) *int64 { return &t.QueueBacklogReady })},
	CodeTenantStarvation:  {durSetting(func(t *Thresholds) *time.Duration { return &t.QueueBacklogAge })},
	CodeExpiredLeases:     {countSetting(func(t *Thresholds) *int64 { return &t.ExpiredLeases })},
	CodeDeadLetters:       {countSetting(func(t *Thresholds) *int64 { return &t.DeadLetters }), durSetting(func(t *Thresholds) *time.Duration { return &t.DeadLetterWindow })},
	CodeOutboxBacklog:     {durSetting(func(t *Thresholds) *time.Duration { return &t.OutboxBacklogAge }), countSetting(func(t *Thresholds) *int64 { return &t.OutboxBacklogPending })},
	CodeOutboxDead:        {countSetting(func(t *Thresholds) *int64 { return &t.OutboxDead })},
	CodeReplicationLag:    {sizeSetting(func(t *Thresholds) *int64 { return &t.ReplicationLagBytes }), durSetting(func(t *Thresholds) *time.Duration { return &t.ReplicationLagTime })},
	CodeSlotRetention:     {sizeSetting(func(t *Thresholds) *int64 { return &t.SlotRetentionBytes }), durSetting(func(t *Thresholds) *time.Duration { return &t.SlotExhaustion })},
	CodeSlotInactive:      {durSetting(func(t *Thresholds) *time.Duration { return &t.SlotInactive })},
	CodeWALRateHigh:       {{kind: kindRate, flt: func(t *Thresholds) *float64 { return &t.WALRate }}},
	CodeArchiverBacklog:   {countSetting(func(t *Thresholds) *int64 { return &t.ArchiverBacklog })},
	CodePreparedXactOld:   {durSetting(func(t *Thresholds) *time.Duration { return &t.PreparedXactAge })},
	CodeXminHorizon:       {durSetting(func(t *Thresholds) *time.Duration { return &t.XminHorizonAge }), countSetting(func(t *Thresholds) *int64 { return &t.XminHorizonXIDs })},
	CodeDeadTuples:        {countSetting(func(t *Thresholds) *int64 { return &t.DeadTuples })},
	CodeNotifyQueueUsage:  {{kind: kindFraction, flt: func(t *Thresholds) *float64 { return &t.NotifyQueueUsage }}},
	CodeConnections:       {{kind: kindFraction, flt: func(t *Thresholds) *float64 { return &t.Connections }}},
	CodeSequence:          {{kind: kindFraction, flt: func(t *Thresholds) *float64 { return &t.Sequence }}},
	CodeWorkersNoneAlive:  {durSetting(func(t *Thresholds) *time.Duration { return &t.WorkerHeartbeat })},
	CodeWraparound:        {{kind: kindFraction, flt: func(t *Thresholds) *float64 { return &t.Wraparound }}},
	CodeIdempotencyStuck:  {durSetting(func(t *Thresholds) *time.Duration { return &t.IdempotencyStuck })},
	CodeLongRunningJob:    {durSetting(func(t *Thresholds) *time.Duration { return &t.LongRunningJob }), countSetting(func(t *Thresholds) *int64 { return &t.LongRunningJobFactor })},
	CodeCheckpoints:       {{kind: kindFraction, flt: func(t *Thresholds) *float64 { return &t.CheckpointRequested }}, durSetting(func(t *Thresholds) *time.Duration { return &t.CheckpointWindow })},
	CodeStandbyConflicts:  {countSetting(func(t *Thresholds) *int64 { return &t.StandbyConflicts }), durSetting(func(t *Thresholds) *time.Duration { return &t.StandbyConflictWindow })},
	CodeEngineErrors:      {durSetting(func(t *Thresholds) *time.Duration { return &t.EngineErrorWindow })},
	CodeWALDir:            {countSetting(func(t *Thresholds) *int64 { return &t.WALDirFactor }), sizeSetting(func(t *Thresholds) *int64 { return &t.WALDirBudget })},
	CodeSlotDiskForecast:  {durSetting(func(t *Thresholds) *time.Duration { return &t.SlotDiskForecast })},
}

// ThresholdCodes lists the codes Set accepts, sorted.
func ThresholdCodes() []string {
	out := make([]string, 0, len(thresholdSettings))
	for k := range thresholdSettings {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Set overrides one finding's threshold from text, as given on the command
// line ("tx.long_running=30s" is Set("tx.long_running", "30s")). Durations
// look like 30s or 5m, sizes like 64MB or 1GiB (or plain bytes), counts and
// rates are plain numbers (rates may carry a size unit: 50MB means 50 MB/s).
// For codes with two dimensions the value's form picks the field:
// "queue.backlog=10m" sets the age, "queue.backlog=5000" the ready count.
func (t *Thresholds) Set(code, value string) error {
	settings, ok := thresholdSettings[code]
	if !ok {
		return fmt.Errorf("unknown threshold %q (known: %s)", code, strings.Join(ThresholdCodes(), ", "))
	}
	value = strings.TrimSpace(value)
	var errs []string
	for _, s := range settings {
		switch s.kind {
		case kindDuration:
			if d, err := time.ParseDuration(value); err == nil && d >= 0 {
				*s.dur(t) = d
				return nil
			}
			errs = append(errs, "a duration like 30s")
		case kindCount:
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && n >= 0 {
				*s.num(t) = n
				return nil
			}
			errs = append(errs, "a count")
		case kindSize:
			if n, err := ParseSize(value); err == nil {
				*s.num(t) = n
				return nil
			}
			errs = append(errs, "a size like 64MB")
		case kindRate:
			if n, err := ParseSize(strings.TrimSuffix(strings.TrimSuffix(value, "/s"), "ps")); err == nil {
				*s.flt(t) = float64(n)
				return nil
			}
			errs = append(errs, "a rate in bytes per second like 50MB")
		case kindFraction:
			f, err := strconv.ParseFloat(strings.TrimSuffix(value, "%"), 64)
			if err == nil && strings.HasSuffix(value, "%") {
				f /= 100
			}
			if err == nil && f >= 0 && f <= 1 {
				*s.flt(t) = f
				return nil
			}
			errs = append(errs, "a fraction like 0.5 or 50%")
		}
	}
	return fmt.Errorf("threshold %s=%q: want %s", code, value, strings.Join(errs, " or "))
}

// SetFlag applies one "CODE=VALUE" override, the form of `console findings
// --threshold` and of the serve settings; see Set.
func (t *Thresholds) SetFlag(s string) error {
	code, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("threshold %q: want CODE=VALUE, e.g. tx.long_running=30s", s)
	}
	return t.Set(strings.TrimSpace(code), value)
}

// ParseSize parses a byte size: a plain number of bytes, or a number with a
// unit kB, MB, GB, TB (powers of 1024, as PostgreSQL reads them) or KiB, MiB,
// GiB, TiB.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("size %q: not a number", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1, "B": 1,
		"k": 1 << 10, "kB": 1 << 10, "KB": 1 << 10, "KiB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MiB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GiB": 1 << 30,
		"T": 1 << 40, "TB": 1 << 40, "TiB": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, unit)
	}
	v := f * mult
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int64(v), nil
}
