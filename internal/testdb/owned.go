package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/migrations"
)

// OwnerRole is the non-superuser role that owns the schema of an OwnedURL
// database, as a production migration role would.
const OwnerRole = "console_owner"

// rolesMu serialises cluster-wide role changes of this test binary: two
// sessions granting the same role membership at once can fail with "tuple
// concurrently updated".
var rolesMu sync.Mutex

// Roles runs script (role setup that touches cluster-wide roles) on the
// database at dbURL, one caller of this binary at a time.
func Roles(t testing.TB, dbURL, script string) {
	t.Helper()
	rolesMu.Lock()
	defer rolesMu.Unlock()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to set up roles: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, script); err != nil {
		t.Fatalf("set up roles: %v", err)
	}
}

// OwnedURL creates a fresh database owned by OwnerRole (a login role that is
// not a superuser), migrates it as that role, and returns its URL for the
// superuser; AsUser turns it into another role's URL. The database is
// dropped at cleanup. It is slower than URL (it migrates): use it for tests
// of privileges.
func OwnedURL(t testing.TB) string {
	t.Helper()
	ensure(t)
	ctx := context.Background()
	Roles(t, adminURL, fmt.Sprintf(`DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%[1]s') THEN
			CREATE ROLE %[1]s LOGIN NOSUPERUSER NOCREATEROLE;
		END IF; END $$`, OwnerRole))
	name := fmt.Sprintf("o_%d_%d", os.Getpid(), counter.Add(1))
	dbURL := createDatabase(t, name, "OWNER "+OwnerRole+" TEMPLATE template0", "owned test database")
	sc, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to the owned test database: %v", err)
	}
	defer sc.Close(ctx)
	if _, err := sc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil && server != nil {
		t.Fatalf("create pg_stat_statements: %v", err)
	}
	oc, err := pgx.Connect(ctx, AsUser(t, dbURL, OwnerRole))
	if err != nil {
		t.Fatalf("connect as %s: %v", OwnerRole, err)
	}
	defer oc.Close(ctx)
	if _, err := migrations.Up(ctx, oc); err != nil {
		t.Fatalf("migrate as %s: %v", OwnerRole, err)
	}
	return dbURL
}

// AsUser returns raw with its user replaced (the test servers trust every
// local login).
func AsUser(t testing.TB, raw, user string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	u.User = url.User(user)
	return u.String()
}
