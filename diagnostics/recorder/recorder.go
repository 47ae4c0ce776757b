package recorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/sqlset"
)

// The flight recorder keeps the evidence of incidents that cleared before
// anyone looked. Each sample of the Sampler becomes one row of
// history_samples: one jsonb document keyed by check (HistoryChecks), so a
// sample costs one tuple and one index entry, TOAST compresses the document
// as a whole, and "the blocking tree at 03:12:40" is one primary-key probe
// plus one key of the document. Rows per check would repeat the timestamp,
// tuple header and index entry nine times over for no query the views need.

// historyActivityRows bounds the activity kept per sample: the oldest
// transactions first (activity.sql's order), which are the ones a
// post-mortem asks about.
const historyActivityRows = 50

// historyQueryChars bounds each recorded statement text.
const historyQueryChars = 300

// HistoryDoc is one recorded sample: the evidence an on-call engineer needs
// after the fact. A nil field means the check failed in that sample.
type HistoryDoc struct {
	// BlockingTree is the blocking tree in tree order, with the job behind
	// each worker backend (BlockingNode.JobID).
	BlockingTree []diagnostics.BlockingNode `json:"blocking_tree"`
	// Activity is the backends with the oldest transactions, at most 50.
	Activity []diagnostics.Backend `json:"activity"`
	// WaitEvents counts the backends of Activity's query (all of them, not
	// only the 50 kept) by wait event.
	WaitEvents []WaitEventCount             `json:"wait_events"`
	WAL        *diagnostics.HistoryWALPoint `json:"wal"`
	// Replication is the lag of each standby; Slots the WAL each slot
	// retains.
	Replication []diagnostics.Standby   `json:"replication"`
	Slots       []diagnostics.Slot      `json:"slots"`
	Queues      []diagnostics.QueueStat `json:"queues"`
	Outbox      *diagnostics.OutboxStat `json:"outbox"`
	// Workers is the worker registry as the sample read it: null when the
	// read failed and in samples recorded before it was kept.
	Workers  []diagnostics.Worker `json:"workers"`
	Findings []findings.Finding   `json:"findings"`
	// RiverQueues are River's queues, the rows River's live queue pages
	// read, when the database's jobs are River's; left out of other
	// samples, and null when the read failed.
	RiverQueues []diagnostics.RiverQueueStat `json:"river_queues,omitzero"`
}

// WaitEventCount is how many backends waited on one wait event.
type WaitEventCount struct {
	WaitEventType string `json:"wait_event_type"`
	WaitEvent     string `json:"wait_event"`
	Backends      int    `json:"backends"`
}

// Config configures a Recorder. Zero values are defaults.
type Config struct {
	// Interval is the least time between two recorded samples across every
	// console attached to the database; default 10s. It should match the
	// Sampler's.
	Interval time.Duration
	// Name identifies this console in recorded_by (host:pid, for example);
	// default "console".
	Name string
	// Logger receives a line when recording turns off or on again; nil
	// discards.
	Logger *slog.Logger
}

// HistoryStatus says whether this console records and why not.
type HistoryStatus struct {
	// On is true while samples are recorded (by this console or another).
	On bool `json:"on"`
	// Reason says why history is off, or who records it; empty before the
	// first attempt.
	Reason string `json:"reason"`
	// LastRecorded is when this console last wrote a sample.
	LastRecorded *time.Time `json:"last_recorded,omitempty"`
}

// Recorder writes the Sampler's samples, with the blocking tree, activity
// and findings of the same moment, to history_samples. Several consoles on
// one database record once: each write first tries (never waits for) a
// transaction advisory lock and skips when a sample of the last interval is
// already there. It writes on the pool it is given (a read-write pool; the
// diagnostics pool is read-only) with short lock and statement timeouts and
// synchronous_commit off: a lost sample after a crash is acceptable, a
// write that waits on the application is not. On a standby or a database
// that refuses writes it records nothing and Status says so.
type Recorder struct {
	d    *diagnostics.Diagnostics
	pool *pgxpool.Pool
	cfg  Config

	mu      sync.Mutex
	status  HistoryStatus
	lastWAL *diagnostics.WALPoint
}

