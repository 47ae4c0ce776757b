package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// runAudit is `console audit verify`: it walks the whole hash chain and
// exits non-zero on a break, naming the first broken event.
func runAudit(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		return usageError{"audit needs: verify"}
	}
	if err := parseFlags(flagSet("audit verify"), args[1:]); err != nil {
		return err
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := audit.VerifyErr(ctx, pool)
	if errors.Is(err, audit.ErrChainBroken) {
		return fmt.Errorf("audit chain BROKEN after checking %d events: %s; treat the audit trail from there on as tampered with", res.Checked, res.Reason)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "audit chain intact: %d events verified\n", res.Checked)
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
