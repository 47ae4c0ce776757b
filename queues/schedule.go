package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/pgconsole/console/internal/lifecycle"
	"github.com/pgconsole/console/internal/sqlset"
)

// ErrInvalidSpec reports a cron spec the parser refuses; the wrapped message
// says why.
var ErrInvalidSpec = errors.New("invalid cron spec")

// cronParser accepts the standard 5 fields (minute hour dom month dow), an
// optional leading seconds field, and descriptors (@daily, @hourly,
// @every 10s...).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron spec, or returns an error wrapping ErrInvalidSpec.
// Times are interpreted in UTC unless the spec starts with CRON_TZ=.
func ParseSpec(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSpec)
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidSpec, spec, err)
	}
	return s, nil
}

// NextRuns returns the next n run times of spec strictly after from, in UTC,
// for previews in the console ("next 5 runs"). n is capped at 1000. A spec
// that never fires again returns fewer times.
func NextRuns(spec string, from time.Time, n int) ([]time.Time, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	n = min(max(n, 0), 1000)
	out := make([]time.Time, 0, n)
	t := from.UTC()
	for len(out) < n {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// Schedule is one row of schedules.
type Schedule struct {
	Name      string          `db:"name" json:"name"`
	Spec      string          `db:"spec" json:"spec"`
	Kind      string          `db:"kind" json:"kind"`
	Queue     string          `db:"queue" json:"queue"`
	Payload   json.RawMessage `db:"payload" json:"payload"`
	Enabled   bool            `db:"enabled" json:"enabled"`
	NextRunAt *time.Time      `db:"next_run_at" json:"next_run_at,omitempty"`
	LastRunAt *time.Time      `db:"last_run_at" json:"last_run_at,omitempty"`
	LastJobID *int64          `db:"last_job_id" json:"last_job_id,omitempty"`
	CreatedBy *string         `db:"created_by" json:"created_by,omitempty"`
	CreatedAt time.Time       `db:"created_at" json:"created_at"`
	UpdatedBy *string         `db:"updated_by" json:"updated_by,omitempty"`
	UpdatedAt time.Time       `db:"updated_at" json:"updated_at"`
}

// ScheduleParams describes a schedule for ScheduleCreate and ScheduleUpdate.
type ScheduleParams struct {
	// Name matches ^[a-z0-9][a-z0-9_.-]{0,62}$.
	Name string
	// Spec is a cron spec (see ParseSpec).
	Spec string
	// Kind and Queue say what each run enqueues; Queue defaults to
	// "maintenance".
	Kind  string
	Queue string
	// Payload is the job payload of every run (nil = {}).
	Payload any
	// Disabled creates or leaves the schedule switched off.
	Disabled bool
	// By names the operator, for the audit columns.
	By string
}

func (p ScheduleParams) prepare(ctx context.Context, db DBTX) (payload []byte, next *time.Time, err error) {
	if p.Kind == "" {
		return nil, nil, errors.New("schedule: kind is required")
	}
	if p.Payload == nil {
		payload = []byte("{}")
	} else if payload, err = marshalPayload(p.Payload); err != nil {
		return nil, nil, fmt.Errorf("schedule %q payload: %w", p.Name, err)
	}
	var now time.Time
	if err := db.QueryRow(ctx, sqlText("schedule_now")).Scan(&now); err != nil {
		return nil, nil, fmt.Errorf("read database clock: %w", err)
	}
	runs, err := NextRuns(p.Spec, now, 1)
	if err != nil {
		return nil, nil, err
	}
	if len(runs) == 1 {
		next = &runs[0]
	}
	return payload, next, nil
}

func (p ScheduleParams) queue() string {
	if p.Queue == "" {
		return "maintenance"
	}
	return p.Queue
}

// ScheduleCreate validates the spec and adds a schedule whose first run is
// the spec's next time after now (database clock).
func ScheduleCreate(ctx context.Context, db DBTX, p ScheduleParams) (*Schedule, error) {
	return p.write(ctx, db, "schedule_insert", "create")
}

// ScheduleUpdate replaces a schedule's spec, target and enabled flag and
// recomputes its next run from now; ErrNotFound when there is no such name.
func ScheduleUpdate(ctx context.Context, db DBTX, p ScheduleParams) (*Schedule, error) {
	return p.write(ctx, db, "schedule_update", "update")
}

// write runs stmt, the insert or the update of p's schedule, once p's spec
// and payload check out; verb says which in errors.
func (p ScheduleParams) write(ctx context.Context, db DBTX, stmt, verb string) (*Schedule, error) {
	payload, next, err := p.prepare(ctx, db)
	if err != nil {
		return nil, err
	}
	return collectOne[Schedule](ctx, db, stmt, fmt.Sprintf("%s schedule %q", verb, p.Name), fmt.Sprintf("schedule %q", p.Name),
		p.Name, strings.TrimSpace(p.Spec), p.Kind, p.queue(), payload, !p.Disabled, next, nullString(p.By))
}

// ScheduleGet returns one schedule, or ErrNotFound.
func ScheduleGet(ctx context.Context, db DBTX, name string) (*Schedule, error) {
	return collectOne[Schedule](ctx, db, "schedule_get", fmt.Sprintf("get schedule %q", name), fmt.Sprintf("schedule %q", name), name)
}

// ScheduleList returns every schedule, by name.
func ScheduleList(ctx context.Context, db DBTX) ([]Schedule, error) {
	return collectRows[Schedule](ctx, db, "schedule_list", "list schedules")
}

// ScheduleDedupeKey is the dedupe key of the job a schedule enqueues for the
// run due at tick: the same tick can never be enqueued twice while its job
// is unfinished.
func ScheduleDedupeKey(name string, tick time.Time) string {
	return "schedule:" + name + ":" + tick.UTC().Format(time.RFC3339Nano)
}

// SchedulerConfig configures a Scheduler. Zero values take the defaults.
type SchedulerConfig struct {
	// ID names this process in logs; default host-pid.
	ID string
	// Interval is how often the leader looks for due runs, and how often a
	// follower tries to become leader (default 1s). It bounds how late a run
	// is enqueued after leader loss.
	Interval time.Duration
	// LockKey is the advisory lock key that elects the leader (default
	// 0x7363686564756c65, "schedule"); schedulers sharing a database must
	// share the key.
	LockKey int64
	// MaxCatchUp bounds how many missed runs of one schedule a tick
	// enqueues (default 100); beyond that the schedule skips to its next
	// future run and the skip is logged.
	MaxCatchUp int
	// TransactionPooler says the pool reaches PostgreSQL through a pooler
	// in transaction mode (PgBouncer pool_mode=transaction), where a
	// session advisory lock would stay on whichever server session took
	// it. Without SessionConnConfig there is then no lasting leader: each
	// tick runs on the pool in one transaction that first tries a
	// transaction-level advisory lock on LockKey and skips the tick when
	// another scheduler holds it. IsLeader and the leader gauge then say
	// whether this scheduler ran the last tick.
	TransactionPooler bool
	// SessionConnConfig, when set, is the leader connection instead of
	// the pool's: a direct connection to PostgreSQL, which keeps a lasting
	// leader behind a transaction pooler. nil: the pool's settings.
	SessionConnConfig *pgx.ConnConfig
	// JobRetention, when positive, makes the leader delete done jobs that
	// finished longer ago than it (prune_jobs, in WAL-aware batches, each
	// run recorded in maintenance_runs), every RetentionEvery (default
	// 1h) and once soon after it becomes leader. Dead jobs are kept: they
	// are the dead letters. Zero keeps every done job.
	JobRetention   time.Duration
	RetentionEvery time.Duration
	// Maintenance bounds the retention's runs (batch size, WAL and lag
	// thresholds); its Retention is JobRetention.
	Maintenance MaintenanceConfig
	// Registerer receives the scheduler metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

// Scheduler enqueues the due runs of every enabled schedule. Run one in every
// process: exactly one is leader at a time, elected by a session advisory
// lock on its own connection, and a follower takes over within one Interval
// of the leader's connection ending. Each run is enqueued in the same
// transaction that moves next_run_at past it, with a per-run dedupe key, so a
// run is enqueued once even across a change of leader. Missed runs (all
// schedulers down) are caught up, bounded by MaxCatchUp. Behind a pooler in
// transaction mode the leader is elected per tick instead (see
// SchedulerConfig.TransactionPooler); each run is still enqueued once.
type Scheduler struct {
	pool     *pgxpool.Pool
	cfg      SchedulerConfig
	log      *slog.Logger
	leader   atomic.Bool
	enqueued prometheus.Counter
	skipped  prometheus.Counter
	isLeader prometheus.Gauge

	life lifecycle.Runner
	conn *pgx.Conn     // the leader connection, owned by the loop
	pid  atomic.Uint32 // backend pid of the leader connection, for tests
	// readOnly stands the scheduler down while the database is a
	// standby; owned by the loop.
	readOnly readOnlyWatch
	// retention is the done-job retention's state, owned by the loop.
	retention retentionRunner
}

// NewScheduler builds a scheduler on pool (whose connection settings its
// leader connection copies); Start runs it.
func NewScheduler(pool *pgxpool.Pool, cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = fmt.Sprintf("scheduler-%s-%d", host, os.Getpid())
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.LockKey == 0 {
		cfg.LockKey = 0x7363686564756c65
	}
	if cfg.MaxCatchUp <= 0 {
		cfg.MaxCatchUp = 100
	}
	if cfg.RetentionEvery <= 0 {
		cfg.RetentionEvery = time.Hour
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Scheduler{pool: pool, cfg: cfg, log: log.With("scheduler", cfg.ID)}
	s.readOnly = readOnlyWatch{what: "scheduler", log: s.log}
	var err error
	if s.enqueued, err = registerCollector(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "queues_scheduler_enqueued_total", Help: "Scheduled runs enqueued."})); err != nil {
		return nil, err
	}
	if s.skipped, err = registerCollector(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "queues_scheduler_skipped_total", Help: "Missed scheduled runs skipped beyond MaxCatchUp."})); err != nil {
		return nil, err
	}
	if s.isLeader, err = registerCollector(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "queues_scheduler_leader", Help: "1 while this process is the scheduler leader."})); err != nil {
		return nil, err
	}
	return s, nil
}

