package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed *.sql
var files embed.FS

// VersionTable is the table tern records the applied version in.
const VersionTable = "console_schema_version"

// FS returns the embedded migration files, for tools that want to read them.
func FS() fs.FS { return files }

// ErrSchemaBehind reports that the database has not been migrated to the
// version this binary expects. Status.Current and Status.Latest say how far.
var ErrSchemaBehind = errors.New("database schema is behind this console version")

// ErrSchemaAhead reports a database migrated by a newer console.
var ErrSchemaAhead = errors.New("database schema is newer than this console version")

// Status is the schema version of a database against the binary's migrations.
type Status struct {
	Current int32 // version recorded in the database; 0 for a fresh database
	Latest  int32 // highest migration embedded in this binary
	Pending []string
}

// UpToDate reports whether the database has every migration applied.
func (s Status) UpToDate() bool { return s.Current == s.Latest }

func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	m, err := migrate.NewMigratorEx(ctx, conn, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return nil, fmt.Errorf("prepare migrator: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return nil, fmt.Errorf("load embedded migrations: %w", err)
	}
	return m, nil
}

// Options bound how long a migration may wait on the application's
// sessions. A migration that needs a strong lock on a busy table (a trigger
// or an index dropped on jobs) waits for the transactions using the table
// to end, and while it waits every new claim and ack queues behind its
// request: the wait, not the migration, would stall the engine. So each
// statement of a migration waits at most LockTimeout for a lock; a
// migration that times out is rolled back whole and tried again after
// Pause, Attempts times in all.
type Options struct {
	LockTimeout time.Duration // lock_timeout of each migration; 0 waits forever
	Attempts    int           // tries of a migration that timed out (at least 1)
	Pause       time.Duration // between tries
}

// DefaultOptions stall the engine for at most 2 s at a time, five times.
var DefaultOptions = Options{LockTimeout: 2 * time.Second, Attempts: 5, Pause: 3 * time.Second}

// ErrLockTimeout reports a migration that gave up waiting for its locks on
// every try; the error names the sessions holding locks on the schema's
// tables. Nothing of that migration was applied.
var ErrLockTimeout = errors.New("a migration could not take its locks")

// Up applies every pending migration with DefaultOptions.
func Up(ctx context.Context, conn *pgx.Conn) (Status, error) {
	return UpWith(ctx, conn, DefaultOptions)
}

// UpWith applies every pending migration, each in a transaction of its
// own. tern holds a session advisory lock while it runs, so concurrent
// callers (several consoles starting at once) apply each migration exactly
// once. The conn must not be in a transaction.
func UpWith(ctx context.Context, conn *pgx.Conn, o Options) (Status, error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return Status{}, err
	}
	var setErr error
	if o.LockTimeout > 0 {
		// Called inside each migration's transaction, before its SQL.
		m.OnStart = func(int32, string, string, string) {
			_, err := conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)", fmt.Sprintf("%dms", o.LockTimeout.Milliseconds()))
			setErr = errors.Join(setErr, err)
		}
	}
	for try := 1; ; try++ {
		err = m.Migrate(ctx)
		if setErr != nil {
			return Status{}, fmt.Errorf("apply migrations: set lock_timeout: %w", setErr)
		}
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
			break
		}
		if try >= max(1, o.Attempts) {
			st, _ := status(ctx, m)
			return st, lockTimeoutError(ctx, conn, err, st, o, try)
		}
		select {
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-time.After(o.Pause):
		}
	}
	if err != nil {
		return Status{}, fmt.Errorf("apply migrations: %w", err)
	}
	return status(ctx, m)
}

