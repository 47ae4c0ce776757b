package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/pgconsole/console/queues"
)

// registerDemoKinds installs the job kinds the demo workload and the drills
// enqueue. They belong to this binary, not to the engine library:
//
//   - noop: succeeds at once.
//   - sleep {"ms": N}: waits N milliseconds (or until cancelled).
//   - fail {"times": N}: fails the first N attempts, then succeeds; -1
//     always fails.
//   - panic: panics (a failed attempt of class "panic").
//   - sql {"statement": "..."}: runs one statement in the job's tagged
//     session (queues.JobConn), to reproduce lock incidents, in one
//     transaction with the job's completion (queues.JobCompleteTx) and
//     bounded by the lease (statement_timeout at the lease's remaining
//     time: a statement longer than the lease less a tenth fails). Only with
//     allowSQL: it runs whatever SQL a payload carries, so it is for the
//     demo and drills, never a production worker unless an operator
//     enabled it on purpose.
func registerDemoKinds(c *queues.Client, allowSQL bool) {
	c.Handle("noop", func(context.Context, *queues.Job) error { return nil })
	c.Handle("sleep", demoSleep)
	c.Handle("fail", demoFail)
	c.Handle("panic", func(_ context.Context, j *queues.Job) error {
		panic(fmt.Sprintf("demo panic kind, job %d", j.ID))
	})
	if allowSQL {
		c.Handle("sql", demoSQL)
	}
}

// decodePayload reads a job's JSON payload into v; an empty payload leaves
// v as is, a malformed one is a permanent failure (retrying cannot fix it).
func decodePayload(j *queues.Job, v any) error {
	if len(j.Payload) == 0 {
		return nil
	}
	if err := json.Unmarshal(j.Payload, v); err != nil {
		return queues.Permanent(fmt.Errorf("decode %s payload: %w", j.Kind, err))
	}
	return nil
}

// maxSleepMS is the longest sleep the sleep kind accepts, in milliseconds.
const maxSleepMS = int64(math.MaxInt64 / int64(time.Millisecond))

func demoSleep(ctx context.Context, j *queues.Job) error {
	var p struct {
		MS int64 `json:"ms"`
	}
	if err := decodePayload(j, &p); err != nil {
		return err
	}
	// Beyond maxSleepMS the product overflows int64 nanoseconds (and wraps
	// to a sleep that ends at once); a negative sleep means nothing.
	if p.MS < 0 || p.MS > maxSleepMS {
		return queues.Permanent(fmt.Errorf("sleep: ms %d out of range: use 0 to %d (about 106 days)", p.MS, int64(maxSleepMS)))
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

// errDemoFail is the error of the fail kind (one error class for all).
var errDemoFail = errors.New("demo fail kind")

func demoFail(_ context.Context, j *queues.Job) error {
	var p struct {
		Times int `json:"times"`
	}
	if err := decodePayload(j, &p); err != nil {
		return err
	}
	if p.Times < 0 || j.Attempts <= p.Times {
		return fmt.Errorf("attempt %d of job %d: %w", j.Attempts, j.ID, errDemoFail)
	}
	return nil
}

func demoSQL(ctx context.Context, j *queues.Job) error {
	var p struct {
		Statement string `json:"statement"`
	}
	if err := decodePayload(j, &p); err != nil {
		return err
	}
	if p.Statement == "" {
		return queues.Permanent(errors.New("sql kind: empty statement"))
	}
	deadline, ok := queues.LeaseDeadline(ctx)
	if !ok {
		return errors.New("sql kind: not running as a job (no lease)")
	}
	conn, err := queues.JobConn(ctx)
	if err != nil {
		return err
	}
	// Behind a transaction pooler the job's session is a transaction
	// already (JobConn); elsewhere the job opens its own. Either way a
	// failure leaves it open and the engine rolls it back when the handler
	// returns its error.
	if conn.PgConn().TxStatus() == 'I' {
		if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
			return fmt.Errorf("sql kind: begin: %w", err)
		}
	}
	// The statement, and the transaction's idle moments, end on the server
	// before the lease does, even when this worker can no longer reach it.
	left := time.Until(deadline).Milliseconds()
	if left < 1 {
		return fmt.Errorf("sql kind: %w", queues.ErrLeaseDeadline)
	}
	if _, err := conn.Exec(ctx, `SELECT set_config('statement_timeout', $1, true),
		set_config('idle_in_transaction_session_timeout', $1, true)`, strconv.FormatInt(left, 10)); err != nil {
		return fmt.Errorf("sql kind: bound the statement by the lease (%d ms left): %w", left, err)
	}
	if _, err := conn.Exec(ctx, p.Statement); err != nil {
		return fmt.Errorf("sql kind: %w", err)
	}
	if err := queues.JobCompleteTx(ctx, conn, j); err != nil {
		return fmt.Errorf("sql kind: %w", err)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("sql kind: commit: %w", err)
	}
	return nil
}
