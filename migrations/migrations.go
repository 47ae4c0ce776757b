package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
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

// Up applies every pending migration. tern holds a session advisory lock while
// it runs, so concurrent callers (several consoles starting at once) apply each
// migration exactly once. The conn must not be in a transaction.
func Up(ctx context.Context, conn *pgx.Conn) (Status, error) {
	m, err := newMigrator(ctx, conn)
	if err != nil {
		return Status{}, err
	}
	if err := m.Migrate(ctx); err != nil {
		return Status{}, fmt.Errorf("apply migrations: %w", err)
	}
	return status(ctx, m)
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
