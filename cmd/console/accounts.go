package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pgconsole/console/internal/auth"
)

// runOperator handles `console operator add --name N --role R`, reading the
// password from the first line of stdin.
func runOperator(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return usageError{"operator needs: add --name N --role viewer|operator|admin (password on stdin)"}
	}
	fs := flagSet("operator add")
	name := fs.String("name", "", "operator name")
	role := fs.String("role", auth.RoleViewer, "role")
	if err := parseFlags(fs, args[1:]); err != nil {
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
	fmt.Fprintf(stdout, "operator %s saved with role %s\n", *name, *role)
	return nil
}

// runToken handles `console token create --name N --role R`. The token is the
// last word of the output, so scripts can take it with `awk '{print $NF}'`.
func runToken(ctx context.Context, args []string, getenv env, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{"token needs: create --name N --role viewer|operator|admin"}
	}
	fs := flagSet("token create")
	name := fs.String("name", "", "token name")
	role := fs.String("role", auth.RoleViewer, "role")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *name == "" {
		return usageError{"token create needs --name"}
	}
	pool, err := attach(ctx, getenv, "console-cli")
	if err != nil {
		return err
	}
	defer pool.Close()
	secret, err := auth.TokenCreate(ctx, pool, *name, *role)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "token %s (role %s) created; it is shown only now: %s\n", *name, *role, secret)
	return nil
}
