package actions

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sqlFiles holds the statements the actions run themselves (the rest are the
// engine's and the diagnostics'), one per file, named after the function.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("actions: no embedded query %q", name))
	}
	return strings.TrimSpace(string(b))
}

// SQL returns the text of one of the package's embedded queries by name (for
// example "backend_fingerprint"), for pages that show operators what ran.
func SQL(name string) (string, bool) {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// DBTX is what the package's queries run on: a pool, a connection or a
// transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}
