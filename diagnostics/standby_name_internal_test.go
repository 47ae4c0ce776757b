package diagnostics

import (
	"strings"
	"testing"
)

// Standbys attached by URL or key=value string are named by host, port and
// database, never by password, and two never share a name.
func TestStandbyNamesAreDistinct(t *testing.T) {
	var taken []standbyPool
	var names []string
	for _, dsn := range []string{
		"postgres://u:secret@db-a:5433/app",
		"host=db-b port=5434 dbname=app user=u password=secret",
		"postgres://u:secret@db-a:5433/app",
		"host=/var/run/postgresql port=5432 user=u password=secret",
	} {
		n := standbyName(dsn, taken)
		if strings.Contains(n, "secret") {
			t.Fatalf("the name %q shows the password", n)
		}
		taken = append(taken, standbyPool{name: n})
		names = append(names, n)
	}
	want := []string{"db-a:5433/app", "db-b:5434/app", "db-a:5433/app #2", "/var/run/postgresql:5432"}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names = %q, want %q", names, want)
		}
	}
}
