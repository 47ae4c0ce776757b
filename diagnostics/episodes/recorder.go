package episodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/internal/lifecycle"
	"github.com/pgconsole/console/internal/sqlset"
	"github.com/pgconsole/console/queues"
)

// Config configures a Recorder. Zero values are defaults.
type Config struct {
	// URL reaches PostgreSQL itself (not a pooler in transaction mode):
	// the recorder keeps one session of its own, which holds the lock
	// that makes it the database's one recorder. Required.
	URL string
	// Interval is how often it looks at the ungranted locks; default 1s.
	Interval time.Duration
	// Name identifies this console in recorded_by; default "console".
	Name string
	// Logger receives a line when recording turns off or on; nil
	// discards.
	Logger *slog.Logger
	// Registerer takes the episode counters; nil registers none.
	Registerer prometheus.Registerer
	// JobLookupFunc returns the kind and queue of a job whose session
	// waited; default queues.JobGet on the recorder's session. A job not
	// found (archived) is recorded without them.
	JobLookupFunc func(ctx context.Context, id int64) (kind, queue string, err error)
}

// Status says whether lock episodes are recorded, and why not.
type Status struct {
	// On is true while episodes are recorded, by this console or another.
	On bool `json:"on"`
	// Reason says who records, or why nothing is.
	Reason string `json:"reason"`
	// Leader is true when this console is the one recording.
	Leader bool `json:"leader"`
	// LastLook is when this console last looked at the locks.
	LastLook *time.Time `json:"last_look,omitempty"`
}

// Reasons a Recorder reports in its Status.
const (
	reasonLeader   = "recorded by this console, every "
	reasonFollower = "recorded by another console attached to this database"
	reasonStandby  = "off: this server is a standby (read-only); the primary's console records lock episodes"
)

// Recorder looks at the ungranted locks every Interval and records each
// lock wait it sees as an episode (lock_episodes, with its sessions in
// lock_episode_participants). Several consoles on one database record
// once: the one whose session holds a session advisory lock records, the
// others try for it every few intervals and take over when its session
// ends. A recorder that takes over closes the episodes left open with
// end_seen false. While nothing waits, a look is one statement on
// pg_stat_activity (on pg_locks for a role without pg_read_all_stats). On a standby it records nothing and Status says so.
//
// Start it once; Stop closes the episodes it has open (their end not
// seen) and its session.
type Recorder struct {
	cfg     Config
	run     lifecycle.Runner
	metrics *metrics

	// probe is the statement of a look while nothing waits: EpisodeProbe,
	// or EpisodeProbeLocks for a role that cannot see other roles' wait
	// events. Set by lead, read by the loop's goroutine only.
	probe string

	mu     sync.Mutex
	status Status
	cost   Cost
	// looked is signalled after each look, for tests and Status.
	looked chan struct{}
}