// New returns a Recorder of d's samples that writes through pool, which the
// caller owns and closes after the Recorder's last use. Hook it to a
// Sampler with sampler.Config.OnSampleFunc = r.Record.
func New(d *diagnostics.Diagnostics, pool *pgxpool.Pool, cfg Config) *Recorder {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "console"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{d: d, pool: pool, cfg: cfg}
}

// Status reports whether history is being recorded and, when not, why.
func (r *Recorder) Status() HistoryStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *Recorder) setStatus(on bool, reason string, recorded *time.Time) {
	r.mu.Lock()
	was := r.status
	r.status.On, r.status.Reason = on, reason
	if recorded != nil {
		r.status.LastRecorded = recorded
	}
	r.mu.Unlock()
	if was.On != on && !on {
		r.cfg.Logger.Warn("history recording is off", "reason", reason)
	} else if was.On != on && on {
		r.cfg.Logger.Info("history recording is on")
	}
}

// String is the status in a few words, as `console serve` prints it at
// start: "on (every 10s)", or "off: " and why.
func (s HistoryStatus) String() string {
	if s.On {
		return "on (" + s.Reason + ")"
	}
	return "off: " + strings.TrimPrefix(s.Reason, "history is off: ")
}

// Check tells, before the first sample, whether this console can record
// history: not on a standby, nor as a role that may not read and insert
// into history_samples, nor in read-only transactions. When it cannot,
// Status says so from now on, and the caller should tell the operator; a
// failed check (the database is unreachable) is reported as off with the
// error, and the first sample tries again.
func (r *Recorder) Check(ctx context.Context) HistoryStatus {
	off := func(reason string) HistoryStatus {
		r.setStatus(false, reason, nil)
		return r.Status()
	}
	if info, err := r.d.ServerInfo(ctx); err == nil && info.InRecovery {
		return off(historyOffStandby)
	}
	rows, _ := r.pool.Query(ctx, mustSQL("history_writable"))
	w, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[historyWritable])
	switch {
	case err != nil:
		return off("history is off: cannot check the database: " + err.Error())
	case !w.TableExists:
		return off(historyOffNoTable)
	case !w.MayWrite:
		return off(fmt.Sprintf("history is off: the role %s may not read and insert into history_samples; "+
			"run `console roles sql` as a superuser in this database (it grants them to console_web)", w.Role))
	case w.ReadOnly:
		return off(historyOffReadOnly)
	}
	return HistoryStatus{On: true, Reason: "every " + r.cfg.Interval.String()}
}

// historyWritable is a row of history_writable.sql.
type historyWritable struct {
	Role        string `db:"role"`
	TableExists bool   `db:"table_exists"`
	MayWrite    bool   `db:"may_write"`
	ReadOnly    bool   `db:"read_only"`
}

// Reasons history is off that Check and Record share.
const (
	historyOffStandby  = "history is off: this server is a standby (read-only); the primary's console records it"
	historyOffNoTable  = "history is off: the table history_samples does not exist; run `console migrate up`"
	historyOffReadOnly = "history is off: the database refuses writes (read-only transaction or standby)"
)

// ErrHistoryOff is returned by Record when the database cannot keep history
// (a standby, a read-only database or role, a schema without
// history_samples); Status says which.
var ErrHistoryOff = errors.New("history is off")

// Record writes smp with the blocking tree, activity and findings read now,
// unless another console recorded within the interval. It returns
// ErrHistoryOff (wrapped, with the reason) when the database cannot keep
// history, and nil when it recorded or skipped. ctx bounds the write, as
// does the larger of the interval and 5s.
func (r *Recorder) Record(ctx context.Context, smp diagnostics.Sample) error {
	// A write that cannot get a connection or finish within an interval
	// is dropped; the next sample tries again.
	ctx, cancel := context.WithTimeout(ctx, max(r.cfg.Interval, 5*time.Second))
	defer cancel()
	if info, err := r.d.ServerInfo(ctx); err == nil && info.InRecovery {
		reason := historyOffStandby
		r.setStatus(false, reason, nil)
		return fmt.Errorf("%w: %s", ErrHistoryOff, reason)
	}
	wrote, at, err := r.write(ctx, smp)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			// Stopped mid-write (the sampler stops): that says nothing
			// about whether the database keeps history.
			return err
		}
		if reason := historyOffReason(err); reason != "" {
			r.setStatus(false, reason, nil)
			return fmt.Errorf("%w: %s", ErrHistoryOff, reason)
		}
		r.setStatus(false, "history is off: the last write failed: "+err.Error(), nil)
		return err
	}
	if wrote {
		r.setStatus(true, "recorded by this console", &at)
	} else {
		r.setStatus(true, "recorded by another console attached to this database", nil)
	}
	return nil
}

