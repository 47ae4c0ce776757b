package queues

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ApplicationName is the application_name of engine connections (set by
// PoolConfig). A connection running a job through JobConn is renamed
// ApplicationName + " job=<id>" for the time the job holds it, so the
// console joins a stuck job to its backend with
//
//	SELECT pid FROM pg_stat_activity WHERE application_name = 'console-worker job=' || $1
const ApplicationName = "console-worker"

// JobApplicationName is the application_name of an engine connection while
// it runs job id: "console-worker job=<id>".
func JobApplicationName(id int64) string {
	return ApplicationName + " job=" + strconv.FormatInt(id, 10)
}

// JobOfApplicationName returns the job an engine connection runs, read from
// its application_name ("console-worker job=42"), or nil for any other
// session: a worker between jobs, the engine's own claims and acks, another
// application.
func JobOfApplicationName(app string) *int64 {
	return TaggedJob(app, ApplicationName)
}

// TaggedJob reads the job id a session's application_name carries after
// the word name ("<name> job=<id>", other words allowed after name), the
// tag JobConn sets and another queue's workers can set too. Nil when the
// first word is not name or no later word is job=<id>.
func TaggedJob(app, name string) *int64 {
	words := strings.Fields(app)
	if len(words) < 2 || words[0] != name {
		return nil
	}
	for _, w := range words[1:] {
		if v, ok := strings.CutPrefix(w, "job="); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				return &id
			}
		}
	}
	return nil
}

// PoolConfig parses a connection string into a pool configuration for the
// engine: its connections identify themselves as ApplicationName (unless
// the string already names an application), their transactions are READ
// COMMITTED whatever default_transaction_isolation the server, database or
// role sets (see RequireReadCommitted), the server does not end them
// for idling (idle_session_timeout 0; the pool pings a connection idle for
// a second before it hands it out, but a claim on one the server closed
// within that second fails), and the pool closes what a burst opened soon
// after it (TrimIdle).
func PoolConfig(connString string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	TrimIdle(cfg)
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	cfg.ConnConfig.RuntimeParams["idle_session_timeout"] = "0"
	return cfg, nil
}

// Idle connections above a pool's MinConns close once idle for PoolIdleTime;
// the pool looks every PoolIdleCheck (locally: the check sends nothing to
// the server). pgxpool's defaults (30 minutes, checked every minute) keep
// what a burst opened for half an hour, each a server backend holding
// memory and a slot of max_connections that a database under pressure
// needs back.
const (
	PoolIdleTime  = 30 * time.Second
	PoolIdleCheck = 15 * time.Second
)

// TrimIdle makes cfg's pool close idle connections above its MinConns
// within PoolIdleTime + PoolIdleCheck (45s) of their last use.
func TrimIdle(cfg *pgxpool.Config) {
	cfg.MaxConnIdleTime = PoolIdleTime
	cfg.HealthCheckPeriod = PoolIdleCheck
}

// poolerStartupParams are the startup parameters a pooler in transaction
// mode passes on: PgBouncer tracks these per client and sets them on
// whichever server connection the client gets, and refuses a client that
// sends any other (unless listed in its ignore_startup_parameters).
var poolerStartupParams = map[string]bool{
	"application_name": true, "client_encoding": true, "DateStyle": true,
	"TimeZone": true, "standard_conforming_strings": true,
}

