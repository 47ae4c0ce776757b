package diagnostics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/queues"
)

// ApplicationName is the application_name of the diagnostics pool; activity
// views hide it (and every console-* backend except queue workers).
const ApplicationName = "console-diagnostics"

// Config configures Open. The zero value of every field is a sensible
// default.
type Config struct {
	// StatementTimeout bounds each query (SET LOCAL statement_timeout);
	// default 2s.
	StatementTimeout time.Duration
	// LockTimeout bounds each lock wait (SET LOCAL lock_timeout); default
	// 200ms. A query stuck behind a lock fails fast and its Result names
	// the blockers.
	LockTimeout time.Duration
	// MaxConns is the number of connections Diagnostics opens to the
	// database: MaxConns-1 for queries and one for the lock watcher;
	// default 4.
	MaxConns int32
	// OnDemand opens the connections when checks first need them instead
	// of keeping MaxConns open from the start. Those open connections are
	// what a console diagnoses a connection storm with (no new one can be
	// had then), so a long-running console leaves it false; a short-lived
	// Diagnostics (a test) sets it to spare the server connections it may
	// never use: each costs the server a process.
	OnDemand bool
	// StandbyURLs are standbys to read receiver and replay state from.
	StandbyURLs []string
	// TransactionPooler says the URL given to Open goes through a pooler
	// in transaction mode (PgBouncer pool_mode=transaction): its
	// connections then send only what the pooler accepts at connect and
	// use no server-side prepared statement (queues.ForTransactionPooler).
	// Every check runs in a transaction of its own with SET LOCAL
	// settings, so each works there. Standby URLs are taken as direct.
	TransactionPooler bool
	// River says the database's jobs are River's (the console's queue
	// source is River): findings rounds then read River's tables too
	// (Round.River), through queues/river. SetRiver changes it later.
	River bool
	// Thresholds for Findings; nil means DefaultThresholds().
	Thresholds *Thresholds
	// Budget bounds one Findings round; default 5s.
	Budget time.Duration
	// SlowInterval is how often the shared rounds (LatestRound) and the
	// Sampler read the checks that scan the whole catalog (SlowChecks);
	// default 2m. In between they reuse the last read, dated by
	// Round.SlowAt, so a schema of 20,000 tables costs the server one scan
	// per SlowInterval, not one per round.
	SlowInterval time.Duration
	// SlowBudget bounds one read of those checks, apart from Budget;
	// default 10s.
	SlowBudget time.Duration
	// WALSampleWindow is how far apart the two WAL positions of a Findings
	// round are when no recent sample exists (from a previous round or the
	// Sampler); default 1s.
	WALSampleWindow time.Duration
	// RoundMaxAge is how old the shared round LatestRound serves may be;
	// default 3s. However many pages poll, the catalog runs at most once
	// per RoundMaxAge for them.
	RoundMaxAge time.Duration
	// PanelMaxAge is how old a panel's shared result (Panel) may be; default
	// 5s. However many people watch a panel, its query runs at most once
	// per PanelMaxAge.
	PanelMaxAge time.Duration
	// ServerInfoMaxAge is how long ServerInfo serves what it read before
	// reading again; default 30s, so the role follows a failover (and the
	// version an upgrade) within that time.
	ServerInfoMaxAge time.Duration
	// NowFunc is the clock the ages of those cached reads are measured
	// with, and the one a findings round is dated with (Round.At), so what
	// rounds measure between them (how long a slot or a standby has held
	// its xmin, how fast a slot's WAL grows) follows it; nil means
	// time.Now. Tests inject one.
	NowFunc func() time.Time
}

func (c Config) withDefaults() Config {
	orDefault(&c.StatementTimeout, 2*time.Second)
	orDefault(&c.LockTimeout, 200*time.Millisecond)
	orDefault(&c.MaxConns, 4)
	orDefault(&c.Budget, 5*time.Second)
	orDefault(&c.SlowInterval, 2*time.Minute)
	orDefault(&c.SlowBudget, 10*time.Second)
	orDefault(&c.WALSampleWindow, time.Second)
	orDefault(&c.RoundMaxAge, 3*time.Second)
	orDefault(&c.PanelMaxAge, 5*time.Second)
	orDefault(&c.ServerInfoMaxAge, 30*time.Second)
	return c
}

