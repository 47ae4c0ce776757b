package episodes

import (
	"embed"

	"github.com/pgconsole/console/internal/sqlset"
)

// DBTX is what the package's functions run their statements on: a pool, a
// connection or a transaction.
type DBTX = sqlset.DBTX

// sqlFiles holds the package's statements, one per file, named after what
// runs them.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("episodes", sqlFiles)

func sqlText(name string) string { return queries.Text(name) }
