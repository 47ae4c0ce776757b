package queues

import (
	"embed"

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