// orDefault sets a config field to its default when it is zero (or
// negative, which means nothing sensible for a duration or a count).
func orDefault[T ~int | ~int32 | ~int64](field *T, def T) {
	if *field <= 0 {
		*field = def
	}
}

// Diagnostics runs the catalog on its own small pool, read-only and bounded
// by timeouts. It is safe for concurrent use; Close it when done.
type Diagnostics struct {
	cfg Config
	// river is Config.River, or what SetRiver said since.
	river     atomic.Bool
	pool      *pgxpool.Pool
	watchPool *pgxpool.Pool
	standbys  []standbyPool
	// own holds the pids of the pool and watchPool connections, so views
	// leave this process's diagnostics backends out by pid.
	own *ownpid.Set

	server *Cache[Server]
	rounds *Cache[Round]
	// slow is the last read of the catalog-wide checks (see slowRound).
	slow      *Cache[Round]
	roundsRun atomic.Int64 // rounds run for LatestRound
	// panels share each catalog check's latest result among every viewer
	// (see Panel).
	panels map[string]*Cache[PanelResult]
	cost   costLedger

	mu         sync.Mutex
	thresholds Thresholds
	lastWAL    *WALPoint
	lastRate   *float64
	// xminSeen is when a round first saw each xmin holder without an age
	// of its own (slots, standbys) holding its current xmin.
	xminSeen map[xminKey]time.Time
	// slotWindows keep, by slot name, the retained WAL reads its growth is
	// measured between.
	slotWindows map[string]*counterWindow[int64]
	// checkpoints and conflicts (by standby) keep the counter reads that
	// rounds measure checkpoint pressure and standby conflicts against.
	checkpoints counterWindow[CheckpointerStat]
	conflicts   map[string]*counterWindow[StandbyConflict]
	walRate     func() (float64, bool) // a sampler's fresh WAL rate (UseWALRate)
	// deadlocks keeps the deadlock counters by database that rounds
	// measure deadlocks against.
	deadlocks counterWindow[map[string]int64]
	// watchers are the lock watchers, one per pool they poll on.
	watchers map[*pgxpool.Pool]*lockWatcher
}

// standbyPool is the pool of one standby of Config.StandbyURLs.
type standbyPool struct {
	name string
	pool *pgxpool.Pool
	own  *ownpid.Set
}

// Open prepares a Diagnostics on the database at url. It does not need the
// database to be up: connections are made on first use, so the console can
// start (and say what is wrong) during an outage. ctx is unused beyond
// validation and kept for symmetry with other constructors.
func Open(ctx context.Context, url string, cfg Config) (*Diagnostics, error) {
	cfg = cfg.withDefaults()
	// One connection of MaxConns is kept for the lock watchers, so "locked
	// by pid N" is still answered when every query connection is waiting.
	// Both pools stay open whole once connected: in a connection storm
	// (every slot of max_connections taken) no new connection can be had,
	// and these are what the console diagnoses the storm with.
	own := &ownpid.Set{}
	queries := max(cfg.MaxConns-1, 1)
	floor, watchFloor := queries, int32(1)
	if cfg.OnDemand {
		floor, watchFloor = 0, 0
	}
	pool, err := newPool(url, queries, floor, own, cfg.TransactionPooler)
	if err != nil {
		return nil, fmt.Errorf("diagnostics pool: %w", err)
	}
	watch, err := newPool(url, 1, watchFloor, own, cfg.TransactionPooler)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("diagnostics pool: %w", err)
	}
	d := &Diagnostics{cfg: cfg, pool: pool, watchPool: watch, own: own}
	d.river.Store(cfg.River)
	d.server = NewCache(d.readServerInfo, CacheConfig{MaxAge: cfg.ServerInfoMaxAge, NowFunc: cfg.NowFunc})
	d.rounds = NewCache(d.sharedRound, CacheConfig{MaxAge: cfg.RoundMaxAge, NowFunc: cfg.NowFunc})
	d.slow = NewCache(d.slowRound, CacheConfig{MaxAge: cfg.SlowInterval, NowFunc: cfg.NowFunc})
	d.panels = d.newPanelCaches()
	if cfg.Thresholds != nil {
		d.thresholds = *cfg.Thresholds
	} else {
		d.thresholds = DefaultThresholds()
	}
	for _, u := range cfg.StandbyURLs {
		sown := &ownpid.Set{}
		sp, err := newPool(u, 2, 0, sown, false)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("standby pool %s: %w", standbyName(u, d.standbys), err)
		}
		d.standbys = append(d.standbys, standbyPool{name: standbyName(u, d.standbys), pool: sp, own: sown})
	}
	return d, nil
}