// IsLeader reports whether this scheduler holds the leader lock right now.
func (s *Scheduler) IsLeader() bool { return s.leader.Load() }

// Start launches the scheduler's single goroutine and returns at once. It
// refuses a pool whose transactions do not default to READ COMMITTED
// (RequireReadCommitted).
func (s *Scheduler) Start(ctx context.Context) error {
	if err := RequireReadCommitted(ctx, s.pool); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	if err := s.life.Start(ctx, s.loop); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	return nil
}

// Stop ends the scheduler and closes its leader connection, which releases
// leadership at once.
func (s *Scheduler) Stop() { s.life.Stop() }

func (s *Scheduler) dropConn() {
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		s.conn.Close(ctx)
		cancel()
		s.conn = nil
	}
	if s.leader.Swap(false) {
		s.isLeader.Set(0)
		s.log.Info("scheduler leadership released")
	}
}

func (s *Scheduler) loop(ctx context.Context) {
	defer s.dropConn()
	defer s.retention.wait()
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		err := s.step(ctx)
		if err == nil && s.leader.Load() && !s.readOnly.on {
			s.retention.maybeRun(ctx, s)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("scheduler step failed", "error", err)
			// Leadership lives with the connection: give it up only when the
			// connection is gone (or cannot be trusted to be idle).
			if s.conn != nil && (s.conn.IsClosed() || s.conn.PgConn().TxStatus() != 'I') {
				s.dropConn()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// perTick reports whether the leader is elected per tick on the pool (a
// transaction pooler and no direct session) instead of by a session lock.
func (s *Scheduler) perTick() bool {
	return s.cfg.TransactionPooler && s.cfg.SessionConnConfig == nil
}

func (s *Scheduler) step(ctx context.Context) error {
	if s.perTick() {
		return s.stepPerTick(ctx)
	}
	if s.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, sessionConfig(s.pool, s.cfg.SessionConnConfig))
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		s.conn = conn
		s.pid.Store(conn.PgConn().PID())
	}
	if down, err := s.readOnly.standingDown(ctx, s.conn); down || err != nil {
		return err
	}
	if !s.leader.Load() {
		var got bool
		if err := s.conn.QueryRow(ctx, sqlText("schedule_try_lock"), s.cfg.LockKey).Scan(&got); err != nil {
			return fmt.Errorf("try leader lock: %w", err)
		}
		if !got {
			return nil
		}
		s.leader.Store(true)
		s.isLeader.Set(1)
		s.log.Info("scheduler became leader")
	}
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin tick: %w", err)
	}
	return s.tickQuietly(ctx, tx)
}

