package sqlset

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// One runs query on db and collects its one row into a T, columns matched
// to fields by name (db tags). No row is pgx.ErrNoRows, unwrapped, so the
// caller can answer with its own not-found error and wrap the rest in its
// own words.
func One[T any](ctx context.Context, db DBTX, query string, args ...any) (T, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
}

// All runs query on db and collects every row into a T, like One.
func All[T any](ctx context.Context, db DBTX, query string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[T])
}

// InBatches runs a deleting statement, called with arg and batch ($1 and
// $2), until it deletes fewer than batch rows, each run its own short
// statement; it returns how many rows all the runs deleted, also when one
// fails.
func InBatches(ctx context.Context, db DBTX, statement string, arg any, batch int) (int64, error) {
	var total int64
	for {
		tag, err := db.Exec(ctx, statement, arg, batch)
		if err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
	}
}
