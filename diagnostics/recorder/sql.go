package recorder

import (
	"context"
	"embed"
	"fmt"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/sqlset"
)

// sqlFiles are the flight recorder's statements, one per file; each file's
// header says what it reads or writes, its locks and its index.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("recorder", sqlFiles)

// sqlText returns the statement of sql/name.sql; the recorder's statements
// have no version variants, so version is ignored.
func sqlText(name string, _ int) (string, error) {
	if !queries.Has(name) {
		return "", fmt.Errorf("no embedded query %q", name)
	}
	return queries.Text(name), nil
}

// collect runs sql/name.sql and collects its rows by column name.
func collect[T any](ctx context.Context, db diagnostics.DBTX, name string, _ int, args ...any) ([]T, error) {
	rows, err := sqlset.All[T](ctx, db, queries.Text(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return rows, nil
}

// collectOne runs sql/name.sql and collects its one row by column name.
func collectOne[T any](ctx context.Context, db diagnostics.DBTX, name string, _ int, args ...any) (T, error) {
	row, err := sqlset.One[T](ctx, db, queries.Text(name), args...)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", name, err)
	}
	return row, nil
}
