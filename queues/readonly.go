package queues

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgconn"
)

// readOnlyWatch lets a background service stand down quietly while its
// database refuses writes (a standby, or default_transaction_read_only):
// one log line when the writes start being refused, one when they are
// accepted again (a promotion), and nothing in between. While standing
// down, the service asks each tick whether the database still refuses
// writes (database_read_only.sql), a read that fails nowhere, instead of
// attempting its write, so neither its log nor the server's fills with
// errors. It is owned by the service's single goroutine.
type readOnlyWatch struct {
	what string // the service, as its log lines name it
	log  *slog.Logger
	on   bool
}

// refused reports whether err is the database refusing a write because it
// is read-only (SQLSTATE 25006), and then starts standing down.
func (w *readOnlyWatch) refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		return false
	}
	if !w.on {
		w.on = true
		w.log.Info(w.what+" standing down: the database is read-only (a standby?); it resumes by itself when the database accepts writes",
			"error", err)
	}
	return true
}

// standingDown reports whether the service should skip this tick: while it
// stands down it asks db whether writes are still refused, and logs its
// return when they are not.
func (w *readOnlyWatch) standingDown(ctx context.Context, db DBTX) (bool, error) {
	if !w.on {
		return false, nil
	}
	var readOnly bool
	if err := db.QueryRow(ctx, sqlText("database_read_only")).Scan(&readOnly); err != nil {
		return true, fmt.Errorf("ask whether the database is still read-only: %w", err)
	}
	if !readOnly {
		w.on = false
		w.log.Info(w.what + " resuming: the database accepts writes again")
	}
	return readOnly, nil
}
