package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
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
	// shared are the small internal packages the domain packages build on:
	// the embedded-SQL loader, the start/stop lifecycle of a service, the
	// set of this process's own backends, and the one formatter of sizes
	// and durations.
	shared = []string{"internal/sqlset", "internal/lifecycle", "internal/ownpid", "internal/humanize"}
	rules  = map[string]rule{
		// x/time has the token bucket behind per-queue and relay rate
		// limits. The broker clients live in the publisher packages below,
		// so a service that embeds the engine does not import NATS.
		"queues":            {internal: shared, external: append(engineDeps, "golang.org/x/time")},
		"queues/natspub":    {internal: []string{"queues"}, external: []string{"github.com/nats-io/nats.go"}},
		"queues/webhookpub": {internal: []string{"queues"}},
		// River's reader (and its client, for actions that go through it).
		"queues/river": {internal: append([]string{"queues"}, shared...), external: append(engineDeps, "github.com/riverqueue/river")},
		"diagnostics":  {internal: append([]string{"queues", "queues/river"}, shared...), external: engineDeps},
		// The rooms of diagnostics: the finding rules and the sampler read
		// the catalog; the recorder and the metrics exporter read the
		// findings and samples too; nothing reads them back.
		"diagnostics/findings":  {internal: append([]string{"diagnostics", "queues/river"}, shared...), external: engineDeps},
		"diagnostics/sampler":   {internal: append([]string{"diagnostics"}, shared...), external: engineDeps},
		"diagnostics/recorder":  {internal: append([]string{"diagnostics", "diagnostics/findings", "diagnostics/sampler"}, shared...), external: engineDeps},
		"diagnostics/collector": {internal: append([]string{"diagnostics", "diagnostics/findings", "diagnostics/sampler"}, shared...), external: engineDeps},
		"audit":                 {internal: shared, external: engineDeps},
		"migrations":            {external: append(engineDeps, "github.com/jackc/tern/v2")},
		"views":                 {external: []string{"github.com/a-h/templ"}},
		// The assets are minified once at start, by a minifier, not a
		// build step.
		"static": {external: []string{"github.com/tdewolff/minify/v2"}},
		"actions": {
			internal: append([]string{"queues", "queues/river", "diagnostics", "audit", "internal/auth"}, shared...),
			external: engineDeps,
		},
		"web": {
			internal: append([]string{"views", "actions", "diagnostics", "diagnostics/findings", "diagnostics/recorder", "diagnostics/sampler", "queues", "queues/river", "audit", "static", "migrations", "internal/auth"}, shared...),
			external: append(engineDeps, "github.com/labstack/echo/v4", "github.com/a-h/templ", "golang.org/x/"),
		},
		"internal/sqlset":    {external: []string{"github.com/jackc/pgx/v5"}},
		"internal/lifecycle": {},
		"internal/humanize":  {},
		"internal/ownpid":    {external: []string{"github.com/jackc/pgx/v5"}},
		"internal/metricsum": {external: []string{"github.com/prometheus/client_golang"}},
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
			t.Fatalf("package folder %s is missing: the layout of the module requires it", pkg)
		}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != dir {
				// A folder with a rule of its own is checked by that rule.
				if sub, _ := filepath.Rel(root, path); hasRule(filepath.ToSlash(sub)) {
					return filepath.SkipDir
				}
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
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

// ruleFor is the rule that governs the module package rest: its own, or
// that of the nearest folder above it with one ("" when none does).
func ruleFor(rest string) string {
	for p := rest; ; {
		if hasRule(p) {
			return p
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
}

// console are the parts of the console that the libraries under internal/
// build towards, never on: a package there that imports one of them (or a
// folder below one) is a piece of a program, and lives beside it.
var console = []string{"queues", "diagnostics", "actions", "web"}

// internalViolation says why a file of a package under internal/ may not
// import imp ("" when it may).
func internalViolation(imp string) string {
	rest, ok := strings.CutPrefix(imp, module)
	if !ok {
		return ""
	}
	for _, p := range console {
		if rest == p || strings.HasPrefix(rest, p+"/") {
			return "internal/ holds small shared libraries, which import no part of the console (" +
				strings.Join(console, ", ") + "); move the package beside the program that uses it (as cmd/console/bench)"
		}
	}
	return ""
}

// TestInternalIsShared: no file under internal/, test files included,
// imports queues, diagnostics, actions or web.
func TestInternalIsShared(t *testing.T) {
	root, _ := filepath.Abs("../..")
	files := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		for _, imp := range imports(t, path) {
			if msg := internalViolation(imp); msg != "" {
				t.Errorf("%s imports %s: %s", rel, imp, msg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go files under internal/: the walk is broken")
	}
}

func hasRule(pkg string) bool {
	_, ok := rules[pkg]
	return ok
}

func TestViolationsAreCaught(t *testing.T) {
	cases := map[string]string{
		"queues|" + module + "diagnostics":                         "inside",
		"queues|github.com/labstack/echo/v4":                       "outside",
		"queues|github.com/nats-io/nats.go":                        "outside",
		"queues|" + module + "internal/sqlset":                     "",
		"queues|" + module + "internal/auth":                       "inside",
		"queues/natspub|github.com/nats-io/nats.go/jetstream":      "",
		"queues/natspub|" + module + "queues":                      "",
		"queues/webhookpub|" + module + "diagnostics":              "inside",
		"diagnostics|" + module + "internal/lifecycle":             "",
		"internal/sqlset|" + module + "queues":                     "inside",
		"views|github.com/jackc/pgx/v5":                            "outside",
		"actions|" + module + "web":                                "inside",
		"diagnostics|" + module + "queues":                         "",
		"diagnostics|" + module + "actions":                        "inside",
		"diagnostics|" + module + "diagnostics/findings":           "inside",
		"diagnostics|" + module + "diagnostics/collector":          "inside",
		"diagnostics/findings|" + module + "diagnostics":           "",
		"diagnostics/findings|" + module + "diagnostics/recorder":  "inside",
		"diagnostics/recorder|" + module + "diagnostics/findings":  "",
		"diagnostics/collector|" + module + "diagnostics/findings": "",
		"diagnostics/collector|" + module + "web":                  "inside",
		"web|" + module + "diagnostics/recorder":                   "",
		"web|github.com/jackc/pgx/v5/pgxpool":                      "",
		"actions|" + module + "queues":                             "",
		"queues|fmt":                                               "",
		"audit|github.com/robfig/cron/v3":                          "",
	}
	for imp, want := range map[string]bool{
		module + "queues": true, module + "diagnostics/findings": true, module + "actions": true,
		module + "web": true, module + "internal/sqlset": false, module + "migrations": false,
		module + "queuesx": false, "github.com/jackc/pgx/v5": false,
	} {
		if got := internalViolation(imp); (got != "") != want {
			t.Errorf("internalViolation(%s) = %q, want a violation: %v", imp, got, want)
		}
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
		// A folder below pkg is pkg's own unless it has a rule of its
		// own: diagnostics may not import diagnostics/findings.
		if ruleFor(rest) == pkg {
			return ""
		}
		for _, p := range r.internal {
			// Listing a package allows the folders below it that have no
			// rule of their own; one that has is listed by name.
			if rest == p || strings.HasPrefix(rest, p+"/") && ruleFor(rest) == ruleFor(p) {
				return ""
			}
		}
		allowed := append([]string(nil), r.internal...)
		sort.Strings(allowed)
		return "inside the module " + pkg + " may import only " + strings.Join(allowed, ", ")
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

// TestEverySQLFileIsUsed: every embedded sql/<name>.sql is named, as the
// string "name", by a Go file of its package (the name a sqlText or
// collect call passes). A version variant <name>_vNN.sql counts as used
// when its own name or its query's name is. A file no code names is
// dead SQL that the console would still show.
func TestEverySQLFileIsUsed(t *testing.T) {
	root, _ := filepath.Abs("../..")
	variant := regexp.MustCompile(`_v[0-9]+$`)
	dirs := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules" || d.Name() == "var") {
			return filepath.SkipDir
		}
		if !d.IsDir() || d.Name() != "sql" {
			return nil
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.sql"))
		if len(files) == 0 {
			return nil
		}
		dirs++
		code := goSource(t, filepath.Dir(path))
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".sql")
			if !strings.Contains(code, strconv.Quote(name)) && !strings.Contains(code, strconv.Quote(variant.ReplaceAllString(name, ""))) {
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s is embedded but no Go file of its package runs %q", rel, name)
			}
		}
		return filepath.SkipDir
	})
	if err != nil {
		t.Fatal(err)
	}
	if dirs < 7 {
		t.Fatalf("found %d sql folders, want at least 7: the walk is broken", dirs)
	}
}

// goSource is the text of the non-test Go files directly in dir.
func goSource(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
