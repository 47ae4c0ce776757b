package queues

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/sqlset"
)

// sqlFiles holds every statement the engine runs, one query per file, named
// after the Go function that runs it. The console shows this text to
// operators, so it is the SQL that really runs.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("queues", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }

// collectRows runs query name and collects its rows into T by column name;
// what says what failed in the error.
func collectRows[T any](ctx context.Context, db DBTX, name, what string, args ...any) ([]T, error) {
	out, err := sqlset.All[T](ctx, db, sqlText(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// collectOne runs query name and collects its one row into a *T by column
// name. No row is ErrNotFound, said as missing ("schedule \"nightly\""); any
// other failure is wrapped with what.
func collectOne[T any](ctx context.Context, db DBTX, name, what, missing string, args ...any) (*T, error) {
	out, err := sqlset.One[T](ctx, db, sqlText(name), args...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", missing, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &out, nil
}

// collectIDs runs query name and collects its one bigint column (ids).
func collectIDs(ctx context.Context, db DBTX, name, what string, args ...any) ([]int64, error) {
	rows, err := db.Query(ctx, sqlText(name), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// One scan target for every row: pgx.RowTo would allocate one per row.
	out := []int64{} // never nil, as pgx.CollectRows
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		out = append(out, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// limitOr returns limit, or def when limit is zero or negative: the row
// limit of a list function whose caller left it unset.
func limitOr(limit, def int) int {
	if limit <= 0 {
		return def
	}
	return limit
}
