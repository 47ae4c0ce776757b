package diagnostics_test

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// diagnostics imports only the standard library, pgx and prometheus
// (DESIGN.md section 2): never queues, web or any other package of ours.
func TestImportsStayInTheirLane(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first, _, _ := strings.Cut(path, "/")
			ok := !strings.Contains(first, ".") ||
				strings.HasPrefix(path, "github.com/jackc/pgx/v5") ||
				strings.HasPrefix(path, "github.com/prometheus/client_golang/") ||
				path == "github.com/pgconsole/console/internal/sqlset" ||
				path == "github.com/pgconsole/console/internal/lifecycle"
			require.True(t, ok, "%s imports %s", e.Name(), path)
		}
	}
}
