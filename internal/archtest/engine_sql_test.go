package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ownsEngineSQL are the folders whose SQL may name the engine's tables:
// the engine itself, the schema that creates them, and the bench, which
// stages fixtures on them.
var ownsEngineSQL = []string{"queues", "migrations", filepath.Join("cmd", "console", "bench")}

var (
	// createdTable finds the tables a migration creates.
	createdTable = regexp.MustCompile(`(?i)\bCREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?("?[a-z_][a-z0-9_."]*)`)
	// namedTable finds the relation after a keyword that names one.
	namedTable = regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE|INTO|TABLE|LOCK)\s+(?:TABLE\s+)?(?:ONLY\s+)?(?:IF\s+(?:NOT\s+)?EXISTS\s+)?("?[a-z_][a-z0-9_."]*)`)
	// looksLikeSQL tells a Go string holding a statement from prose.
	looksLikeSQL  = regexp.MustCompile(`(?i)\b(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|LOCK\s+TABLE|TRUNCATE|ALTER\s+TABLE|CREATE\s+TABLE)\b`)
	lineComment   = regexp.MustCompile(`--[^\n]*`)
	blockComment  = regexp.MustCompile(`(?s)/\*.*?\*/`)
	quotedLiteral = regexp.MustCompile(`'(?:[^']|'')*'`)
)

// engineTables are the tables the migrations create that the engine's own
// statements (queues/sql) name: a table the engine starts to use is
// covered without editing this test.
func engineTables(t *testing.T, root string) map[string]bool {
	t.Helper()
	created := map[string]bool{}
	migrations, _ := filepath.Glob(filepath.Join(root, "migrations", "*.sql"))
	for _, f := range migrations {
		for _, m := range createdTable.FindAllStringSubmatch(stripSQL(read(t, f)), -1) {
			created[relName(m[1])] = true
		}
	}
	engine := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "queues", "sql", "*.sql"))
	for _, f := range files {
		for _, name := range tablesNamed(read(t, f)) {
			if created[name] {
				engine[name] = true
			}
		}
	}
	if len(migrations) == 0 || len(files) == 0 || !engine["jobs"] || !engine["outbox_events"] {
		t.Fatalf("found %d migrations, %d engine statements and the engine tables %v: the walk is broken", len(migrations), len(files), engine)
	}
	return engine
}

// TestOnlyTheEngineNamesItsTables: outside queues, migrations and the
// bench, no SQL file and no SQL in a Go string names a table of the engine
// after FROM, JOIN, UPDATE, INTO, TABLE or LOCK. A statement there would be
// a second definition of an engine fact (when a worker is alive, how old
// the outbox backlog is) that drifts from the engine's own; call the
// queues function that owns it instead.
func TestOnlyTheEngineNamesItsTables(t *testing.T) {
	root, _ := filepath.Abs("../..")
	engine := engineTables(t, root)
	found := map[string]bool{}
	report := func(path, what, sql string) {
		for _, name := range tablesNamed(sql) {
			if engine[name] {
				rel, _ := filepath.Rel(root, path)
				found[rel+": "+what+" names "+name] = true
			}
		}
	}
	scanned := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules" || d.Name() == "var" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			for _, own := range ownsEngineSQL {
				if rel == own {
					return filepath.SkipDir
				}
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".sql"):
			scanned++
			report(path, "the statement", read(t, path))
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			scanned++
			for _, s := range goStrings(t, path) {
				if looksLikeSQL.MatchString(s.text) {
					report(path, "the string at line "+strconv.Itoa(s.line), s.text)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk is broken", scanned)
	}
	for _, f := range slices.Sorted(maps.Keys(found)) {
		t.Errorf("%s: only queues runs SQL on the engine's tables; call its function instead", f)
	}
}

// TestEngineTableNamesAreFound: the parser sees a table behind each
// keyword, quoted or schema-qualified, and not in comments or literals.
func TestEngineTableNamesAreFound(t *testing.T) {
	for sql, want := range map[string][]string{
		"SELECT count(*) FROM public.jobs AS j JOIN workers w ON true": {"jobs", "workers"},
		`UPDATE "schedules" SET x = 1`:                                 {"schedules"},
		"INSERT INTO queue_settings (queue) VALUES ($1)":               {"queue_settings"},
		"LOCK TABLE ONLY outbox_events IN SHARE MODE":                  {"outbox_events"},
		"SELECT 1 -- reads from jobs\n/* from workers */":              nil,
		"SELECT extract(epoch FROM now()), 'from jobs'":                {"now"},
	} {
		if got := tablesNamed(sql); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("tablesNamed(%q) = %v, want %v", sql, got, want)
		}
	}
}

// tablesNamed lists the relations sql names after FROM, JOIN, UPDATE,
// INTO, TABLE or LOCK, comments and string literals left out.
func tablesNamed(sql string) []string {
	var out []string
	for _, m := range namedTable.FindAllStringSubmatch(stripSQL(sql), -1) {
		out = append(out, relName(m[1]))
	}
	return out
}

// stripSQL removes comments and string literals.
func stripSQL(sql string) string {
	sql = blockComment.ReplaceAllString(sql, " ")
	sql = lineComment.ReplaceAllString(sql, " ")
	return quotedLiteral.ReplaceAllString(sql, "''")
}

// relName is a relation's name without quotes or schema.
func relName(s string) string {
	s = strings.ToLower(strings.ReplaceAll(s, `"`, ""))
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

type goString struct {
	line int
	text string
}

// goStrings are the string literals of a Go file, unquoted.
func goStrings(t *testing.T, path string) []goString {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []goString
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, goString{fset.Position(lit.Pos()).Line, s})
			}
		}
		return true
	})
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