// historyOffReason explains the errors that mean this database cannot keep
// history at all, or "" for a passing failure.
func historyOffReason(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "25006": // read_only_sql_transaction
		return historyOffReadOnly
	case "42501": // insufficient_privilege
		return "history is off: the console's database role may not write history_samples; run `console roles sql` as a superuser in this database (it grants INSERT and SELECT on it to console_web)"
	case "42P01": // undefined_table
		return historyOffNoTable
	}
	return ""
}

// write records one sample in one short transaction, or skips it when this
// console is not the one to record it.
func (r *Recorder) write(ctx context.Context, smp diagnostics.Sample) (bool, time.Time, error) {
	// READ COMMITTED whatever the server's default, so the recent-sample
	// check below reads with a snapshot taken after the lock was granted.
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return false, time.Time{}, err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = 100; SET LOCAL statement_timeout = 2000; SET LOCAL synchronous_commit = off; SET LOCAL jit = off"); err != nil {
		return false, time.Time{}, err
	}
	var locked, recent bool
	if err := tx.QueryRow(ctx, mustSQL("history_lock")).Scan(&locked); err != nil {
		return false, time.Time{}, fmt.Errorf("history lock: %w", err)
	}
	if !locked {
		return false, time.Time{}, nil
	}
	// Skip when a sample is younger than most of an interval, so the
	// consoles' jitter does not make two samples of one interval.
	if err := tx.QueryRow(ctx, mustSQL("history_recent"), (r.cfg.Interval * 8 / 10).Seconds()).Scan(&recent); err != nil {
		return false, time.Time{}, fmt.Errorf("history recent sample: %w", err)
	}
	if recent {
		return false, time.Time{}, nil
	}
	doc := r.collect(ctx, tx, smp)
	b, err := json.Marshal(doc)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("encode history sample: %w", err)
	}
	at := smp.At
	if at.IsZero() {
		at = time.Now().UTC()
	}
	if _, err := tx.Exec(ctx, mustSQL("history_insert"), at, r.cfg.Name, string(b)); err != nil {
		return false, time.Time{}, fmt.Errorf("record history sample: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, time.Time{}, fmt.Errorf("record history sample: %w", err)
	}
	return true, at, nil
}

