package audit

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sqlFiles holds every statement the package runs, one query per file, named
// after the Go function that runs it.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlText returns the statement in sql/name.sql. A missing file is a
// programming error caught by the first test that runs the query.
func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("audit: no embedded query %q", name))
	}
	return strings.TrimSpace(string(b))
}

// SQL returns the text of one of the package's embedded queries by name (for
// example "verify"), for pages that show operators what ran.
func SQL(name string) (string, bool) {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// DBTX is what every function here runs its SQL on: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx. Functions ending in Tx are meant to run in the
// caller's transaction, so the audit row commits or rolls back with the
// change it describes.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

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
