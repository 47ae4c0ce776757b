package diagnostics

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/pgconsole/console/internal/sqlset"
)

// DBTX is what every query function needs: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx all satisfy it.
type DBTX = sqlset.DBTX

// ErrUnsupported is returned by a query that needs a newer PostgreSQL than
// the server's (pg_stat_io before 16, for example).
var ErrUnsupported = sqlset.ErrUnsupported

// ErrNotInstalled is returned by StatementsTop when pg_stat_statements is not
// installed in the database.
var ErrNotInstalled = errors.New("pg_stat_statements is not installed")

// sqlFiles holds every query of the catalog, one per file, named after the Go
// function that runs it; version variants carry a _vNN suffix.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// queries holds the catalog's statements; the checks' entries declare
// which file runs a query on which server version (see checks.go).
var queries = sqlset.New("diagnostics", sqlFiles)

// fileFor returns the file name (without .sql) that runs query name on a
// server of the given version, or ErrUnsupported. Version 0 means unknown and
// picks the newest variant.
func fileFor(name string, version int) (string, error) {
	return queries.File(name, version)
}

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
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.Name
	}
	return names
}

// SQLFor returns the exact text of query name as it runs on a server of the
// given server_version_num (0: the newest variant), or false when there is no
// such query or the server is too old for it.
func SQLFor(name string, version int) (string, bool) {
	if c, ok := CheckNamed(name); ok && c.statement != nil {
		return c.statement(), true
	}
	if !queries.Has(name) {
		return "", false
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
	return runNamed(ctx, db, name, version, sqlset.All[T], args...)
}

// collectOne is collect for queries that return exactly one row.
func collectOne[T any](ctx context.Context, db DBTX, name string, version int, args ...any) (T, error) {
	return runNamed(ctx, db, name, version, sqlset.One[T], args...)
}

// runNamed runs the text of query name for the server version through run
// (sqlset.All or sqlset.One) and names the query in any error of the server.
func runNamed[R any](ctx context.Context, db DBTX, name string, version int,
	run func(context.Context, DBTX, string, ...any) (R, error), args ...any) (R, error) {
	var zero R
	q, err := sqlText(name, version)
	if err != nil {
		return zero, err
	}
	out, err := run(ctx, db, q, args...)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}