// New returns a Recorder; nothing runs until Start.
func New(cfg Config) (*Recorder, error) {
	if cfg.URL == "" {
		return nil, errors.New("lock episodes: no database URL to record on")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Name == "" {
		cfg.Name = "console"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{cfg: cfg, looked: make(chan struct{}, 1)}
	if cfg.Registerer != nil {
		m, err := newMetrics(cfg.Registerer)
		if err != nil {
			return nil, err
		}
		r.metrics = m
	}
	return r, nil
}

// Start begins looking; ctx bounds the recorder's life, as Stop does.
func (r *Recorder) Start(ctx context.Context) error {
	return r.run.Start(ctx, r.loop)
}

// Stop ends the recorder and waits for it.
func (r *Recorder) Stop() { r.run.Stop() }

// Status reports whether lock episodes are recorded.
func (r *Recorder) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

func (r *Recorder) setStatus(on, leader bool, reason string, look *time.Time) {
	r.mu.Lock()
	was := r.status
	r.status.On, r.status.Leader, r.status.Reason = on, leader, reason
	if look != nil {
		r.status.LastLook = look
	}
	r.mu.Unlock()
	if was.Reason != reason && (was.Leader != leader || was.On != on) {
		r.cfg.Logger.Info("lock episodes", "recording", reason)
	}
}

// followerRetry is how many intervals a console that does not record
// waits between two tries for the recorder's lock.
const followerRetry = 5

// loop runs until ctx ends: it connects, tries to become the recorder, and
// looks every interval while it is.
func (r *Recorder) loop(ctx context.Context) {
	var conn *pgx.Conn
	var tr *tracker
	leader := false
	defer func() {
		if conn != nil {
			if leader && tr != nil {
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				r.abandon(sctx, conn, tr)
				cancel()
			}
			conn.Close(context.Background())
		}
	}()
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = r.cfg.Interval
		if conn == nil {
			c, err := r.connect(ctx)
			if err != nil {
				r.setStatus(false, false, "off: cannot reach the database: "+err.Error(), nil)
				wait = followerRetry * r.cfg.Interval
				continue
			}
			conn, leader, tr = c, false, nil
		}
		if !leader {
			ok, err := r.lead(ctx, conn)
			if err != nil {
				r.drop(ctx, &conn, err)
				wait = followerRetry * r.cfg.Interval
				continue
			}
			if !ok {
				wait = followerRetry * r.cfg.Interval
				continue
			}
			leader, tr = true, &tracker{}
		}
		if err := r.look(ctx, conn, tr); err != nil {
			if ctx.Err() != nil {
				return
			}
			if reason := offReason(err); reason != "" {
				r.setStatus(false, false, reason, nil)
			} else {
				r.cfg.Logger.Warn("lock episodes: look failed; reconnecting", "err", err)
			}
			// The session and the lock go; the episodes open now are
			// closed, end not seen, by whoever records next.
			r.drop(ctx, &conn, err)
			leader, tr = false, nil
			wait = followerRetry * r.cfg.Interval
		}
	}
}

// drop closes the recorder's session after err.
func (r *Recorder) drop(ctx context.Context, conn **pgx.Conn, err error) {
	if *conn != nil {
		(*conn).Close(context.Background())
		*conn = nil
	}
	if r.Status().Reason == "" || r.Status().On {
		r.setStatus(false, false, "off: the recorder's session failed: "+err.Error(), nil)
	}
}

// connect opens the recorder's session: named console-episodes, with
// short lock and statement timeouts and asynchronous commits (a lost
// episode after a crash is acceptable, a write that waits on the
// application is not).
func (r *Recorder) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(r.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("lock episodes: parse the database URL: %w", err)
	}
	cfg.RuntimeParams["application_name"] = ApplicationName
	cfg.RuntimeParams["lock_timeout"] = "100"
	cfg.RuntimeParams["statement_timeout"] = "2000"
	cfg.RuntimeParams["synchronous_commit"] = "off"
	cfg.RuntimeParams["jit"] = "off"
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return pgx.ConnectConfig(cctx, cfg)
}

// ApplicationName is the application_name of the recorder's session.
const ApplicationName = "console-episodes"

// lead tries to become the recorder. On success it closes the episodes a
// previous recorder left open. On a standby it gives the lock back and
// reports false.
func (r *Recorder) lead(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var locked, standby, allStats bool
	if err := conn.QueryRow(ctx, sqlText("episode_leader_lock")).Scan(&locked, &standby, &allStats); err != nil {
		return false, fmt.Errorf("lock episodes: take the recorder's lock: %w", err)
	}
	switch {
	case locked && standby:
		if _, err := conn.Exec(ctx, sqlText("episode_leader_unlock")); err != nil {
			return false, err
		}
		r.setStatus(false, false, reasonStandby, nil)
		return false, nil
	case standby:
		r.setStatus(false, false, reasonStandby, nil)
		return false, nil
	case !locked:
		r.setStatus(true, false, reasonFollower, nil)
		return false, nil
	}
	if _, err := conn.Exec(ctx, sqlText("episode_close_abandoned")); err != nil {
		if reason := offReason(err); reason != "" {
			r.setStatus(false, false, reason, nil)
			_, _ = conn.Exec(ctx, sqlText("episode_leader_unlock"))
			return false, nil
		}
		return false, fmt.Errorf("lock episodes: close the episodes left open: %w", err)
	}
	r.probe = probeFor(allStats)
	r.setStatus(true, true, reasonLeader+r.cfg.Interval.String(), nil)
	return true, nil
}

