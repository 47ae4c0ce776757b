package web

import (
	"embed"

	"github.com/pgconsole/console/internal/sqlset"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("web", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }
