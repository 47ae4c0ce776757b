package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/migrations"
	"github.com/pgconsole/console/queues"
)

// openPool connects to the database, turning the usual failures into one line
// that says what is wrong and what to do. A non-nil own gets the pids of the
// pool's connections. Behind a transaction pooler the connections send only
// what the pooler accepts at connect and use no server-side prepared
// statement (queues.ForTransactionPooler). What a burst opened closes
// within a minute of it (queues.TrimIdle).
func openPool(ctx context.Context, raw, appName string, maxConns int32, own *ownpid.Set, pooler poolerConfig) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL cannot be parsed (%s); expected postgres://user:password@host:5432/dbname",
			redactErr(err, raw))
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = appName
	// The console's and the engine's statements are short index probes: JIT
	// never pays off for them, and a plan whose estimate crosses
	// jit_above_cost (a per-queue loop on a 10-million-row table) spends
	// hundreds of milliseconds compiling a query that runs in ten.
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	// The actions' transactions and the engine's statements are written
	// for READ COMMITTED (see queues.RequireReadCommitted): a stricter
	// default of the server, database or role must not reach them.
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "read committed"
	if pooler.transaction() {
		// Neither setting passes a transaction pooler: the diagnostics
		// turn JIT off with SET LOCAL in their own transactions, the
		// engine checks the isolation when it starts, and the README
		// asks for both on the console's role (ALTER ROLE ... SET).
		queues.ForTransactionPooler(cfg.ConnConfig)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	queues.TrimIdle(cfg)
	if own != nil {
		own.Track(cfg)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(raw, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, connectError(raw, err)
	}
	return pool, nil
}

// connectError turns a failed connect into one line that says what is wrong
// and what to do; the driver's error stays underneath for errors.As.
func connectError(raw string, err error) error {
	return &connectFailure{msg: connectSentence(raw, err).Error(), err: err}
}

// connectFailure is connectError's error: its sentence over the cause.
type connectFailure struct {
	msg string
	err error
}

func (e *connectFailure) Error() string { return e.msg }
func (e *connectFailure) Unwrap() error { return e.err }

func connectSentence(raw string, err error) error {
	where := target(raw)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "28P01", "28000":
			return fmt.Errorf("the database at %s refused the login (%s): check the user and password in DATABASE_URL", where, pgErr.Message)
		case "3D000":
			return fmt.Errorf("the database at %s does not exist (%s): create it or fix the database name in DATABASE_URL", where, pgErr.Message)
		}
		if strings.HasPrefix(pgErr.Message, "unsupported startup parameter") {
			return fmt.Errorf("cannot connect to %s: %s: DATABASE_URL looks like a pooler (PgBouncer); start with --pooler transaction (CONSOLE_POOLER=transaction) when it pools transactions, or point DATABASE_URL at PostgreSQL", where, pgErr.Message)
		}
		return fmt.Errorf("cannot connect to %s: %s (SQLSTATE %s)", where, pgErr.Message, pgErr.Code)
	}
	msg := redactErr(err, raw)
	switch {
	case strings.Contains(msg, "connection refused"):
		return fmt.Errorf("cannot reach the database at %s: connection refused; is PostgreSQL running there and is the port right?", where)
	case strings.Contains(msg, "no such host"):
		return fmt.Errorf("cannot reach the database at %s: the host name does not resolve; check DATABASE_URL", where)
	case strings.Contains(msg, "timeout") || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("cannot reach the database at %s: no answer in time; check the host, port and firewall", where)
	}
	return fmt.Errorf("cannot connect to %s: %s", where, msg)
}

// attachWith is attach behind the pooler a command's flags named.
func attachWith(ctx context.Context, getenv env, appName string, pooler poolerConfig) (*pgxpool.Pool, error) {
	raw, err := requiredDatabaseURL(getenv, "this command needs DATABASE_URL (or DATABASE_URL_FILE); `console serve` prints the embedded server's URL at start")
	if err != nil {
		return nil, err
	}
	pool, err := openPool(ctx, raw, appName, 4, nil, pooler)
	if err != nil {
		return nil, err
	}
	if _, err := ensureSchema(ctx, pool, false, pooler); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// ensureSchema applies migrations when allowed, or refuses an old schema with
// the command that fixes it. Behind a transaction pooler migrations run on
// the direct URL (see poolerConfig.migrationURL).
func ensureSchema(ctx context.Context, pool *pgxpool.Pool, migrate bool, pooler poolerConfig) (migrations.Status, error) {
	if migrate && pooler.transaction() {
		return migrateDirect(ctx, pooler)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return migrations.Status{}, err
	}
	defer conn.Release()
	if migrate {
		return migrations.Up(ctx, conn.Conn())
	}
	st, err := migrations.Check(ctx, conn.Conn())
	if errors.Is(err, migrations.ErrSchemaBehind) {
		return st, fmt.Errorf("%w; run `console migrate up` or start with --migrate (pending: %s)",
			err, strings.Join(st.Pending, ", "))
	}
	if errors.Is(err, migrations.ErrSchemaAhead) {
		return st, fmt.Errorf("%w; upgrade this console binary", err)
	}
	return st, err
}

// migrateDirect applies pending migrations on a session of the direct URL,
// beside a transaction pooler.
func migrateDirect(ctx context.Context, pooler poolerConfig) (migrations.Status, error) {
	raw, err := pooler.migrationURL("")
	if err != nil {
		return migrations.Status{}, err
	}
	pool, err := openPool(ctx, raw, "console-migrate", 1, nil, poolerConfig{})
	if err != nil {
		return migrations.Status{}, fmt.Errorf("the direct URL (CONSOLE_DIRECT_DATABASE_URL): %w", err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return migrations.Status{}, err
	}
	defer conn.Release()
	return migrations.Up(ctx, conn.Conn())
}

// ensureDatabase creates a database on the embedded server if it is missing.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to the embedded server: %w", err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}