// newPool returns a pool of diagnostics connections whose backend pids are
// kept in own while they are open; pooled says url goes through a
// transaction pooler. The pool keeps floor connections open from the start
// and recycles them only after a week (a recycled connection may not come
// back while the server is full); above the floor, idle connections close
// within a minute (queues.TrimIdle). maxConns is the hard bound.
func newPool(url string, maxConns, floor int32, own *ownpid.Set, pooled bool) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	own.Track(pc)
	pc.MaxConns = maxConns
	pc.MinConns = floor
	queues.TrimIdle(pc)
	if floor > 0 {
		pc.MaxConnLifetime = 7 * 24 * time.Hour
	}
	pc.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	if pooled {
		queues.ForTransactionPooler(pc.ConnConfig)
	}
	if pc.ConnConfig.ConnectTimeout == 0 || pc.ConnConfig.ConnectTimeout > 5*time.Second {
		pc.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	return pgxpool.NewWithConfig(context.Background(), pc)
}

// standbyName names a standby in views and findings by where it is
// (host:port, and the database when one is given), never by its password.
// Both URLs and key=value connection strings are read; taken names get a
// "#2", "#3"... so two standbys never share one.
func standbyName(raw string, taken []standbyPool) string {
	name := "standby"
	if cfg, err := pgconn.ParseConfig(raw); err == nil && cfg.Host != "" {
		name = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
		if cfg.Database != "" {
			name += "/" + cfg.Database
		}
	}
	unique := name
	for n := 2; slices.ContainsFunc(taken, func(s standbyPool) bool { return s.name == unique }); n++ {
		unique = fmt.Sprintf("%s #%d", name, n)
	}
	return unique
}

// now is Config.NowFunc, or time.Now.
func (d *Diagnostics) now() time.Time {
	if d.cfg.NowFunc != nil {
		return d.cfg.NowFunc()
	}
	return time.Now()
}

// Close closes the pools. Results already returned stay valid.
func (d *Diagnostics) Close() {
	if d.pool != nil {
		d.pool.Close()
	}
	if d.watchPool != nil {
		d.watchPool.Close()
	}
	for _, s := range d.standbys {
		s.pool.Close()
	}
}

// Thresholds returns the thresholds Findings uses.
func (d *Diagnostics) Thresholds() Thresholds {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.thresholds
}

// SetThresholds replaces the thresholds Findings uses.
func (d *Diagnostics) SetThresholds(t Thresholds) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.thresholds = t
}

// ServerInfo returns the server's version and role. What it read is served
// for Config.ServerInfoMaxAge, then read again, so a failover (the primary
// now in recovery) shows within that time; callers that arrive during a
// read wait for it, and a failed read is retried after a second. ctx bounds
// only the wait.
func (d *Diagnostics) ServerInfo(ctx context.Context) (Server, error) {
	return d.server.Get(ctx, 0)
}

// readServerInfo runs server_info.sql for the ServerInfo cache.
func (d *Diagnostics) readServerInfo(ctx context.Context) (Server, error) {
	var info Server
	p := d.exec(ctx, d.pool, pgx.ReadCommitted, CheckServerInfo, func(ctx context.Context, db DBTX) error {
		var err error
		info, err = ServerInfo(ctx, db)
		return err
	})
	if p.Err != nil {
		return Server{}, p.Err
	}
	return info, nil
}

// version returns server_version_num, or 0 when ServerInfo cannot read it
// (panels then read it in their own transaction).
func (d *Diagnostics) version(ctx context.Context) int {
	info, err := d.ServerInfo(ctx)
	if err != nil {
		return 0
	}
	return info.VersionNum
}

// SQL returns the exact text of the named query as it runs on this server
// (the version variant chosen by server_version_num), for panels that show
// operators what ran. It is empty for an unknown name, a query the server
// is too old for, and a query with version variants while the server's
// version is not known yet.
func (d *Diagnostics) SQL(name string) string {
	v := 0
	if info, ok := d.server.Last(); ok {
		v = info.VersionNum
	}
	if c, ok := CheckNamed(name); v == 0 && ok && c.variants != nil {
		return ""
	}
	s, _ := SQLFor(name, v)
	return s
}

