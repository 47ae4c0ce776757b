package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// writtenTable finds the relation a statement writes or alters.
var writtenTable = regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?|ALTER\s+TABLE|DROP\s+TABLE|LOCK\s+TABLE)\s+(?:ONLY\s+)?(?:IF\s+EXISTS\s+)?("?[a-z_][a-z0-9_."]*)`)

// riverTablesWritten lists the River tables (river_*) sql writes, comments
// and string literals left out.
func riverTablesWritten(sql string) []string {
	var out []string
	for _, m := range writtenTable.FindAllStringSubmatch(stripSQL(sql), -1) {
		if name := relName(m[1]); strings.HasPrefix(name, "river_") {
			out = append(out, name)
		}
	}
	return out
}

// TestNoSQLWritesRiversTables: no SQL file and no SQL in a Go string of the
// module (tests aside) writes, alters or locks a River table. River's
// state machine (attempts, scheduled_at, finalized_at, unique states, its
// notifications) stays right only when its own client changes its rows.
func TestNoSQLWritesRiversTables(t *testing.T) {
	root, _ := filepath.Abs("../..")
	scanned := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "node_modules" || d.Name() == "var" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			// The pressure bench drives River in a scratch database of its
			// own and empties its table between phases.
			if rel, _ := filepath.Rel(root, path); rel == filepath.Join("bench", "river-pressure") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case strings.HasSuffix(path, ".sql"):
			scanned++
			for _, name := range riverTablesWritten(read(t, path)) {
				t.Errorf("%s writes %s: change River's jobs and queues through River's client", rel, name)
			}
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			scanned++
			for _, s := range goStrings(t, path) {
				for _, name := range riverTablesWritten(s.text) {
					t.Errorf("%s: the string at line %s writes %s: change River's jobs and queues through River's client", rel, strconv.Itoa(s.line), name)
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
}

// TestRiverWritesAreFound: the parser sees a write to a River table,
// quoted or schema-qualified, and not a read, a grant or a comment.
func TestRiverWritesAreFound(t *testing.T) {
	for sql, want := range map[string][]string{
		"UPDATE river_job SET state = 'available' WHERE id = $1": {"river_job"},
		`DELETE FROM public."river_queue" WHERE name = $1`:       {"river_queue"},
		"INSERT INTO river_leader (leader_id) VALUES ($1)":       {"river_leader"},
		"TRUNCATE river_job": {"river_job"},
		"SELECT * FROM river_job; GRANT SELECT ON river_job TO x":   nil,
		"SELECT 1 -- UPDATE river_job\n/* DELETE FROM river_job */": nil,
		"UPDATE jobs SET status = 'ready'":                          nil,
	} {
		if got := riverTablesWritten(sql); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("riverTablesWritten(%q) = %v, want %v", sql, got, want)
		}
	}
}
