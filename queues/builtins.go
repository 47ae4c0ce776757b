package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// BuiltinOpts selects the built-in kinds RegisterBuiltins installs.
type BuiltinOpts struct {
	// AllowSQL registers the "sql" kind, which runs arbitrary SQL from the
	// payload: only for demos and drills, never on a production worker
	// unless an operator explicitly enabled it.
	AllowSQL bool
}

// RegisterBuiltins registers the demo and drill kinds on c:
//
//   - noop: succeeds at once.
//   - sleep {"ms": N}: waits N milliseconds (or until cancelled).
//   - fail {"times": N}: fails the first N attempts, then succeeds; -1
//     always fails.
//   - panic: panics (a failed attempt of class "panic").
//   - sql {"statement": "..."}: runs one statement in the job's tagged
//     session (JobConn), to reproduce lock incidents; only with AllowSQL.
func RegisterBuiltins(c *Client, o BuiltinOpts) {
	c.Handle("noop", func(context.Context, *Job) error { return nil })
	c.Handle("sleep", builtinSleep)
	c.Handle("fail", builtinFail)
	c.Handle("panic", func(_ context.Context, j *Job) error {
		panic(fmt.Sprintf("builtin panic kind, job %d", j.ID))
	})
	if o.AllowSQL {
		c.Handle("sql", builtinSQL)
	}
}

func decode(j *Job, v any) error {
	if len(j.Payload) == 0 {
		return nil
	}
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return Permanent(fmt.Errorf("decode %s payload: %w", j.Kind, err))
	}
	return nil
}

func builtinSleep(ctx context.Context, j *Job) error {
	var p struct {
		MS int64 `json:"ms"`
	}
	if err := decode(j, &p); err != nil {
		return err
	}
	t := time.NewTimer(time.Duration(p.MS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errBuiltinFail is the error of the fail kind (one error class for all).
var errBuiltinFail = errors.New("builtin fail kind")

func builtinFail(_ context.Context, j *Job) error {
	var p struct {
		Times int `json:"times"`
	}
	if err := decode(j, &p); err != nil {
		return err
	}
	if p.Times < 0 || j.Attempts <= p.Times {
		return fmt.Errorf("attempt %d of job %d: %w", j.Attempts, j.ID, errBuiltinFail)
	}
	return nil
}

func builtinSQL(ctx context.Context, j *Job) error {
	var p struct {
		Statement string `json:"statement"`
	}
	if err := decode(j, &p); err != nil {
		return err
	}
	if p.Statement == "" {
		return Permanent(errors.New("sql kind: empty statement"))
	}
	conn, err := JobConn(ctx)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, p.Statement); err != nil {
		return fmt.Errorf("sql kind: %w", err)
	}
	return nil
}