// Result is one panel's outcome: its rows, or why there are none. A page
// renders each Result on its own, so one slow query never blanks the page.
type Result[T any] struct {
	// Name is the query's name (its file name without .sql).
	Name string `json:"name"`
	// SQL is the exact text that ran.
	SQL  string `json:"sql"`
	Rows []T    `json:"rows"`
	// Err is why the query failed, nil on success.
	Err error `json:"-"`
	// TimedOut is true when statement_timeout (or the caller's deadline)
	// ended the query.
	TimedOut bool `json:"timed_out"`
	// LockedBy lists the backends the query waited for when it hit
	// lock_timeout (or timed out while waiting for a lock).
	LockedBy []int32 `json:"locked_by,omitempty"`
	// Took is the query's wall time.
	Took time.Duration `json:"took"`
	// At is when the query started: a shared result (Panel) is served
	// until it is Config.PanelMaxAge old, and pages say how old it is.
	At time.Time `json:"at"`
}

// Status is a short text for the panel: "ok", "timed out", "locked by pid
// N", "not available: ..." or the error.
func (r Result[T]) Status() string { return statusText(r.Err, r.TimedOut, r.LockedBy) }

// OK reports whether the query succeeded.
func (r Result[T]) OK() bool { return r.Err == nil }

func statusText(err error, timedOut bool, lockedBy []int32) string {
	switch {
	case err == nil:
		return "ok"
	case len(lockedBy) > 0:
		s := make([]string, len(lockedBy))
		for i, p := range lockedBy {
			s[i] = fmt.Sprint(p)
		}
		return "locked by pid " + strings.Join(s, ", ")
	case timedOut:
		return "timed out"
	case errors.Is(err, ErrUnsupported), errors.Is(err, ErrNotInstalled):
		return "not available: " + err.Error()
	default:
		return "error: " + err.Error()
	}
}

// probe is the outcome of one statement run by exec.
type probe struct {
	Err      error
	TimedOut bool
	LockedBy []int32
	Took     time.Duration
}

// errPoolBusy is the cause when no diagnostics connection frees up in time.
var errPoolBusy = errors.New("diagnostics pool busy")

// session is one read-only transaction on one connection of a pool; each
// statement runs in its own savepoint so a failure does not end the round.
type session struct {
	d *Diagnostics
	// pool is where the lock watcher runs (the watcher pool for the
	// primary, the standby's own pool for a standby).
	pool *pgxpool.Pool
	conn *pgxpool.Conn
	tx   pgx.Tx
	pid  uint32
	// bare runs each statement in the transaction itself, without a
	// savepoint: one round trip a statement instead of three, for a
	// caller that sends many cheap ones. A statement that fails then
	// aborts the transaction, which failed says: the caller ends the
	// session and begins another for what is left.
	bare   bool
	failed bool
}

// begin opens a READ ONLY transaction with the configured timeouts and JIT
// off.
func (d *Diagnostics) begin(ctx context.Context, pool *pgxpool.Pool, iso pgx.TxIsoLevel) (*session, error) {
	// Every connection is busy for at most a statement timeout, so a
	// longer wait means the pool is stuck: say so rather than queue.
	actx, cancel := context.WithTimeoutCause(ctx, 2*d.cfg.StatementTimeout+time.Second, errPoolBusy)
	conn, err := pool.Acquire(actx)
	cancel()
	if err != nil {
		if context.Cause(actx) == errPoolBusy && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: %w", errPoolBusy, context.DeadlineExceeded)
		}
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, err
	}
	// JIT compilation costs hundreds of milliseconds and the catalog's
	// small queries never repay it (the loose scans' row estimates are far
	// above what they read, which would trigger it).
	// console.own_pids names this process's diagnostics backends for the
	// queries that leave them out of their views (by pid, never by a name).
	set := fmt.Sprintf("SET LOCAL statement_timeout = %d; SET LOCAL lock_timeout = %d; SET LOCAL jit = off; SET LOCAL console.own_pids = '%s'",
		d.cfg.StatementTimeout.Milliseconds(), d.cfg.LockTimeout.Milliseconds(), d.ownPIDsFor(pool).List())
	if _, err := tx.Exec(ctx, set); err != nil {
		tx.Rollback(context.Background())
		conn.Release()
		return nil, err
	}
	watchPool := pool
	if pool == d.pool && d.watchPool != nil {
		watchPool = d.watchPool
	}
	return &session{d: d, pool: watchPool, conn: conn, tx: tx, pid: conn.Conn().PgConn().PID()}, nil
}

