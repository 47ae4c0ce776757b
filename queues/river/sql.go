package river

import (
	"context"
	"embed"
	"fmt"

	"github.com/pgconsole/console/internal/sqlset"
)

// sqlFiles holds every statement this package runs on River's tables, one
// per file, named after the Go function that runs it.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("queues/river", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }

// collectRows runs query name and collects its rows into T by column name;
// what says what failed in the error.
func collectRows[T any](ctx context.Context, db sqlset.DBTX, name, what string, args ...any) ([]T, error) {
	out, err := sqlset.All[T](ctx, db, sqlText(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// DBTX is what the statements run on: a pool, a connection or a
// transaction (sqlset.DBTX).
type DBTX = sqlset.DBTX
