package testdb

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

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
// not a superuser), migrated as that role, and returns its URL for the
// superuser; AsUser turns it into another role's URL. The database is
// dropped at cleanup. Use it for tests of privileges. It is a clone of a
// template migrated once per test binary, as URL's databases are, so its
// schema objects are OwnerRole's just as if it had migrated them itself.
func OwnedURL(t testing.TB) string {
	t.Helper()
	ensure(t)
	ownedOnce.Do(setupOwned)
	if ownedErr != nil {
		t.Fatalf("owned test database unavailable: %v", ownedErr)
	}
	name := fmt.Sprintf("o_%d_%d", os.Getpid(), counter.Add(1))
	return createDatabase(t, name, "OWNER "+OwnerRole+" TEMPLATE "+pgx.Identifier{ownedTemplate}.Sanitize(),
		"owned test database")
}

var (
	ownedOnce     sync.Once
	ownedErr      error
	ownedTemplate string // the template of OwnedURL's databases, "" until made
)

// setupOwned makes the template of OwnedURL's databases, unless the
// binary's cluster is a copy of the cache, which holds it already.
func setupOwned() {
	if template == cachedTemplate {
		ownedTemplate = cachedOwnedTemplate
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := fmt.Sprintf("console_owned_template_%d", os.Getpid())
	ownedErr = makeOwnedTemplate(ctx, adminURL, name, server != nil)
	if ownedErr == nil {
		ownedTemplate = name
	}
}

// cachedOwnedTemplate is the owned template's name in a cached cluster.
const cachedOwnedTemplate = "console_owned_template"

// makeOwnedTemplate creates OwnerRole when missing and the template of
// OwnedURL's databases, name: owned by OwnerRole, pg_stat_statements
// created by the superuser (required when ours is true), then migrated as
// OwnerRole.
func makeOwnedTemplate(ctx context.Context, adminURL, name string, ours bool) error {
	rolesMu.Lock()
	conn, err := pgx.Connect(ctx, adminURL)
	if err == nil {
		_, err = conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%[1]s') THEN
				CREATE ROLE %[1]s LOGIN NOSUPERUSER NOCREATEROLE;
			END IF; END $$`, OwnerRole))
		if err != nil {
			err = fmt.Errorf("create role %s: %w", OwnerRole, err)
		}
	}
	rolesMu.Unlock()
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize(),
		"CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " OWNER " + OwnerRole + " TEMPLATE template0",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("make the owned template database: %w", err)
		}
	}
	dbURL := withDatabase(adminURL, name)
	sc, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to the owned template database: %w", err)
	}
	defer sc.Close(ctx)
	if _, err := sc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil && ours {
		return fmt.Errorf("create pg_stat_statements: %w", err)
	}
	ownerURL, err := asUser(dbURL, OwnerRole)
	if err != nil {
		return err
	}
	oc, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		return fmt.Errorf("connect as %s: %w", OwnerRole, err)
	}
	defer oc.Close(ctx)
	if _, err := migrations.Up(ctx, oc); err != nil {
		return fmt.Errorf("migrate as %s: %w", OwnerRole, err)
	}
	return nil
}

// AsUser returns raw with its user replaced (the test servers trust every
// local login).
func AsUser(t testing.TB, raw, user string) string {
	t.Helper()
	u, err := asUser(raw, user)
	if err != nil {
		t.Fatalf("parse %s: %v", raw, err)
	}
	return u
}

func asUser(raw, user string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.User = url.User(user)
	return u.String(), nil
}