// end rolls the read-only transaction back (nothing to commit) and releases
// the connection.
func (s *session) end() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.tx.Rollback(ctx); err != nil {
		s.conn.Conn().Close(ctx)
	}
	s.conn.Release()
}

// run runs fn in a savepoint of the session (in the transaction itself when
// the session is bare), watching for lock waits: while
// the statement runs past a quarter of the lock timeout, the pool's
// lockWatcher asks pg_blocking_pids on another connection who it waits for,
// so a lock timeout can say "locked by pid N". When the watcher saw nothing (a loaded server answers late),
// the holders of ACCESS EXCLUSIVE locks on tables, the only mode a reader
// waits for, are asked instead.
func (s *session) run(ctx context.Context, check string, tables []string, fn func(context.Context, DBTX) error) probe {
	start := time.Now()
	var p probe
	defer func() { s.d.cost.add(check, p.Took) }()
	var sp pgx.Tx
	var db DBTX = s.tx
	if !s.bare {
		var err error
		if sp, err = s.tx.Begin(ctx); err != nil {
			p.Err = err
			classify(&p)
			p.Took = time.Since(start)
			return p
		}
		db = sp
	}
	// A check that reads the lock tables itself waits on no lock a watcher
	// could name: watching it would only double its cost.
	var watched *watchedStatement
	w := s.d.watcherOf(s.pool)
	if !lockGraphReads[check] {
		watched = w.watch(s.pid, min(max(s.d.cfg.LockTimeout/4, 10*time.Millisecond), 100*time.Millisecond),
			min(max(s.d.cfg.LockTimeout/8, 10*time.Millisecond), 50*time.Millisecond))
	}
	err := fn(ctx, db)
	if watched != nil {
		p.LockedBy = w.done(watched)
	}
	switch {
	case err != nil:
		if sp != nil {
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			sp.Rollback(rctx)
			cancel()
		} else {
			s.failed = true
		}
		p.Err = err
		if isLockTimeout(err) && len(p.LockedBy) == 0 && len(tables) > 0 {
			p.LockedBy = s.exclusiveHolders(ctx, tables)
		}
	case sp != nil:
		if err := sp.Commit(ctx); err != nil {
			p.Err = err
		}
	}
	classify(&p)
	p.Took = time.Since(start)
	return p
}

// watchQueryTimeout bounds one pg_blocking_pids poll of the lock watcher.
const watchQueryTimeout = time.Second

// lockGraphReads are the checks that read pg_locks and pg_blocking_pids
// themselves: they take no lock a writer holds, so no lock watcher runs
// beside them.
var lockGraphReads = map[string]bool{CheckBlockingTree: true, CheckLockWaits: true}

// maxWatchInterval bounds the lock watcher's backoff between polls.
const maxWatchInterval = time.Second

// watcherOf returns the lock watcher of pool (the watcher pool, or a
// standby's pool), made on first use.
func (d *Diagnostics) watcherOf(pool *pgxpool.Pool) *lockWatcher {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.watchers[pool]
	if w == nil {
		if d.watchers == nil {
			d.watchers = map[*pgxpool.Pool]*lockWatcher{}
		}
		w = newLockWatcher(pool, &d.cost)
		d.watchers[pool] = w
	}
	return w
}

// exclusiveHolders returns the backends holding or queued for an ACCESS
// EXCLUSIVE lock on any of tables in this database: after a reader's lock
// timeout, those are who it waited for.
func (s *session) exclusiveHolders(ctx context.Context, tables []string) []int32 {
	qctx, cancel := context.WithTimeout(ctx, watchQueryTimeout)
	defer cancel()
	var pids []int32
	err := s.pool.QueryRow(qctx, `SELECT coalesce(array_agg(DISTINCT l.pid ORDER BY l.pid), '{}')
		FROM pg_locks AS l
		JOIN pg_class AS c ON c.oid = l.relation
		WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock'
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND c.relname = ANY ($1) AND l.pid <> $2`, tables, int32(s.pid)).Scan(&pids)
	if err != nil {
		return nil
	}
	return pids
}