// probeFor is the statement of a look while nothing waits: the waits in
// pg_stat_activity when the role sees every session's wait event, else the
// ungranted requests of pg_locks (which every role reads, at several times
// the cost).
func probeFor(readsAllStats bool) string {
	if readsAllStats {
		return "episode_probe"
	}
	return "episode_probe_locks"
}

// offReason explains the errors that mean this database cannot keep lock
// episodes at all, or "" for a passing failure.
func offReason(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch pgErr.Code {
	case "25006": // read_only_sql_transaction
		return "off: the database refuses writes (read-only transaction or standby)"
	case "42501": // insufficient_privilege
		return "off: the console's database role may not write lock_episodes; run `console roles sql` as a superuser in this database"
	case "42P01": // undefined_table
		return "off: the table lock_episodes does not exist; run `console migrate up`"
	}
	return ""
}

// look is one look at the locks, and the writes it makes.
func (r *Recorder) look(ctx context.Context, conn *pgx.Conn, tr *tracker) error {
	defer func() {
		select {
		case r.looked <- struct{}{}:
		default:
		}
	}()
	began := time.Now()
	statements := 1
	// folding is the tracker's own work, which asks nothing of the
	// database: it is left out of the look's cost.
	var folding time.Duration
	defer func() { r.spent(statements, time.Since(began)-folding) }()
	var waiting int
	var digest int64
	if err := conn.QueryRow(ctx, sqlText(r.probe)).Scan(&waiting, &digest); err != nil {
		return fmt.Errorf("lock episodes: read whether a session waits for a lock: %w", err)
	}
	sessions, reuse := tr.reuse(waiting, digest)
	if !reuse && waiting > 0 {
		var err error
		statements++
		if sessions, err = sqlset.All[session](ctx, conn, sqlText("episode_waits")); err != nil {
			return fmt.Errorf("lock episodes: read who waits on whom: %w", err)
		}
		tr.read(digest, sessions)
	}
	now := time.Now().UTC()
	defer r.setStatus(true, true, reasonLeader+r.cfg.Interval.String(), &now)
	if len(sessions) == 0 && len(tr.open) == 0 {
		return nil
	}
	folded := time.Now()
	started, seen, ended := tr.observe(now, sessions)
	folding = time.Since(folded)
	for _, ep := range started {
		statements += 3
		if err := r.insert(ctx, conn, ep); err != nil {
			return err
		}
	}
	for _, ep := range seen {
		// An episode that goes on as it was is written every flushEvery
		// looks, not every look: its row says how long it lasted so far.
		if ep.fresh == 0 && ep.looksUnsaved < flushEvery {
			ep.looksUnsaved++
			continue
		}
		statements += 2
		if err := r.save(ctx, conn, ep); err != nil {
			return err
		}
	}
	for _, ep := range ended {
		statements += 2
		if err := r.save(ctx, conn, ep); err != nil {
			return err
		}
		r.metrics.count(ep)
	}
	return nil
}

// flushEvery is how many looks an open episode that only goes on (no new
// session) is kept unwritten: its last_seen_at is at most that many
// intervals behind while it lasts.
const flushEvery = 10

// Cost is what the recorder has spent on the database since it started:
// the statements of its looks and their wall time (round trips included,
// so an upper bound of the server's time; the tracker's folding of a look
// into episodes, which asks nothing of the database, left out).
type Cost struct {
	Statements int64   `json:"statements"`
	Seconds    float64 `json:"seconds"`
}

