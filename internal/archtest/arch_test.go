package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/pgconsole/console/"

// rule says what a package (and the packages below it) may import: inside
// the module, only the listed prefixes; outside it, the standard library and
// the listed module prefixes.
type rule struct {
	internal []string
	external []string
}

var (
	engineDeps = []string{"github.com/jackc/pgx/v5", "github.com/prometheus/client_golang", "github.com/robfig/cron/v3"}
	rules      = map[string]rule{
		// The NATS client is the outbox relay's publisher (issue 4); x/time
		// has the token bucket behind per-queue and relay rate limits.
		"queues":      {external: append(engineDeps, "github.com/nats-io/nats.go", "golang.org/x/time")},
		"diagnostics": {external: engineDeps},
		"audit":       {external: engineDeps},
		"migrations":  {external: append(engineDeps, "github.com/jackc/tern/v2")},
		"views":       {external: []string{"github.com/a-h/templ"}},
		"static":      {},
		"actions": {
			internal: []string{"queues", "diagnostics", "audit", "internal/auth"},
			external: engineDeps,
		},
		"web": {
			internal: []string{"views", "actions", "diagnostics", "queues", "audit", "static", "migrations", "internal/auth"},
			external: append(engineDeps, "github.com/labstack/echo/v4", "github.com/a-h/templ", "golang.org/x/"),
		},
	}
)

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for pkg, r := range rules {
		dir := filepath.Join(root, pkg)
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("package folder %s is missing: the layout of DESIGN.md section 2 requires it", pkg)
		}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			for _, imp := range imports(t, path) {
				checked++
				if msg := violates(pkg, r, imp); msg != "" {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s imports %s: %s", rel, imp, msg)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no imports were checked: the walk found no Go files")
	}
}

// TestNothingImportsWebOrCmd: only cmd/console may import web, and nothing
// imports cmd/console; test files included.
func TestNothingImportsWebOrCmd(t *testing.T) {
	root, _ := filepath.Abs("../..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for _, imp := range imports(t, path) {
			if imp == module+"cmd/console" {
				t.Errorf("%s imports cmd/console", rel)
			}
			if imp == module+"web" && !strings.HasPrefix(rel, "cmd/") && !strings.HasPrefix(rel, "web/") {
				t.Errorf("%s imports web: only cmd/console may", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestViolationsAreCaught(t *testing.T) {
	cases := map[string]string{
		"queues|" + module + "diagnostics":    "inside",
		"queues|github.com/labstack/echo/v4":  "outside",
		"views|github.com/jackc/pgx/v5":       "outside",
		"actions|" + module + "web":           "inside",
		"diagnostics|" + module + "queues":    "inside",
		"web|github.com/jackc/pgx/v5/pgxpool": "",
		"actions|" + module + "queues":        "",
		"queues|fmt":                          "",
		"audit|github.com/robfig/cron/v3":     "",
	}
	for in, want := range cases {
		pkg, imp, _ := strings.Cut(in, "|")
		got := violates(pkg, rules[pkg], imp)
		if (want == "") != (got == "") || (want != "" && !strings.Contains(got, want)) {
			t.Errorf("violates(%s, %s) = %q, want a message containing %q", pkg, imp, got, want)
		}
	}
}

func violates(pkg string, r rule, imp string) string {
	if rest, ok := strings.CutPrefix(imp, module); ok {
		if rest == pkg || strings.HasPrefix(rest, pkg+"/") {
			return ""
		}
		for _, p := range r.internal {
			if rest == p || strings.HasPrefix(rest, p+"/") {
				return ""
			}
		}
		allowed := append([]string(nil), r.internal...)
		sort.Strings(allowed)
		return "inside the module " + pkg + " may import only " + strings.Join(allowed, ", ") + " (DESIGN.md section 2)"
	}
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") {
		return "" // standard library
	}
	for _, p := range r.external {
		if strings.HasPrefix(imp, p) {
			return ""
		}
	}
	return "outside the module " + pkg + " may import only the standard library and " + strings.Join(r.external, ", ")
}

func imports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}
