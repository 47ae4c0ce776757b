package migrations

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
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
	Min     int32 // oldest schema this binary runs against (Compatible.Min)
	Pending []string
	// MigratedAt is when the last migration was applied; nil before
	// migration 022 or when Check did not read it.
	MigratedAt *time.Time
}

// UpToDate reports whether the database has every migration applied.
func (s Status) UpToDate() bool { return s.Current == s.Latest }

func newMigrator(ctx context.Context, conn *pgx.Conn) (*migrate.Migrator, error) {
	return newMigratorFS(ctx, conn, files)
}

// newMigratorFS loads the migrations of fsys and makes each contract
// migration from CompatSince on record itself in the version table, in its
// own transaction (see Compat).
func newMigratorFS(ctx context.Context, conn *pgx.Conn, fsys fs.FS) (*migrate.Migrator, error) {
	m, err := migrate.NewMigratorEx(ctx, conn, VersionTable, &migrate.MigratorOptions{})
	if err != nil {
		return nil, fmt.Errorf("prepare migrator: %w", err)
	}
	if err := m.LoadMigrations(fsys); err != nil {
		return nil, fmt.Errorf("load embedded migrations: %w", err)
	}
	for _, mg := range m.Migrations {
		c, err := compatOf(fsys, mg.Name, mg.Sequence)
		if err != nil {
			return nil, err
		}
		if c == Contract && mg.Sequence >= CompatSince {
			mg.UpSQL += fmt.Sprintf("\n;\nUPDATE %s SET contract_version = %d, contract_name = '%s';\n",
				VersionTable, mg.Sequence, strings.ReplaceAll(mg.Name, "'", "''"))
		}
		if mg.Sequence >= migratedAtSince {
			mg.UpSQL += "\n;\nUPDATE " + VersionTable + " SET migrated_at = now();\n"
		}
	}
	return m, nil
}

// Compat says whether the consoles that carry only the migrations before
// one keep running against the schema it leaves. Each migration from
// CompatSince on says which in its header, on a line of its own:
//
//	-- compat: expand
//
// An expand migration only adds what older consoles never touch (a table,
// a nullable column, an index, a function nobody older calls); a contract
// migration removes or changes what they use (drops or renames a column,
// tightens a constraint, changes what a function they call returns). A
// contract migration records itself in the version table
// (contract_version, contract_name) in the same transaction as the
// version, so a console older than it refuses the schema and says which
// migration it is. Split a change older consoles cannot live with in two
// releases: expand in the first, contract in a later one, once no console
// older than the expand runs.
type Compat string

const (
	Expand   Compat = "expand"
	Contract Compat = "contract"
)

// CompatSince is the first migration that declares its Compat and the
// first whose consoles run against newer schemas. Every migration before it
// counts as a contract: the consoles that carry them accept only their own
// exact version.
const CompatSince = 21

// migratedAtSince is the migration that adds console_schema_version's
// migrated_at, which it and every later migration set (Check reads it
// when the column is there).
const migratedAtSince = 22

// MinSchema is the oldest schema version this binary's SQL runs against:
// the last migration that added something the code reads or writes. Raise
// it in the change whose code starts using what a newer migration adds.
const MinSchema = 20

// Compatible is the range of schema versions a binary runs against: from
// Min, the oldest its SQL works with, to Max, the newest migration it
// carries. Beyond Max it also runs when every newer migration is an
// expand (see Compat).
type Compatible struct {
	Min, Max int32
}

// Binary is the range of schema versions this binary runs against.
func Binary() Compatible {
	names, err := fs.Glob(files, "*.sql")
	if err != nil {
		panic(err) // only a malformed pattern fails
	}
	return Compatible{Min: MinSchema, Max: int32(len(names))}
}

var compatLine = regexp.MustCompile(`^--\s*compat:\s*(\S+)\s*$`)