// lockTimeoutError is ErrLockTimeout with what an operator needs to act:
// which migration, where the schema stays, and the sessions holding locks
// on the schema's tables, oldest transaction first.
func lockTimeoutError(ctx context.Context, conn *pgx.Conn, err error, st Status, o Options, tries int) error {
	name := "a migration"
	var me migrate.MigrationPgError
	if errors.As(err, &me) && me.MigrationName != "" {
		name = me.MigrationName
	}
	holders, herr := lockHolders(ctx, conn)
	var b strings.Builder
	fmt.Fprintf(&b, "%s waited %s for a lock and gave up, %d times; nothing of it was applied and the schema stays at version %d. ",
		name, o.LockTimeout, tries, st.Current)
	switch {
	case herr != nil:
		fmt.Fprintf(&b, "Listing the sessions that hold locks failed too (%v): look for long transactions on the console's tables", herr)
	case len(holders) == 0:
		b.WriteString("No session holds a lock on the console's tables now: run `console migrate up` again")
	default:
		b.WriteString("Sessions holding locks on the console's tables, oldest transaction first: ")
		b.WriteString(strings.Join(holders, "; "))
		b.WriteString(". Let them finish or end them, then run `console migrate up` again")
	}
	return fmt.Errorf("%w: %s", ErrLockTimeout, b.String())
}

// lockHolders describes the sessions (other than conn's) holding a lock on
// a table of conn's schema: pid, application, user, state, transaction age,
// tables and the start of the query.
func lockHolders(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `
		SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''), coalesce(a.state, ''),
		       coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8,
		       string_agg(DISTINCT c.relname, ', ' ORDER BY c.relname), left(coalesce(a.query, ''), 120)
		FROM pg_locks AS l
		JOIN pg_class AS c ON c.oid = l.relation
		JOIN pg_stat_activity AS a ON a.pid = l.pid
		WHERE l.granted AND l.pid <> pg_backend_pid()
		  AND c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
		GROUP BY a.pid, a.application_name, a.usename, a.state, a.xact_start, a.query
		ORDER BY a.xact_start NULLS LAST
		LIMIT 5`)
	if err != nil {
		return nil, err
	}
	var out []string
	var pid int32
	var app, user, state, tables, query string
	var age float64
	_, err = pgx.ForEachRow(rows, []any{&pid, &app, &user, &state, &age, &tables, &query}, func() error {
		out = append(out, fmt.Sprintf("pid %d (application %q, user %s, %s, transaction open %s, on %s: %s)",
			pid, app, user, state, (time.Duration(age)*time.Second).String(), tables, strings.Join(strings.Fields(query), " ")))
		return nil
	})
	return out, err
}

// Check returns the schema status, and ErrSchemaBehind or ErrSchemaAhead
// (wrapped with the versions) when it does not match this binary. It only
// reads, so it works on a standby and with a read-only role.
func Check(ctx context.Context, conn *pgx.Conn) (Status, error) {
	m, err := newMigrator(ctx, nil)
	if err != nil {
		return Status{}, err
	}
	var cur int32
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", VersionTable).Scan(&exists); err != nil {
		return Status{}, fmt.Errorf("look for %s: %w", VersionTable, err)
	}
	if exists {
		if err := conn.QueryRow(ctx, "SELECT version FROM "+VersionTable).Scan(&cur); err != nil {
			return Status{}, fmt.Errorf("read schema version: %w", err)
		}
	}
	st := statusAt(m, cur)
	switch {
	case st.Current < st.Latest:
		return st, fmt.Errorf("%w: at version %d of %d", ErrSchemaBehind, st.Current, st.Latest)
	case st.Current > st.Latest:
		return st, fmt.Errorf("%w: at version %d, this binary knows %d", ErrSchemaAhead, st.Current, st.Latest)
	}
	return st, nil
}

func status(ctx context.Context, m *migrate.Migrator) (Status, error) {
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read schema version: %w", err)
	}
	return statusAt(m, cur), nil
}

func statusAt(m *migrate.Migrator, cur int32) Status {
	st := Status{Current: cur, Latest: int32(len(m.Migrations))}
	for _, mg := range m.Migrations {
		if mg.Sequence > cur {
			st.Pending = append(st.Pending, mg.Name)
		}
	}
	return st
}
