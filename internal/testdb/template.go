package testdb

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Template is a database a package's tests start from, built once per test
// binary and cloned for each test that asks for one (URL), as URL's
// databases are clones of the migrated template: for a fixture too costly
// to make in every test (tens of thousands of rows, vacuumed and analysed:
// a clone copies the rows, the statistics and the visibility map, so the
// planner sees the same tables), or setup every test of a package repeats
// (the console's roles granted on the schema). Declare one as a package
// variable:
//
//	var scale = testdb.Template{Name: "scale", Build: func(tb testing.TB, url string) { ... }}
//	pool := testdb.Pool(t, scale.URL(t))
type Template struct {
	// Name names the template in errors and in the cost report.
	Name string
	// Owned starts the template from OwnedURL's (its schema owned by
	// OwnerRole) instead of URL's; its clones are owned by OwnerRole too.
	Owned bool
	// Build fills the template through url, a superuser's URL of it, in
	// the first test that asks for a clone. What it registers with
	// tb.Cleanup runs as soon as it returns, and a session it leaves on the
	// template is terminated: a database with sessions cannot be cloned.
	// What it changes outside the database (roles) stays for the binary.
	// Time-relative rows (now() - interval …) age from the build on: the
	// binary's first test to the last is a minute at most.
	Build func(tb testing.TB, url string)

	mu     sync.Mutex
	db     string
	failed bool
}

var (
	templatesMu sync.Mutex
	templates   []string // databases of the Templates built, dropped by teardown off our own server
)

// URL creates a fresh clone of the template for this test and returns its
// URL (a superuser's); the clone is dropped at cleanup. The first call of
// the binary builds the template; a test that asks for it after its build
// failed fails at once.
func (tp *Template) URL(t testing.TB) string {
	t.Helper()
	ensure(t)
	db := tp.build(t)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), counter.Add(1))
	options := "TEMPLATE " + pgx.Identifier{db}.Sanitize()
	if tp.Owned {
		options = "OWNER " + OwnerRole + " " + options
	}
	url := createDatabase(t, name, options, tp.Name+" test database")
	// CREATE DATABASE leaves the clone's own rights at the default
	// (PUBLIC may connect): the template's, as Build granted them, are
	// copied so that the clone is the template in that too.
	admin, err := adminPool()
	if err == nil {
		_, err = admin.Exec(context.Background(),
			"UPDATE pg_database SET datacl = (SELECT datacl FROM pg_database WHERE datname = $1) WHERE datname = $2", db, name)
	}
	if err != nil {
		t.Fatalf("copy the %s template's database rights to its clone: %v", tp.Name, err)
	}
	return url
}

// build returns the template's database, building it first when this is
// the binary's first call.
func (tp *Template) build(t testing.TB) string {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.db != "" {
		return tp.db
	}
	if tp.failed {
		t.Fatalf("the %s template failed to build in an earlier test of this binary", tp.Name)
	}
	tp.failed = true // until Build returns: a t.Fatal in it ends this function here
	base, options := template, ""
	if tp.Owned {
		ownedOnce.Do(setupOwned)
		if ownedErr != nil {
			t.Fatalf("owned test database unavailable: %v", ownedErr)
		}
		base, options = ownedTemplate, "OWNER "+OwnerRole+" "
	}
	db := fmt.Sprintf("tpl_%d_%d", os.Getpid(), counter.Add(1))
	url := createDatabase(&keepAlive{TB: t, name: "(template " + tp.Name + ")"}, db,
		options+"TEMPLATE "+pgx.Identifier{base}.Sanitize(), tp.Name+" template database")
	templatesMu.Lock()
	templates = append(templates, db)
	templatesMu.Unlock()
	b := &buildTB{TB: t}
	func() {
		defer b.cleanup()
		tp.Build(b, url)
	}()
	admin, err := adminPool()
	if err == nil {
		_, err = admin.Exec(context.Background(),
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db)
	}
	if err != nil {
		t.Fatalf("end the sessions left on the %s template: %v", tp.Name, err)
	}
	tp.db, tp.failed = db, false
	return db
}

// buildTB is the test a Template's Build runs in: its cleanups run when
// Build returns, not when the test ends.
type buildTB struct {
	testing.TB
	cleanups []func()
}

func (b *buildTB) Cleanup(f func()) { b.cleanups = append(b.cleanups, f) }

func (b *buildTB) cleanup() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}
