package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pgconsole/console/internal/auth"
)

// runOperator handles `console operator add --name N --role R` (the
// password on the first line of stdin; an existing operator's password is
// reset and its sessions end) and `console operator disable --name N`.
func runOperator(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout io.Writer) error {
	const usage = "operator needs: add --name N --role viewer|operator|admin (password on stdin), or disable --name N"
	if len(args) == 0 {
		return usageError{usage}
	}
	switch args[0] {
	case "add":
		return operatorAdd(ctx, args[1:], getenv, stdin, stdout)
	case "disable":
		name, err := applyToNamed(ctx, args[1:], getenv, "operator", "disable", "", auth.OperatorDisable)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "operator %s disabled and signed out; `console operator add --name %s` with a new password enables it again\n", name, name)
		return nil
	}
	return usageError{usage}
}

// applyToNamed runs `console <noun> <verb> --name N`: it parses --name
// (missing, it is a usage error, with hint after it), attaches to the
// database and applies change to N, whose name it returns.
func applyToNamed(ctx context.Context, args []string, getenv env, noun, verb, hint string,
	change func(ctx context.Context, db auth.DBTX, name string) error) (string, error) {
	fs := flagSet(noun + " " + verb)
	name := fs.String("name", "", noun+" name")
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if *name == "" {
		return "", usageError{noun + " " + verb + " needs --name" + hint}
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return "", err
	}
	defer pool.Close()
	return *name, change(ctx, pool, *name)
}

func operatorAdd(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout io.Writer) error {
	fs := flagSet("operator add")
	name := fs.String("name", "", "operator name")
	role := fs.String("role", auth.RoleViewer, "role")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usageError{"operator add needs --name"}
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return err
	}
	defer pool.Close()
	fmt.Fprintf(stdout, "password for %s (at least %d characters, read from stdin): ", *name, auth.MinPasswordLength)
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && line == "" {
		return fmt.Errorf("no password on stdin: pipe it in, e.g. `echo \"$PW\" | console operator add --name %s --role %s`", *name, *role)
	}
	fmt.Fprintln(stdout)
	if _, err := auth.OperatorAdd(ctx, pool, *name, *role, strings.TrimRight(line, "\r\n")); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "operator %s saved with role %s; any session it had is signed out\n", *name, *role)
	return nil
}

// runToken handles `console token create|list|revoke`. create prints the
// token as the last word of its output, so scripts can take it with
// `awk '{print $NF}'`.
func runToken(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	const usage = "token needs: create --name N --role viewer|operator|admin [--expires 720h], list, or revoke --name N"
	if len(args) == 0 {
		return usageError{usage}
	}
	switch args[0] {
	case "create":
		return tokenCreate(ctx, args[1:], getenv, stdout)
	case "list":
		if err := parseFlags(flagSet("token list"), args[1:]); err != nil {
			return err
		}
		pool, err := attach(ctx, getenv, "console-cli")
		if err != nil {
			return err
		}
		defer pool.Close()
		tokens, err := auth.TokenList(ctx, pool)
		if err != nil {
			return err
		}
		now := time.Now()
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tROLE\tSCOPE\tSTATE\tCREATED\tLAST USED\tEXPIRES")
		for _, t := range tokens {
			scope := t.Scope
			if scope == "" {
				scope = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, t.Role, scope, t.State(now), stamp(&t.CreatedAt), stamp(t.LastUsedAt), stamp(t.ExpiresAt))
		}
		return tw.Flush()
	case "revoke":
		name, err := applyToNamed(ctx, args[1:], getenv, "token", "revoke", " (see `console token list`)", auth.TokenRevoke)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %s revoked: it is refused from now on\n", name)
		return nil
	}
	return usageError{usage}
}

func tokenCreate(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	fs := flagSet("token create")
	name := fs.String("name", "", "token name")
	role := fs.String("role", "", "role: viewer, operator or admin (default viewer; operator with --scope alerts)")
	scope := fs.String("scope", "", "alerts: the token may only post Alertmanager notifications to /api/v1/alerts")
	expires := fs.Duration("expires", 0, "lifetime, e.g. 720h; none for a token that does not expire")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usageError{"token create needs --name"}
	}
	if *expires < 0 {
		return usageError{fmt.Sprintf("token create --expires %s: give a positive duration such as 720h, or leave it out", *expires)}
	}
	if *role == "" {
		*role = auth.RoleViewer
		if *scope == auth.ScopeAlerts {
			*role = auth.RoleOperator
		}
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return err
	}
	defer pool.Close()
	secret, err := auth.TokenCreateWith(ctx, pool, *name, *role, auth.TokenOptions{TTL: *expires, Scope: *scope})
	if err != nil {
		return err
	}
	until := "does not expire"
	if *expires > 0 {
		until = "expires " + time.Now().Add(*expires).UTC().Format(time.RFC3339)
	}
	if *scope != "" {
		until += ", scope " + *scope
	}
	fmt.Fprintf(stdout, "token %s (role %s, %s) created; it is shown only now: %s\n", *name, *role, until, secret)
	return nil
}

// stamp formats an optional time for a table; "-" for none.
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