// Cost reports what the recorder has spent on the database so far.
func (r *Recorder) Cost() Cost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cost
}

func (r *Recorder) spent(statements int, took time.Duration) {
	r.mu.Lock()
	r.cost.Statements += int64(statements)
	r.cost.Seconds += took.Seconds()
	r.mu.Unlock()
}

// insert writes a new episode and its sessions.
func (r *Recorder) insert(ctx context.Context, conn *pgx.Conn, ep *tracked) error {
	root, first := ep.rootParticipant(), ep.firstWaiter()
	err := conn.QueryRow(ctx, sqlText("episode_insert"), ep.start, ep.lastSeen, r.cfg.Name, root.PID,
		root.Application, root.Query, first.LockType, first.LockMode, first.LockTarget).Scan(&ep.id)
	if err != nil {
		return fmt.Errorf("lock episodes: record a new episode: %w", err)
	}
	return r.save(ctx, conn, ep)
}

// save writes what is new of an episode: its new sessions (every session
// when it ends, for their last sightings) and its row.
func (r *Recorder) save(ctx context.Context, conn *pgx.Conn, ep *tracked) error {
	closing := !ep.end.IsZero()
	parts := ep.participants[len(ep.participants)-ep.fresh:]
	if closing {
		parts = ep.participants
	}
	for _, p := range ep.participants[len(ep.participants)-ep.fresh:] {
		r.describeJob(ctx, conn, ep, p)
	}
	if len(parts) > 0 {
		b, err := json.Marshal(parts)
		if err != nil {
			return fmt.Errorf("lock episodes: encode the sessions: %w", err)
		}
		if _, err := conn.Exec(ctx, sqlText("episode_participants_save"), ep.id, string(b)); err != nil {
			return fmt.Errorf("lock episodes: record the sessions of episode %d: %w", ep.id, err)
		}
	}
	ep.fresh, ep.looksUnsaved = 0, 0
	var end *time.Time
	if closing {
		end = &ep.end
	}
	_, err := conn.Exec(ctx, sqlText("episode_update"), ep.id, ep.lastSeen, end, nonNil(ep.tables), nonNil(ep.applications),
		nonNil(ep.kinds), nonNil(ep.queues), ep.peakWaiting, len(ep.jobs), len(ep.claims), ep.waitedSeconds())
	if err != nil {
		return fmt.Errorf("lock episodes: update episode %d: %w", ep.id, err)
	}
	return nil
}

// describeJob fills in the kind and queue of a job's session.
func (r *Recorder) describeJob(ctx context.Context, conn *pgx.Conn, ep *tracked, p *Participant) {
	if p.JobID == nil {
		return
	}
	lookup := r.cfg.JobLookupFunc
	if lookup == nil {
		lookup = func(ctx context.Context, id int64) (string, string, error) {
			j, err := queues.JobGet(ctx, conn, id)
			if err != nil {
				return "", "", err
			}
			return j.Kind, j.Queue, nil
		}
	}
	kind, queue, err := lookup(ctx, *p.JobID)
	if err != nil {
		return // archived or unreadable: recorded by id alone
	}
	p.JobKind, p.Queue = kind, queue
	if p.Role != "root" {
		ep.kinds = appendNew(ep.kinds, kind)
		ep.queues = appendNew(ep.queues, queue)
	}
}

// nonNil is list, or an empty list for nil (a NULL in SQL).
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// abandon closes the episodes this recorder has open as it stops: their
// end was not seen.
func (r *Recorder) abandon(ctx context.Context, conn *pgx.Conn, tr *tracker) {
	if len(tr.open) == 0 {
		return
	}
	if _, err := conn.Exec(ctx, sqlText("episode_close_abandoned")); err != nil {
		r.cfg.Logger.Warn("lock episodes: close the open episodes at stop", "err", err)
	}
}
