package queues

import (
	"embed"
	"fmt"
	"strings"
)

// sqlFiles holds every statement the engine runs, one query per file, named
// after the Go function that runs it. The console shows this text to
// operators, so it is the SQL that really runs.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlText returns the statement in sql/name.sql. A missing file is a
// programming error caught by the first test that runs the query.
func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("queues: no embedded query %q", name))
	}
	return strings.TrimSpace(string(b))
}

// SQL returns the text of one of the engine's embedded queries by name (for
// example "job_claim"), for pages that show operators what ran.
func SQL(name string) (string, bool) {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}
