package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// runAudit is `console audit verify`: it walks the whole hash chain,
// recomputing every hash itself, and exits non-zero on a break, naming the
// first broken event. It prints the head (SEQ:HASH) to write down somewhere
// the database's owner cannot reach; --expect-head checks a head written
// down earlier is still in the chain.
func runAudit(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{"audit needs: verify [--expect-head SEQ:HASH] [--keyed-from SEQ]"}
	}
	fs := flagSet("audit verify")
	expect := fs.String("expect-head", "", "SEQ:HASH printed by an earlier verify or an action's log line")
	keyedFrom := fs.Int64("keyed-from", 0, "first seq written with the audit key")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	opts := &audit.VerifyOpts{KeyedFrom: *keyedFrom}
	if *expect != "" {
		h, err := audit.ParseHead(*expect)
		if err != nil {
			return usageError{err.Error()}
		}
		opts.ExpectHead = &h
	}
	if err := loadAuditKey(getenv); err != nil {
		return err
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := audit.VerifyErr(ctx, pool, opts)
	if errors.Is(err, audit.ErrChainBroken) {
		return fmt.Errorf("audit chain BROKEN after checking %d events: %s; treat the audit trail from there on as tampered with", res.Checked, res.Reason)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "audit chain intact: %d events verified (%d keyed, %d unkeyed)\n", res.Checked, res.Keyed, res.Unkeyed)
	if opts.ExpectHead != nil {
		fmt.Fprintf(stdout, "expected head %s found unchanged\n", opts.ExpectHead)
	}
	if res.Checked > 0 {
		fmt.Fprintf(stdout, "head: %s\n", res.Head)
	}
	if res.Unkeyed > 0 {
		fmt.Fprintln(stdout, "note: unkeyed events can be recomputed by whoever can write the table; keep the head above somewhere the database's owner cannot reach, or set CONSOLE_AUDIT_KEY_FILE")
	}
	return nil
}

// loadAuditKey gives the audit package the key in CONSOLE_AUDIT_KEY_FILE
// (the file's contents, surrounding whitespace trimmed) or
// CONSOLE_AUDIT_KEY; neither set means no key.
func loadAuditKey(getenv env) error {
	key := getenv("CONSOLE_AUDIT_KEY")
	if f := getenv("CONSOLE_AUDIT_KEY_FILE"); f != "" {
		if key != "" {
			return usageError{"set CONSOLE_AUDIT_KEY or CONSOLE_AUDIT_KEY_FILE, not both"}
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("CONSOLE_AUDIT_KEY_FILE: %w", err)
		}
		key = strings.TrimSpace(string(b))
		if key == "" {
			return fmt.Errorf("CONSOLE_AUDIT_KEY_FILE %s is empty; put at least %d random bytes in it (head -c 32 /dev/urandom | base64 > %s)", f, audit.MinKeyLength, f)
		}
	}
	if key == "" {
		return audit.SetKey(nil)
	}
	if err := audit.SetKey([]byte(key)); err != nil {
		return fmt.Errorf("audit key: %w", err)
	}
	return nil
}

// runRoles is `console roles sql`: it prints the least-privilege role setup
// for production, to review and run as a superuser.
func runRoles(args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "sql" {
		return usageError{"roles needs: sql"}
	}
	if err := parseFlags(flagSet("roles sql"), args[1:]); err != nil {
		return err
	}
	fmt.Fprint(stdout, actions.RolesSQL())
	return nil
}