// tickQuietly runs a tick; a write the database refuses because it is a
// standby stands the scheduler down (one log line) instead of failing.
func (s *Scheduler) tickQuietly(ctx context.Context, tx pgx.Tx) error {
	if err := s.tick(ctx, tx); err != nil && !s.readOnly.refused(err) {
		return err
	}
	return nil
}

// stepPerTick runs one tick on the pool when no other scheduler's tick
// holds the tick lock; the lock ends with the tick's transaction.
func (s *Scheduler) stepPerTick(ctx context.Context) error {
	if down, err := s.readOnly.standingDown(ctx, s.pool); down || err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin tick: %w", err)
	}
	var got bool
	if err := tx.QueryRow(ctx, sqlText("schedule_try_tick_lock"), s.cfg.LockKey).Scan(&got); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return fmt.Errorf("try tick lock: %w", err)
	}
	s.leader.Store(got)
	if !got {
		s.isLeader.Set(0)
		return tx.Rollback(ctx)
	}
	s.isLeader.Set(1)
	return s.tickQuietly(ctx, tx)
}

type dueSchedule struct {
	Name      string          `db:"name"`
	Spec      string          `db:"spec"`
	Kind      string          `db:"kind"`
	Queue     string          `db:"queue"`
	Payload   json.RawMessage `db:"payload"`
	NextRunAt time.Time       `db:"next_run_at"`
	Now       time.Time       `db:"now"`
}

