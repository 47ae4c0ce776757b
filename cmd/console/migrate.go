package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgconsole/console/migrations"
)

func runMigrate(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 {
		return usageError{"migrate needs up or status"}
	}
	sub := args[0]
	if sub != "up" && sub != "status" {
		return usageError{fmt.Sprintf("migrate %s: use up or status", sub)}
	}
	fs := flagSet("migrate")
	def := migrations.DefaultOptions
	lockTimeout := fs.Duration("lock-timeout", def.LockTimeout, "how long a migration waits for a lock before it is rolled back and tried again")
	attempts := fs.Int("attempts", def.Attempts, "tries of a migration that timed out waiting for a lock")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *lockTimeout < 0 {
		return usageError{fmt.Sprintf("--lock-timeout %s: give a wait of 0 (no limit) or more, like 2s", *lockTimeout)}
	}
	if *attempts < 1 || *attempts > 100 {
		return usageError{fmt.Sprintf("--attempts %d: give 1 to 100", *attempts)}
	}
	raw, err := requiredDatabaseURL(getenv, "migrate needs DATABASE_URL (or DATABASE_URL_FILE); the embedded default migrates by itself")
	if err != nil {
		return err
	}
	pooler, err := envPooler(getenv)
	if err != nil {
		return err
	}
	if sub == "up" && pooler.transaction() {
		// Migrations take the direct URL: see migrationURL.
		if raw, err = pooler.migrationURL(raw); err != nil {
			return err
		}
		pooler = poolerConfig{}
	}
	pool, err := openPool(ctx, raw, "console-migrate", 2, nil, pooler)
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var st migrations.Status
	if sub == "up" {
		st, err = migrations.UpWith(ctx, conn.Conn(), migrations.Options{LockTimeout: *lockTimeout, Attempts: *attempts, Pause: def.Pause})
		if err != nil {
			return err
		}
		if st.Current > st.Latest {
			fmt.Fprintf(stdout, "schema is at version %d, newer than this console's %d; every migration since is an expand, so this console runs against it (nothing to apply)\n", st.Current, st.Latest)
			return nil
		}
		fmt.Fprintf(stdout, "schema is at version %d of %d (up to date)\n", st.Current, st.Latest)
		return nil
	}
	st, err = migrations.Check(ctx, conn.Conn())
	if st.Latest == 0 {
		return err
	}
	fmt.Fprintf(stdout, "schema version %d of %d; this console runs against %d to %d", st.Current, st.Latest, st.Min, st.Latest)
	switch {
	case err != nil:
		fmt.Fprintf(stdout, "\n%s\n", err)
	case st.Current > st.Latest:
		fmt.Fprintf(stdout, ", and against %d: every migration since %d is an expand\n", st.Current, st.Latest)
	default:
		fmt.Fprintln(stdout)
	}
	if st.MigratedAt != nil {
		fmt.Fprintf(stdout, "last migrated at %s\n", st.MigratedAt.UTC().Format(time.RFC3339))
	}
	if len(st.Pending) > 0 {
		fmt.Fprintf(stdout, "pending: %s\nrun `console migrate up` to apply them\n", strings.Join(st.Pending, ", "))
	}
	return nil
}

// schemaWords says where the schema is on a process's start line, and why
// a schema newer than the binary is fine.
func schemaWords(st migrations.Status) string {
	if st.Current > st.Latest {
		return fmt.Sprintf("schema at version %d, newer than this console's %d: every migration since is an expand", st.Current, st.Latest)
	}
	return fmt.Sprintf("schema at version %d", st.Current)
}