// collect builds the document of smp, reading the blocking tree and the
// activity in the writing transaction (each in a savepoint, so a failed
// read leaves its field nil and the rest is still recorded).
func (r *Recorder) collect(ctx context.Context, tx pgx.Tx, smp diagnostics.Sample) HistoryDoc {
	doc := HistoryDoc{Replication: smp.Replication, Slots: smp.Slots, Queues: smp.Queues, Outbox: smp.Outbox, Workers: smp.Workers,
		RiverQueues: smp.RiverQueues}
	inSavepoint(ctx, tx, func(db diagnostics.DBTX) (err error) {
		doc.BlockingTree, err = diagnostics.BlockingTree(ctx, db)
		return
	})
	var activity []diagnostics.Backend
	ok := inSavepoint(ctx, tx, func(db diagnostics.DBTX) (err error) { activity, err = diagnostics.Activity(ctx, db); return })
	if ok {
		doc.WaitEvents = countWaitEvents(activity)
		doc.Activity = activity[:min(len(activity), historyActivityRows)]
		if doc.Activity == nil {
			doc.Activity = []diagnostics.Backend{}
		}
	}
	for i := range doc.Activity {
		doc.Activity[i].Query = truncate(doc.Activity[i].Query, historyQueryChars)
	}
	for i := range doc.BlockingTree {
		doc.BlockingTree[i].Query = truncate(doc.BlockingTree[i].Query, historyQueryChars)
	}
	if smp.WAL != nil {
		w := &diagnostics.HistoryWALPoint{LSN: smp.WAL.LSN, LSNBytes: smp.WAL.LSNBytes}
		r.mu.Lock()
		if r.lastWAL != nil {
			if rate := diagnostics.WALRate(*r.lastWAL, *smp.WAL); smp.WAL.LSNBytes >= r.lastWAL.LSNBytes && smp.WAL.SampledAt.After(r.lastWAL.SampledAt) {
				w.BytesPerSecond = &rate
			}
		}
		last := *smp.WAL
		r.lastWAL = &last
		r.mu.Unlock()
		doc.WAL = w
	}
	// The findings of this sample, from its own evidence: the same
	// statements the overview would have shown at that moment.
	round := diagnostics.Round{At: smp.At, Blocking: doc.BlockingTree, Activity: activity, Replication: smp.Replication,
		Slots: smp.Slots, Queues: smp.Queues, Outbox: smp.Outbox, Workers: smp.Workers}
	if doc.WAL != nil {
		round.WALRate = doc.WAL.BytesPerSecond
	}
	round.River = doc.riverEvidence()
	doc.Findings = findings.Evaluate(round, r.d.Thresholds())
	return doc
}

// inSavepoint runs fn in a savepoint of tx and reports whether it succeeded.
func inSavepoint(ctx context.Context, tx pgx.Tx, fn func(diagnostics.DBTX) error) bool {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false
	}
	if err := fn(sp); err != nil {
		sp.Rollback(ctx)
		return false
	}
	return sp.Commit(ctx) == nil
}

