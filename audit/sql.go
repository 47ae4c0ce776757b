package audit

import (
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/sqlset"
)

// sqlFiles holds every statement the package runs, one query per file, named
// after the Go function that runs it.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("audit", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }

// DBTX is what every function here runs its SQL on: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx. Functions ending in Tx are meant to run in the
// caller's transaction, so the audit row commits or rolls back with the
// change it describes.
type DBTX = sqlset.DBTX

// ErrNotFound reports that the incident or event asked for does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid reports input the package refuses (an empty title, an unknown
// outcome, evidence for a closed incident). The message says what; the web
// layer maps it to 422.
var ErrInvalid = errors.New("invalid input")

func notFound(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return err
}
