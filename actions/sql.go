package actions

import (
	"embed"

	"github.com/pgconsole/console/internal/sqlset"
)

// sqlFiles holds the statements the actions run themselves (the rest are the
// engine's and the diagnostics'), one per file, named after the function.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("actions", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }

// DBTX is what the package's queries run on: a pool, a connection or a
// transaction.
type DBTX = sqlset.DBTX