// compatOf reads the Compat of migration name (number seq) from the
// comment lines that open it. Before CompatSince a migration without one is
// a contract; from it on the line is required.
func compatOf(fsys fs.FS, name string, seq int32) (Compat, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", fmt.Errorf("read migration %s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "--") {
			break
		}
		if mt := compatLine.FindStringSubmatch(line); mt != nil {
			switch c := Compat(mt[1]); c {
			case Expand, Contract:
				return c, nil
			default:
				return "", fmt.Errorf("migration %s says `-- compat: %s`: use expand (older consoles keep running against it) or contract (they must stop first)", name, mt[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read migration %s: %w", name, err)
	}
	if seq < CompatSince {
		return Contract, nil
	}
	return "", fmt.Errorf("migration %s says nothing of older consoles: add a header line `-- compat: expand` (older consoles keep running against it) or `-- compat: contract` (they must stop first)", name)
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

// ErrLockTimeout reports a migration that could not take its locks on any
// try, because it waited longer than its lock timeout or deadlocked with
// another session; the error names the sessions holding locks on the
// schema's tables. Nothing of that migration was applied.
var ErrLockTimeout = errors.New("a migration could not take its locks")

// retried reports whether err failed a migration for its locks alone, so
// that the same migration may pass when tried again: a lock timeout
// (55P03) or a deadlock PostgreSQL broke by failing it (40P01).
func retried(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	return pgErr.Code, pgErr.Code == "55P03" || pgErr.Code == "40P01"
}

// Up applies every pending migration with DefaultOptions.
func Up(ctx context.Context, conn *pgx.Conn) (Status, error) {
	return UpWith(ctx, conn, DefaultOptions)
}

// UpWith applies every pending migration, each in a transaction of its
// own: a migration that fails is rolled back whole and the schema stays at
// the version before it, which the consoles that ran before still accept.
// A migration that timed out on a lock or lost a deadlock is tried again
// (o.Attempts in all). tern holds a session advisory lock while it runs, so
// concurrent callers (several consoles starting at once) apply each
// migration exactly once. A schema newer than this binary is left as it is
// and checked as Check does. The conn must not be in a transaction.
func UpWith(ctx context.Context, conn *pgx.Conn, o Options) (Status, error) {
	return upWith(ctx, conn, o, files)
}

func upWith(ctx context.Context, conn *pgx.Conn, o Options, fsys fs.FS) (Status, error) {
	m, err := newMigratorFS(ctx, conn, fsys)
	if err != nil {
		return Status{}, err
	}
	if st, err := status(ctx, m); err != nil || st.Current > st.Latest {
		if err != nil {
			return st, err
		}
		return st, checkAhead(ctx, conn, st)
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
		code, again := retried(err)
		if err == nil || !again {
			break
		}
		if try >= max(1, o.Attempts) {
			st, _ := status(ctx, m)
			return st, lockTimeoutError(ctx, conn, err, code, st, o, try)
		}
		select {
		case <-ctx.Done():
			return Status{}, ctx.Err()
		case <-time.After(o.Pause):
		}
	}
	if err != nil {
		var me migrate.MigrationPgError
		st, serr := status(ctx, m)
		if serr != nil || !errors.As(err, &me) {
			return st, fmt.Errorf("apply migrations: %w", err)
		}
		return st, fmt.Errorf("apply migrations: %w; nothing of that migration was applied and the schema stays at version %d", err, st.Current)
	}
	return status(ctx, m)
}

// lockTimeoutError is ErrLockTimeout with what an operator needs to act:
// which migration, how it failed (code), where the schema stays, and the
// sessions holding locks on the schema's tables, oldest transaction first.
func lockTimeoutError(ctx context.Context, conn *pgx.Conn, err error, code string, st Status, o Options, tries int) error {
	name := "a migration"
	var me migrate.MigrationPgError
	if errors.As(err, &me) && me.MigrationName != "" {
		name = me.MigrationName
	}
	holders, herr := lockHolders(ctx, conn)
	var b strings.Builder
	if code == "40P01" {
		fmt.Fprintf(&b, "%s deadlocked with another session and PostgreSQL rolled it back, the last of %d tries; nothing of it was applied and the schema stays at version %d. ",
			name, tries, st.Current)
	} else {
		fmt.Fprintf(&b, "%s waited %s for a lock and gave up, %d times; nothing of it was applied and the schema stays at version %d. ",
			name, o.LockTimeout, tries, st.Current)
	}
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

// Check returns the schema status, and an error when this binary cannot
// run against it: ErrSchemaBehind below Compatible.Min, ErrSchemaAhead
// beyond Compatible.Max when a newer migration is a contract (see Compat);
// both wrapped with the versions. A schema from Min up to Max, or beyond it
// through expand migrations only, passes. It only reads, so it works on a
// standby and with a read-only role.
func Check(ctx context.Context, conn *pgx.Conn) (Status, error) {
	m, err := embedded()
	if err != nil {
		return Status{}, err
	}
	return check(ctx, conn, m)
}

// embedded is the embedded migrations, loaded once: Check runs on every
// readiness probe and only reads their names.
var embedded = sync.OnceValues(func() (*migrate.Migrator, error) {
	return newMigratorFS(context.Background(), nil, files)
})

func check(ctx context.Context, conn *pgx.Conn, m *migrate.Migrator) (Status, error) {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", VersionTable).Scan(&exists); err != nil {
		return Status{}, fmt.Errorf("look for %s: %w", VersionTable, err)
	}
	// to_jsonb reads the columns this schema has: migrated_at from 022 on.
	var row struct {
		Version    int32      `json:"version"`
		MigratedAt *time.Time `json:"migrated_at"`
	}
	if exists {
		if err := conn.QueryRow(ctx, "SELECT to_jsonb(v) FROM "+VersionTable+" AS v").Scan(&row); err != nil {
			return Status{}, fmt.Errorf("read schema version: %w", err)
		}
	}
	st := statusAt(m, row.Version)
	st.MigratedAt = row.MigratedAt
	switch {
	case st.Current < st.Min:
		return st, fmt.Errorf("%w: the database is at version %d and this binary needs %d to %d", ErrSchemaBehind, st.Current, st.Min, st.Latest)
	case st.Current > st.Latest:
		return st, checkAhead(ctx, conn, st)
	}
	return st, nil
}

// checkAhead says whether this binary runs against st, a schema newer than
// it: nil when every migration beyond st.Latest is an expand, else
// ErrSchemaAhead naming the last contract migration.
func checkAhead(ctx context.Context, conn *pgx.Conn, st Status) error {
	var version int32
	var name string
	err := conn.QueryRow(ctx, "SELECT contract_version, contract_name FROM "+VersionTable).Scan(&version, &name)
	if err != nil {
		return fmt.Errorf("%w: the database is at version %d, this binary knows up to %d, and reading which newer migrations older consoles can live with failed (%v): run a console that knows version %d",
			ErrSchemaAhead, st.Current, st.Latest, err, st.Current)
	}
	if version > st.Latest {
		return fmt.Errorf("%w: the database is at version %d and this binary knows up to %d; migration %s (version %d) is a contract, which removed or changed what consoles before it use: run a console that knows version %d or later",
			ErrSchemaAhead, st.Current, st.Latest, name, version, version)
	}
	return nil
}

func status(ctx context.Context, m *migrate.Migrator) (Status, error) {
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read schema version: %w", err)
	}
	return statusAt(m, cur), nil
}

func statusAt(m *migrate.Migrator, cur int32) Status {
	st := Status{Current: cur, Latest: int32(len(m.Migrations)), Min: min(MinSchema, int32(len(m.Migrations)))}
	for _, mg := range m.Migrations {
		if mg.Sequence > cur {
			st.Pending = append(st.Pending, mg.Name)
		}
	}
	return st
}