// countWaitEvents counts backends by wait event, most first; backends not
// waiting are counted under CPU (wait_event_type empty).
func countWaitEvents(rows []diagnostics.Backend) []WaitEventCount {
	counts := map[[2]string]int{}
	for _, b := range rows {
		counts[[2]string{b.WaitEventType, b.WaitEvent}]++
	}
	out := make([]WaitEventCount, 0, len(counts))
	for k, n := range counts {
		out = append(out, WaitEventCount{WaitEventType: k[0], WaitEvent: k[1], Backends: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Backends != out[j].Backends {
			return out[i].Backends > out[j].Backends
		}
		return out[i].WaitEventType+out[i].WaitEvent < out[j].WaitEventType+out[j].WaitEvent
	})
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// mustSQL returns the text of a version-independent query of this package.
func mustSQL(name string) string {
	s, err := sqlText(name, 0)
	if err != nil {
		panic(err)
	}
	return s
}

// HistoryEntry is the evidence of one check in one recorded sample.
type HistoryEntry struct {
	At         time.Time       `json:"at" db:"sampled_at"`
	RecordedBy string          `json:"recorded_by" db:"recorded_by"`
	Data       json.RawMessage `json:"data" db:"data"`
}

// ErrUnknownCheck is returned for a check name not in HistoryChecks.
var ErrUnknownCheck = errors.New("unknown history check")

// ErrNoHistory is returned by HistoryAt when no sample was recorded near
// the asked time.
var ErrNoHistory = errors.New("no history recorded at that time")

// HistoryAt returns check's evidence from the newest sample at or before
// at, if one was recorded within maxGap before it (zero means 30s, three
// default intervals). ErrNoHistory when there is none.
func HistoryAt(ctx context.Context, db diagnostics.DBTX, check string, at time.Time, maxGap time.Duration) (HistoryEntry, error) {
	if !diagnostics.IsHistoryCheck(check) {
		return HistoryEntry{}, fmt.Errorf("%w %q", ErrUnknownCheck, check)
	}
	if maxGap <= 0 {
		maxGap = 30 * time.Second
	}
	rows, err := db.Query(ctx, mustSQL("history_at"), at, maxGap.Seconds(), check)
	if err != nil {
		return HistoryEntry{}, fmt.Errorf("history at %s: %w", at.Format(time.RFC3339), err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	if errors.Is(err, pgx.ErrNoRows) {
		return HistoryEntry{}, fmt.Errorf("%w: %s (none in the %s before it)", ErrNoHistory, at.UTC().Format(time.RFC3339), maxGap)
	}
	if err != nil {
		return HistoryEntry{}, fmt.Errorf("history at %s: %w", at.Format(time.RFC3339), err)
	}
	return e, nil
}

// HistoryRangeMax is the most samples HistoryRange returns (a day at 10s).
const HistoryRangeMax = 8640

// HistoryRange returns check's evidence from every sample between from and
// to (inclusive), oldest first, at most limit (zero or more than
// HistoryRangeMax means HistoryRangeMax).
func HistoryRange(ctx context.Context, db diagnostics.DBTX, check string, from, to time.Time, limit int) ([]HistoryEntry, error) {
	if !diagnostics.IsHistoryCheck(check) {
		return nil, fmt.Errorf("%w %q", ErrUnknownCheck, check)
	}
	if limit <= 0 || limit > HistoryRangeMax {
		limit = HistoryRangeMax
	}
	rows, err := db.Query(ctx, mustSQL("history_range"), from, to, check, limit)
	if err != nil {
		return nil, fmt.Errorf("history from %s to %s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[HistoryEntry])
	if err != nil {
		return nil, fmt.Errorf("history from %s to %s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return out, nil
}

// HistoryStat is how much history is kept.
type HistoryStat struct {
	Samples    int64      `db:"samples" json:"samples"`
	DocBytes   int64      `db:"doc_bytes" json:"doc_bytes"`
	TableBytes int64      `db:"table_bytes" json:"table_bytes"`
	Oldest     *time.Time `db:"oldest" json:"oldest"`
	Newest     *time.Time `db:"newest" json:"newest"`
}

// HistoryStats reads how much history is kept (history_stats.sql).
func HistoryStats(ctx context.Context, db diagnostics.DBTX) (HistoryStat, error) {
	return collectOne[HistoryStat](ctx, db, "history_stats", 0)
}

// KindPruneHistory is the maintenance job kind that prunes history_samples
// (HistoryPrune); `console serve` makes the prune-history schedule that
// enqueues it every 15 minutes.
const KindPruneHistory = "prune_history"

// HistoryPruneParams bounds what history is kept. Zero values are defaults.
type HistoryPruneParams struct {
	// Retention is how long samples are kept; default 7 days.
	Retention time.Duration `json:"-"`
	// MaxBytes caps the stored documents; the oldest go first. Default
	// 512 MiB; negative means no cap.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// BatchSize is the rows per statement; default 1000. Each batch is its
	// own short statement.
	BatchSize int `json:"batch_size,omitempty"`
}

// HistoryPrune deletes samples older than the retention, then the oldest
// samples while the kept documents exceed the size cap, in batches of short
// statements (history_prune_age.sql, history_prune_size.sql). It returns
// how many samples it deleted; ctx ends it between batches.
func HistoryPrune(ctx context.Context, db diagnostics.DBTX, p HistoryPruneParams) (int64, error) {
	if p.Retention <= 0 {
		p.Retention = 7 * 24 * time.Hour
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = 512 << 20
	}
	if p.BatchSize <= 0 {
		p.BatchSize = 1000
	}
	total, err := sqlset.InBatches(ctx, db, mustSQL("history_prune_age"), p.Retention.Seconds(), p.BatchSize)
	if err != nil {
		return total, fmt.Errorf("prune history older than %s: %w", p.Retention, err)
	}
	if p.MaxBytes > 0 {
		n, err := sqlset.InBatches(ctx, db, mustSQL("history_prune_size"), p.MaxBytes, p.BatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune history above %d bytes: %w", p.MaxBytes, err)
		}
	}
	return total, nil
}

// HistoryMoment is one root blocker of a recorded sample's blocking tree:
// a sample with two separate chains gives two moments.
type HistoryMoment struct {
	At time.Time `db:"sampled_at" json:"at"`
	// Backends is every backend in the sample's tree, all chains together.
	Backends int `db:"backends" json:"backends"`
	// Blocked is how many backends waited behind this root.
	Blocked int `db:"blocked" json:"blocked"`
	// RootPID is the root blocker's pid (0 for a prepared transaction,
	// which RootGID names).
	RootPID int32  `db:"root_pid" json:"root_pid"`
	RootGID string `db:"root_gid" json:"root_gid,omitempty"`
}

// Root names the moment's root blocker: "pid 123" or "prepared
// transaction 'gid'".
func (m HistoryMoment) Root() string {
	if m.RootGID != "" {
		return fmt.Sprintf("prepared transaction %q", m.RootGID)
	}
	return fmt.Sprintf("pid %d", m.RootPID)
}

// HistoryMoments lists, for each sample between from and to, its root
// blockers, newest first, at most limit (history_moments.sql).
func HistoryMoments(ctx context.Context, db diagnostics.DBTX, from, to time.Time, limit int) ([]HistoryMoment, error) {
	return collect[HistoryMoment](ctx, db, "history_moments", 0, from, to, limit)
}

// historyChainGap is the longest gap between two samples of one chain.
const historyChainGap = 35 * time.Second

// HistoryChain is one lock chain's life as recorded: samples at most 35s
// apart with the same root blocker.
type HistoryChain struct {
	First, Last time.Time
	Samples     int
	// Worst is the sample with the most blocked backends (the latest of
	// equals): the one to show.
	Worst HistoryMoment
}

// HistoryChains groups moments (newest first, as HistoryMoments returns
// them) into chains by root, newest first. Chains that overlap in time
// stay apart.
func HistoryChains(moments []HistoryMoment) []HistoryChain {
	type root struct {
		pid int32
		gid string
	}
	var out []HistoryChain
	open := map[root]int{} // the root's latest chain, an index into out
	for _, mo := range moments {
		k := root{mo.RootPID, mo.RootGID}
		if i, ok := open[k]; ok && out[i].First.Sub(mo.At) <= historyChainGap {
			ch := &out[i]
			if !mo.At.Equal(ch.First) {
				ch.Samples++
			}
			ch.First = mo.At
			if mo.Blocked > ch.Worst.Blocked {
				ch.Worst = mo
			}
			continue
		}
		open[k] = len(out)
		out = append(out, HistoryChain{First: mo.At, Last: mo.At, Samples: 1, Worst: mo})
	}
	return out
}

// HistoryLeadTime is how long before an incident's start its timeline
// reaches back into the recorded history: what led up to it.
const HistoryLeadTime = 5 * time.Minute

// historyTimelineMax bounds the recorded items of one timeline.
const historyTimelineMax = 100

// HistoryTimelineItem is one piece of recorded evidence for an incident's
// timeline: a lock chain at its worst, or findings that appeared or
// cleared.
type HistoryTimelineItem struct {
	At    time.Time
	Title string
	// Check is the history check Data comes from (blocking_tree or
	// findings).
	Check string
	Data  json.RawMessage
}

// HistoryTimeline summarises the history between from and to for an
// incident: each lock chain once (its worst sample's tree, with how long it
// lasted) and each finding when it appeared and when it cleared, oldest
// first, at most 100 items.
func HistoryTimeline(ctx context.Context, db diagnostics.DBTX, from, to time.Time) ([]HistoryTimelineItem, error) {
	var items []HistoryTimelineItem
	moments, err := HistoryMoments(ctx, db, from, to, HistoryRangeMax)
	if err != nil {
		return nil, err
	}
	for _, ch := range HistoryChains(moments) {
		e, err := HistoryAt(ctx, db, diagnostics.HistoryBlockingTree, ch.Worst.At, time.Nanosecond)
		if err != nil {
			return nil, err
		}
		items = append(items, HistoryTimelineItem{At: ch.Worst.At, Check: diagnostics.HistoryBlockingTree, Data: e.Data,
			Title: fmt.Sprintf("recorded lock chain: %s blocked %d backends (%d samples, %s to %s)",
				ch.Worst.Root(), ch.Worst.Blocked, ch.Samples, ch.First.UTC().Format("15:04:05Z"), ch.Last.UTC().Format("15:04:05Z"))})
	}
	entries, err := HistoryRange(ctx, db, diagnostics.HistoryFindings, from, to, 0)
	if err != nil {
		return nil, err
	}
	seen := map[string]findings.Finding{}
	for _, e := range entries {
		var fs []findings.Finding
		if json.Unmarshal(e.Data, &fs) != nil {
			continue
		}
		now := map[string]findings.Finding{}
		var appeared []findings.Finding
		for _, f := range fs {
			k := findingKey(f)
			now[k] = f
			if _, ok := seen[k]; !ok {
				appeared = append(appeared, f)
			}
		}
		var cleared []findings.Finding
		for k, f := range seen {
			if _, ok := now[k]; !ok {
				cleared = append(cleared, f)
			}
		}
		sort.Slice(cleared, func(i, j int) bool { return findingKey(cleared[i]) < findingKey(cleared[j]) })
		for _, f := range appeared {
			b, _ := json.Marshal(f)
			items = append(items, HistoryTimelineItem{At: e.At, Check: diagnostics.HistoryFindings, Data: b,
				Title: fmt.Sprintf("recorded finding appeared: %s %s", f.Severity, f.Title)})
		}
		for _, f := range cleared {
			b, _ := json.Marshal(f)
			items = append(items, HistoryTimelineItem{At: e.At, Check: diagnostics.HistoryFindings, Data: b,
				Title: "recorded finding cleared: " + f.Title})
		}
		seen = now
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].At.Before(items[j].At) })
	if len(items) > historyTimelineMax {
		items = items[:historyTimelineMax]
	}
	return items, nil
}

// findingKey identifies a finding across samples: its code and the subject
// fields that name what it is about (not the measured values).
func findingKey(f findings.Finding) string {
	k := f.Code
	for _, name := range []string{"pid", "queue", "slot_name", "application_name", "table", "index", "gid"} {
		if v, ok := f.Subject[name]; ok {
			k += fmt.Sprintf(" %s=%v", name, v)
		}
	}
	return k
}

// ErrNotRecorded is returned by PanelAt for a check the flight recorder
// does not keep (Check.History is empty).
var ErrNotRecorded = errors.New("not recorded by the flight recorder")

// HistoryKept says, in a few words, what the flight recorder keeps: for
// the note a panel shows in place of a check it does not keep.
const HistoryKept = "the blocking tree, activity and wait events, the WAL position and rate, replication, replication slots, queues (River's too), the outbox, the workers and findings, one sample per history interval (10 seconds by default)"

// PanelAt returns the panel of the check called name as the newest sample
// at or before at recorded it (within 30s), with the sample it came from.
// ErrNotRecorded for a check history does not keep, ErrNoHistory when no
// sample is near enough, ErrUnknownCheck for a name not in the catalog.
func PanelAt(ctx context.Context, db diagnostics.DBTX, name string, at time.Time) (diagnostics.PanelResult, HistoryEntry, error) {
	c, ok := diagnostics.CheckNamed(name)
	if !ok {
		return diagnostics.PanelResult{}, HistoryEntry{}, fmt.Errorf("%w %q", ErrUnknownCheck, name)
	}
	if c.History == "" {
		return diagnostics.PanelResult{}, HistoryEntry{}, fmt.Errorf("%s: %w", c.Title, ErrNotRecorded)
	}
	e, err := HistoryAt(ctx, db, c.History, at, 0)
	if err != nil {
		return diagnostics.PanelResult{}, HistoryEntry{}, err
	}
	res := diagnostics.PanelResult{Name: c.Name}
	if string(e.Data) == "null" {
		res.Err = fmt.Errorf("the check failed when this sample was recorded")
		return res, e, nil
	}
	if res.Rows, err = c.RecordedRows(e.Data, e.At); err != nil {
		return diagnostics.PanelResult{}, e, fmt.Errorf("read the recorded %s of %s: %w", c.History, e.At.UTC().Format(time.RFC3339), err)
	}
	return res, e, nil
}

// HistoryDocAt returns the whole document of the newest sample at or
// before at, within 30s (history_doc_at.sql): what the overview showed
// then. ErrNoHistory when there is none.
func HistoryDocAt(ctx context.Context, db diagnostics.DBTX, at time.Time) (HistoryDoc, HistoryEntry, error) {
	rows, err := db.Query(ctx, mustSQL("history_doc_at"), at, (30 * time.Second).Seconds())
	if err != nil {
		return HistoryDoc{}, HistoryEntry{}, fmt.Errorf("history at %s: %w", at.Format(time.RFC3339), err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	if errors.Is(err, pgx.ErrNoRows) {
		return HistoryDoc{}, HistoryEntry{}, fmt.Errorf("%w: %s (none in the 30s before it)", ErrNoHistory, at.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return HistoryDoc{}, HistoryEntry{}, fmt.Errorf("history at %s: %w", at.Format(time.RFC3339), err)
	}
	var doc HistoryDoc
	if err := json.Unmarshal(e.Data, &doc); err != nil {
		return HistoryDoc{}, e, fmt.Errorf("read the sample of %s: %w", e.At.UTC().Format(time.RFC3339), err)
	}
	return doc, e, nil
}

// Round is the findings round a recorded sample stands for, at at: the
// checks the sample failed to record are Unavailable, the ones it never
// records are left empty.
func (doc HistoryDoc) Round(at time.Time) diagnostics.Round {
	r := diagnostics.Round{At: at, Blocking: doc.BlockingTree, Activity: doc.Activity, Replication: doc.Replication,
		Slots: doc.Slots, Queues: doc.Queues, Outbox: doc.Outbox}
	if doc.WAL != nil {
		r.WALRate = doc.WAL.BytesPerSecond
	}
	r.River = doc.riverEvidence()
	for _, m := range []struct {
		check   string
		missing bool
	}{{diagnostics.CheckBlockingTree, doc.BlockingTree == nil}, {diagnostics.CheckActivity, doc.Activity == nil}, {diagnostics.CheckQueueHealth, doc.Queues == nil}} {
		if m.missing {
			r.Unavailable = append(r.Unavailable, diagnostics.Unavailable{Check: m.check, Status: "error", Err: errors.New("not recorded in this sample")})
		}
	}
	return r
}

// riverEvidence is what a sample kept of River for a findings round: its
// queues alone (so backlog and paused queues are found again; the stuck
// jobs, discards and leader are not recorded). Nil when the sample holds
// no River queues.
func (doc HistoryDoc) riverEvidence() *diagnostics.RiverEvidence {
	if doc.RiverQueues == nil {
		return nil
	}
	return &diagnostics.RiverEvidence{Queues: doc.RiverQueues}
}

// HistorySeriesPoints is the most samples HistorySeries returns: enough
// for a chart, few enough to read seven days quickly.
const HistorySeriesPoints = 240

// HistorySeries returns check's evidence over from..to for a chart: the
// newest sample of each of points equal slices of the range (zero or more
// than HistorySeriesPoints means HistorySeriesPoints), and the sample a
// page shows at mark (the newest at or before it; zero for none), oldest
// first (history_series.sql).
func HistorySeries(ctx context.Context, db diagnostics.DBTX, check string, from, to, mark time.Time, points int) ([]HistoryEntry, error) {
	if !diagnostics.IsHistoryCheck(check) {
		return nil, fmt.Errorf("%w %q", ErrUnknownCheck, check)
	}
	if points <= 0 || points > HistorySeriesPoints {
		points = HistorySeriesPoints
	}
	bucket := to.Sub(from) / time.Duration(points)
	if bucket < time.Second {
		bucket = time.Second
	}
	var markArg *time.Time
	if !mark.IsZero() {
		markArg = &mark
	}
	out, err := collect[HistoryEntry](ctx, db, "history_series", 0, from, to, check, bucket.Seconds(), markArg)
	if err != nil {
		return nil, fmt.Errorf("read the %s recorded from %s to %s: %w", check, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return out, nil
}