// ForTransactionPooler makes cfg fit a pooler in transaction mode
// (PgBouncer pool_mode=transaction), where consecutive transactions of one
// client run on different server sessions. It drops the startup parameters
// the pooler would refuse (jit, default_transaction_isolation,
// idle_session_timeout...): a setting the engine or the console needs is
// then set on the role (ALTER ROLE ... SET) or with SET LOCAL inside the
// transaction that needs it. And it runs every statement as the unnamed
// statement, parsed in the same round trip that executes it
// (QueryExecModeCacheDescribe): a named prepared statement lives on one
// server session, so a cached one is missing (26000) or already there
// (42P05) on the next. Only statement descriptions are cached, client side;
// arguments keep their binary encoding, so every statement behaves as it
// does on a direct connection.
func ForTransactionPooler(cfg *pgx.ConnConfig) {
	for k := range cfg.RuntimeParams {
		if !poolerStartupParams[k] {
			delete(cfg.RuntimeParams, k)
		}
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
}

// RequireReadCommitted returns an error that says how to fix the pool when
// db's transactions do not default to READ COMMITTED. The engine's claims,
// acks, relay and schedule statements run as single statements or short
// transactions that name no isolation level, and count on READ COMMITTED:
// SKIP LOCKED claims and fenced updates re-check a row another session
// just changed, where REPEATABLE READ or SERIALIZABLE fail with
// serialization errors (SQLSTATE 40001) under any concurrency. A server,
// database or role with a stricter default_transaction_isolation is a
// valid choice for an application; the engine's pool then needs its own
// setting, which PoolConfig gives it. Client, Relay and Scheduler call it
// when they start.
func RequireReadCommitted(ctx context.Context, db DBTX) error {
	var level string
	if err := db.QueryRow(ctx, sqlText("session_isolation")).Scan(&level); err != nil {
		return fmt.Errorf("read the pool's default_transaction_isolation: %w", err)
	}
	if level != "read committed" {
		return fmt.Errorf("the pool's transactions default to %s (default_transaction_isolation of the server, database or role); "+
			"the queue engine needs READ COMMITTED, or concurrent claims fail with serialization errors: "+
			"build the pool with queues.PoolConfig, set its RuntimeParams[\"default_transaction_isolation\"] to \"read committed\", "+
			"or give the engine a role of its own with ALTER ROLE … SET default_transaction_isolation = 'read committed'", strings.ToUpper(level))
	}
	return nil
}

// sessionConfig is the configuration of a session the engine keeps open
// and mostly idle beside its pool (a LISTEN session, the scheduler
// leader's): direct's when set (a direct connection to PostgreSQL beside a
// pool that goes through a transaction pooler), else the pool's; never
// ended by the server for idling, whatever the pool's own setting. Ended,
// it would take its notifications or the leadership with it every
// idle_session_timeout.
func sessionConfig(pool *pgxpool.Pool, direct *pgx.ConnConfig) *pgx.ConnConfig {
	var cfg *pgx.ConnConfig
	if direct != nil {
		cfg = direct.Copy()
	} else {
		cfg = pool.Config().ConnConfig.Copy()
	}
	cfg.RuntimeParams["idle_session_timeout"] = "0"
	return cfg
}

type sessionKey struct{}

// jobSession is a job's lazily acquired, tagged connection. Behind a
// transaction pooler (pooled) it is a transaction: see JobConn.
type jobSession struct {
	pool   *pgxpool.Pool
	jobID  int64
	pooled bool

	mu       sync.Mutex
	conn     *pgxpool.Conn
	released bool
}

// JobConn returns the running job's own database session, acquired from
// the pool on first use and tagged with application_name
// "console-worker job=<id>" so pg_stat_activity shows which backend runs
// the job (and what blocks it). The handler must not close or release it;
// the engine resets and returns it when the handler returns. ctx must be
// the context the handler received.
//
// Behind a pooler in transaction mode (ClientConfig.TransactionPooler) a
// session exists only for the length of a transaction, and a session-level
// name would stay on the server session for the next client the pooler
// gives it to. There the connection is returned inside a transaction that
// carries the name with SET LOCAL: what the handler runs on it commits when
// the handler returns nil and rolls back when it returns an error (or the
// job's context ends first). A handler that commits or rolls back that
// transaction itself runs the rest of the job's statements untagged; one
// that wants transactions of its own uses savepoints (conn.Begin on a
// pgx.Tx).
func JobConn(ctx context.Context) (*pgx.Conn, error) {
	s, ok := ctx.Value(sessionKey{}).(*jobSession)
	if !ok {
		return nil, errors.New("job conn: context is not a running job's")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil, errors.New("job conn: the job has finished")
	}
	if s.conn != nil {
		return s.conn.Conn(), nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		if ctx.Err() == nil {
			return nil, fmt.Errorf("job conn: %w: %w", ErrNoConnection, err)
		}
		return nil, fmt.Errorf("job conn: acquire: %w", err)
	}
	name := JobApplicationName(s.jobID)
	tag := "job_session_tag"
	if s.pooled {
		if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
			conn.Release()
			return nil, fmt.Errorf("job conn: begin the job's transaction: %w", err)
		}
		tag = "job_transaction_tag"
	}
	if _, err := conn.Exec(ctx, sqlText(tag), name); err != nil {
		conn.Conn().Close(context.Background())
		conn.Release()
		return nil, fmt.Errorf("job conn: tag session: %w", err)
	}
	s.conn = conn
	return conn.Conn(), nil
}

// release resets the session's name and returns it to the pool; a session
// left inside a transaction (or broken) is closed instead. Behind a
// transaction pooler it ends the job's transaction instead: committed when
// ok (the handler returned nil), rolled back otherwise.
func (s *jobSession) release(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = true
	if s.conn == nil {
		return
	}
	conn := s.conn
	s.conn = nil
	if s.pooled {
		s.endTransaction(conn, ok)
		return
	}
	if conn.Conn().PgConn().TxStatus() != 'I' {
		conn.Conn().Close(context.Background())
		conn.Release()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sqlText("job_session_reset")); err != nil {
		conn.Conn().Close(ctx)
	}
	conn.Release()
}

// endTransaction ends the job's transaction behind a transaction pooler
// and returns the connection to the pool; a connection whose transaction
// cannot be ended is closed, which rolls it back.
func (s *jobSession) endTransaction(conn *pgxpool.Conn, ok bool) {
	defer conn.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end := "ROLLBACK"
	switch conn.Conn().PgConn().TxStatus() {
	case 'I':
		return // the handler ended it itself
	case 'T':
		if ok {
			end = "COMMIT"
		}
	}
	if _, err := conn.Exec(ctx, end); err != nil {
		conn.Conn().Close(ctx)
	}
}
