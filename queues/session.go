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

// PoolConfig parses a connection string into a pool configuration for the
// engine: its connections identify themselves as ApplicationName (unless
// the string already names an application), their transactions are READ
// COMMITTED whatever default_transaction_isolation the server, database or
// role sets (see RequireReadCommitted), and the server does not end them
// for idling (idle_session_timeout 0; the pool pings a connection idle for
// a second before it hands it out, but a claim on one the server closed
// within that second fails).
func PoolConfig(connString string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = ApplicationName
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	cfg.ConnConfig.RuntimeParams["idle_session_timeout"] = "0"
	return cfg, nil
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
// leader's): the pool's, never ended by the server for idling, whatever
// the pool's own setting. Ended, it would take its notifications or the
// leadership with it every idle_session_timeout.
func sessionConfig(pool *pgxpool.Pool) *pgx.ConnConfig {
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["idle_session_timeout"] = "0"
	return cfg
}

type sessionKey struct{}

// jobSession is a job's lazily acquired, tagged connection.
type jobSession struct {
	pool  *pgxpool.Pool
	jobID int64

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
		return nil, fmt.Errorf("job conn: acquire: %w", err)
	}
	name := ApplicationName + " job=" + strconv.FormatInt(s.jobID, 10)
	if _, err := conn.Exec(ctx, sqlText("job_session_tag"), name); err != nil {
		conn.Release()
		return nil, fmt.Errorf("job conn: tag session: %w", err)
	}
	s.conn = conn
	return conn.Conn(), nil
}

// release resets the session's name and returns it to the pool; a session
// left inside a transaction (or broken) is closed instead.
func (s *jobSession) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = true
	if s.conn == nil {
		return
	}
	conn := s.conn
	s.conn = nil
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