func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// classify turns timeouts and lock timeouts into the probe's flags.
func classify(p *probe) {
	if p.Err == nil {
		p.LockedBy = nil
		return
	}
	var pgErr *pgconn.PgError
	if errors.As(p.Err, &pgErr) {
		switch pgErr.Code {
		case "57014": // query_canceled: statement_timeout or a cancelled context
			p.TimedOut = true
		case "55P03": // lock_not_available: lock_timeout
			if len(p.LockedBy) == 0 {
				p.TimedOut = true
			}
			return
		}
	}
	if errors.Is(p.Err, context.DeadlineExceeded) || errors.Is(p.Err, context.Canceled) {
		p.TimedOut = true
	}
}

// exec runs one statement in its own read-only transaction.
func (d *Diagnostics) exec(ctx context.Context, pool *pgxpool.Pool, iso pgx.TxIsoLevel, name string, fn func(context.Context, DBTX) error) probe {
	start := time.Now()
	s, err := d.begin(ctx, pool, iso)
	if err != nil {
		p := probe{Err: fmt.Errorf("%s: %w", name, err)}
		classify(&p)
		p.Took = time.Since(start)
		return p
	}
	defer s.end()
	p := s.run(ctx, name, tablesOf(name), fn)
	p.Took = time.Since(start)
	return p
}

// panel runs one catalog query as a panel, in the variant of the server's
// version. When ServerInfo cannot tell the version (its read failed or
// timed out), the panel's own transaction reads it first: a variant is
// never guessed, and a server whose version cannot be read is refused.
func panel[T any](ctx context.Context, d *Diagnostics, name string, fn func(context.Context, DBTX, int) ([]T, error)) Result[T] {
	v := d.version(ctx)
	r := Result[T]{Name: name, At: d.now()}
	if v != 0 {
		r.SQL, _ = SQLFor(name, v)
		if _, err := fileFor(name, v); err != nil {
			r.Err = err
			return r
		}
	}
	p := d.exec(ctx, d.pool, pgx.ReadCommitted, name, func(ctx context.Context, db DBTX) error {
		if v == 0 {
			info, err := ServerInfo(ctx, db)
			if err != nil {
				return fmt.Errorf("read the server version to choose %s's query: %w", name, err)
			}
			v = info.VersionNum
			r.SQL, _ = SQLFor(name, v)
			if _, err := fileFor(name, v); err != nil {
				return err
			}
		}
		rows, err := fn(ctx, db, v)
		r.Rows = rows
		return err
	})
	r.Err, r.TimedOut, r.LockedBy, r.Took = p.Err, p.TimedOut, p.LockedBy, p.Took
	return r
}

// one adapts a single-row query to panel.
func one[T any](fn func(context.Context, DBTX) (T, error)) func(context.Context, DBTX, int) ([]T, error) {
	return func(ctx context.Context, db DBTX, _ int) ([]T, error) {
		v, err := fn(ctx, db)
		if err != nil {
			return nil, err
		}
		return []T{v}, nil
	}
}

// oneV adapts a single-row, version-aware query to panel.
func oneV[T any](fn func(context.Context, DBTX, int) (T, error)) func(context.Context, DBTX, int) ([]T, error) {
	return func(ctx context.Context, db DBTX, v int) ([]T, error) {
		r, err := fn(ctx, db, v)
		if err != nil {
			return nil, err
		}
		return []T{r}, nil
	}
}

// many adapts a version-independent query to panel.
func many[T any](fn func(context.Context, DBTX) ([]T, error)) func(context.Context, DBTX, int) ([]T, error) {
	return func(ctx context.Context, db DBTX, _ int) ([]T, error) { return fn(ctx, db) }
}

// OwnPIDs returns the backend pids of the open diagnostics connections to
// the primary (the database Open was given), so callers that signal
// backends can refuse these as they refuse their own. Standby connections
// are not listed: they are backends of other servers.
func (d *Diagnostics) OwnPIDs() []int32 { return d.own.PIDs() }

// ownPIDsFor returns the pid set of the server pool belongs to.
func (d *Diagnostics) ownPIDsFor(pool *pgxpool.Pool) *ownpid.Set {
	if pool == d.pool || pool == d.watchPool {
		return d.own
	}
	for _, s := range d.standbys {
		if s.pool == pool {
			return s.own
		}
	}
	return nil
}

// SetRiver says whether the database's jobs are River's (Config.River),
// for a program that learns it after Open: the next round reads River's
// tables or stops reading them.
func (d *Diagnostics) SetRiver(on bool) { d.river.Store(on) }