// tick enqueues every due run in tx, the tick's transaction, and commits it.
func (s *Scheduler) tick(ctx context.Context, tx pgx.Tx) error {
	defer tx.Rollback(context.WithoutCancel(ctx))
	due, err := sqlset.All[dueSchedule](ctx, tx, sqlText("schedule_due"), 100)
	if err != nil {
		return fmt.Errorf("read due schedules: %w", err)
	}
	if len(due) == 0 {
		return tx.Commit(ctx)
	}
	n := 0
	for _, d := range due {
		// One savepoint per schedule: a schedule that cannot be enqueued
		// (a bad payload, a missing queue constraint) is logged and retried
		// next tick without holding up the others.
		sp, err := tx.Begin(ctx)
		if err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		k, err := s.enqueueDue(ctx, sp, d)
		if err == nil {
			err = sp.Commit(ctx)
		}
		if err != nil {
			if tx.Conn().IsClosed() || ctx.Err() != nil {
				return err
			}
			s.log.Error("schedule run not enqueued; retrying next tick", "schedule", d.Name, "error", err)
			if rerr := sp.Rollback(ctx); rerr != nil {
				return fmt.Errorf("roll back schedule %q: %w", d.Name, rerr)
			}
			continue
		}
		n += k
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit tick: %w", err)
	}
	s.enqueued.Add(float64(n))
	return nil
}

func (s *Scheduler) enqueueDue(ctx context.Context, tx pgx.Tx, d dueSchedule) (int, error) {
	sched, err := ParseSpec(d.Spec)
	if err != nil {
		// A bad spec written behind the API's back: leave it due and say so.
		s.log.Error("schedule has an invalid spec", "schedule", d.Name, "error", err)
		return 0, nil
	}
	tick := d.NextRunAt
	var lastRun *time.Time
	var lastJob *int64
	n := 0
	for !tick.After(d.Now) && n < s.cfg.MaxCatchUp {
		// A savepoint keeps a duplicate from aborting the tick transaction.
		sp, err := tx.Begin(ctx)
		if err != nil {
			return n, fmt.Errorf("savepoint: %w", err)
		}
		job, err := EnqueueTx(ctx, sp, EnqueueParams{Queue: d.Queue, Kind: d.Kind, Payload: d.Payload,
			DedupeKey: ScheduleDedupeKey(d.Name, tick)})
		switch {
		case err == nil:
			n++
		case errors.Is(err, ErrDuplicate):
			s.log.Info("scheduled run already enqueued", "schedule", d.Name, "tick", tick)
		default:
			return n, fmt.Errorf("enqueue run %s of schedule %q: %w", tick.Format(time.RFC3339), d.Name, err)
		}
		if err := sp.Commit(ctx); err != nil {
			return n, fmt.Errorf("release savepoint: %w", err)
		}
		if job != nil {
			id := job.ID
			lastJob = &id
		}
		t := tick
		lastRun = &t
		tick = sched.Next(tick)
		if tick.IsZero() {
			break
		}
	}
	if !tick.IsZero() && !tick.After(d.Now) {
		skipTo := sched.Next(d.Now)
		s.log.Warn("schedule missed more runs than MaxCatchUp; skipping ahead",
			"schedule", d.Name, "from", tick, "to", skipTo)
		s.skipped.Inc()
		tick = skipTo
	}
	var next *time.Time
	if !tick.IsZero() {
		next = &tick
	}
	tag, err := tx.Exec(ctx, sqlText("schedule_advance"), d.Name, d.NextRunAt, next, lastRun, lastJob)
	if err != nil {
		return n, fmt.Errorf("advance schedule %q: %w", d.Name, err)
	}
	if tag.RowsAffected() != 1 {
		return n, fmt.Errorf("advance schedule %q: next_run_at moved under the tick: %w", d.Name, pgx.ErrNoRows)
	}
	return n, nil
}

// ScheduleLockTx locks schedule name's row until tx ends (nothing when it
// does not exist), so two operators changing the same schedule apply their
// changes one after the other: lock, then read with ScheduleGet, then
// write.
func ScheduleLockTx(ctx context.Context, tx DBTX, name string) error {
	if _, err := tx.Exec(ctx, sqlText("schedule_lock"), name); err != nil {
		return fmt.Errorf("lock schedule %q: %w", name, err)
	}
	return nil
}

// ScheduleMarkRunTx records job jobID, enqueued by hand in tx, as schedule
// name's last run, so the schedules list shows it like a scheduled run;
// the cron runs go on as before (next_run_at is left alone).
func ScheduleMarkRunTx(ctx context.Context, tx DBTX, name string, jobID int64) error {
	if _, err := tx.Exec(ctx, sqlText("schedule_mark_run"), name, jobID); err != nil {
		return fmt.Errorf("record the run of schedule %q: %w", name, err)
	}
	return nil
}
