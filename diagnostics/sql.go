package diagnostics

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/internal/sqlset"
)

// DBTX is what every query function needs: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx all satisfy it.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrUnsupported is returned by a query that needs a newer PostgreSQL than
// the server's (pg_stat_io before 16, for example).
var ErrUnsupported = errors.New("not available on this PostgreSQL version")

// ErrNotInstalled is returned by StatementsTop when pg_stat_statements is not
// installed in the database.
var ErrNotInstalled = errors.New("pg_stat_statements is not installed")

// sqlFiles holds every query of the catalog, one per file, named after the Go
// function that runs it; version variants carry a _vNN suffix.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// variant is a version-specific file of a query: used from minVersion
// (server_version_num) up.
type variant struct {
	minVersion int
	file       string
}

// variants lists, per query name, the files to use by server version, oldest
// first. A query absent here has one file named after it. The first
// variant's minVersion is the oldest server the query runs on at all.
var variants = map[string][]variant{
	"wal_stats":         {{0, "wal_stats"}, {180000, "wal_stats_v18"}},
	"io_stats":          {{160000, "io_stats"}, {180000, "io_stats_v18"}},
	"checkpointer":      {{0, "checkpointer"}, {170000, "checkpointer_v17"}},
	"copy_progress":     {{0, "copy_progress"}, {170000, "copy_progress_v17"}},
	"replication_slots": {{0, "replication_slots"}, {170000, "replication_slots_v17"}},
}

// fileFor returns the file name (without .sql) that runs query name on a
// server of the given version, or ErrUnsupported. Version 0 means unknown and
// picks the newest variant.
func fileFor(name string, version int) (string, error) {
	vs, ok := variants[name]
	if !ok {
		return name, nil
	}
	if version == 0 {
		return vs[len(vs)-1].file, nil
	}
	if version < vs[0].minVersion {
		return "", fmt.Errorf("%s needs PostgreSQL %d or later: %w", name, vs[0].minVersion/10000, ErrUnsupported)
	}
	file := vs[0].file
	for _, v := range vs {
		if version >= v.minVersion {
			file = v.file
		}
	}
	return file, nil
}

var queries = sqlset.New("diagnostics", sqlFiles)

// sqlText returns the statement of query name for a server version. A missing
// file is a programming error caught by the first test that runs the query.
func sqlText(name string, version int) (string, error) {
	file, err := fileFor(name, version)
	if err != nil {
		return "", err
	}
	return queries.Text(file), nil
}

// QueryNames lists every query of the catalog by name (the file name without
// version suffix), in catalog order.
func QueryNames() []string {
	names := make([]string, len(catalog))
	for i, c := range catalog {
		names[i] = c.Name
	}
	return names
}

// SQLFor returns the exact text of query name as it runs on a server of the
// given server_version_num (0: the newest variant), or false when there is no
// such query or the server is too old for it.
func SQLFor(name string, version int) (string, bool) {
	if _, err := sqlFiles.Open("sql/" + name + ".sql"); err != nil {
		if _, ok := variants[name]; !ok {
			return "", false
		}
	}
	s, err := sqlText(name, version)
	if err != nil {
		return "", false
	}
	return s, true
}

// collect runs query name with args and collects its rows into T by column
// name.
func collect[T any](ctx context.Context, db DBTX, name string, version int, args ...any) ([]T, error) {
	q, err := sqlText(name, version)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// collectOne is collect for queries that return exactly one row.
func collectOne[T any](ctx context.Context, db DBTX, name string, version int, args ...any) (T, error) {
	var zero T
	q, err := sqlText(name, version)
	if err != nil {
		return zero, err
	}
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
