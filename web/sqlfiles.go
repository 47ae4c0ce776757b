package web

import (
	"embed"
	"strings"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlText returns the statement in sql/name.sql.
func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("web: no embedded query " + name)
	}
	return strings.TrimSpace(string(b))
}
