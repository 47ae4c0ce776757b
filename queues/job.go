package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgconsole/console/internal/sqlset"
)

// DBTX is what the package's query functions need: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx all satisfy it, so functions ending in Tx run inside
// the caller's transaction and commit or roll back with it.
type DBTX = sqlset.DBTX

// Job statuses. A job is ready (waiting, possibly until available_at),
// running (leased to a worker until lease_until), done, or dead (failed for
// good, cancelled, or out of attempts: a dead letter).
const (
	StatusReady   = "ready"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusDead    = "dead"
)

// Job is one row of the jobs table.
type Job struct {
	ID          int64           `db:"id"`
	Queue       string          `db:"queue"`
	Kind        string          `db:"kind"`
	Payload     json.RawMessage `db:"payload"`
	Status      string          `db:"status"`
	Priority    int16           `db:"priority"`
	AvailableAt time.Time       `db:"available_at"`
	LeaseOwner  *string         `db:"lease_owner"`
	LeaseUntil  *time.Time      `db:"lease_until"`
	// LeaseGeneration is the fencing token: every claim bumps it, and ack,
	// fail, renew and release must present the generation they claimed.
	LeaseGeneration int64   `db:"lease_generation"`
	Attempts        int     `db:"attempts"`
	MaxAttempts     int     `db:"max_attempts"`
	LastError       *string `db:"last_error"`
	// ErrorClass is a short fingerprint of the last error (see ErrorClass).
	ErrorClass *string `db:"error_class"`
	// Errors is the bounded per-attempt history: a JSON array of
	// {"attempt", "at", "error", "class"} objects, oldest first.
	Errors     json.RawMessage `db:"errors"`
	DedupeKey  *string         `db:"dedupe_key"`
	TenantID   *string         `db:"tenant_id"`
	CreatedAt  time.Time       `db:"created_at"`
	StartedAt  *time.Time      `db:"started_at"`
	FinishedAt *time.Time      `db:"finished_at"`
}

// scanJob reads a row of the job columns in Job's field order (the
// claim's RETURNING list) by position: the claim is the engine's hottest
// decode. Matching 20 columns by name per row, json.Unmarshal into
// json.RawMessage (pgx's plan for it) and reflection for the nullable
// pointers all showed in its profile, so jsonb is taken as raw bytes and
// the nullable columns through pgtype values.
func scanJob(row pgx.CollectableRow) (Job, error) {
	var j Job
	var payload, errs []byte
	var owner, lastErr, class, dedupe, tenant pgtype.Text
	var leaseUntil, started, finished pgtype.Timestamptz
	err := row.Scan(&j.ID, &j.Queue, &j.Kind, &payload, &j.Status, &j.Priority, &j.AvailableAt,
		&owner, &leaseUntil, &j.LeaseGeneration, &j.Attempts, &j.MaxAttempts,
		&lastErr, &class, &errs, &dedupe, &tenant,
		&j.CreatedAt, &started, &finished)
	j.Payload, j.Errors = payload, errs
	j.LeaseOwner, j.LastError, j.ErrorClass = textPtr(owner), textPtr(lastErr), textPtr(class)
	j.DedupeKey, j.TenantID = textPtr(dedupe), textPtr(tenant)
	j.LeaseUntil, j.StartedAt, j.FinishedAt = timePtr(leaseUntil), timePtr(started), timePtr(finished)
	return j, err
}

func textPtr(t pgtype.Text) *string {
	if !t.Valid {
		return nil
	}
	return &t.String
}

func timePtr(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// AttemptError is one entry of Job.Errors.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
	Class   string    `json:"class"`
}

// AttemptErrors decodes the job's per-attempt error history.
func (j *Job) AttemptErrors() ([]AttemptError, error) {
	var out []AttemptError
	if len(j.Errors) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(j.Errors, &out); err != nil {
		return nil, fmt.Errorf("decode errors of job %d: %w", j.ID, err)
	}
	return out, nil
}

// JobGet returns one job by id, or ErrNotFound.
func JobGet(ctx context.Context, db DBTX, id int64) (*Job, error) {
	return queryJob(ctx, db, "job_get", id)
}

// queryJob runs a statement returning at most one job row.
func queryJob(ctx context.Context, db DBTX, name string, args ...any) (*Job, error) {
	rows, err := db.Query(ctx, sqlText(name), args...)
	if err != nil {
		return nil, err
	}
	j, err := pgx.CollectExactlyOneRow(rows, pgx.RowToAddrOfStructByName[Job])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return j, err
}

// JobListParams filters JobList. Zero values mean "any"; Limit defaults to
// 50 and is capped at 1000. BeforeID continues a page: pass the smallest id
// of the previous page.
type JobListParams struct {
	Queue, Kind, Status, ErrorClass string
	CreatedFrom, CreatedUntil       *time.Time
	BeforeID                        int64
	Limit                           int
}

// JobList returns jobs newest first (by id), filtered and keyset-paginated,
// with only the columns a list shows: ID, Queue, Kind, Status, AvailableAt,
// Attempts, MaxAttempts, ErrorClass, CreatedAt and LastError (cut to 1,000
// characters). The rest (Payload, Errors, the lease) stay zero; JobGet reads
// one job whole.
func JobList(ctx context.Context, db DBTX, p JobListParams) ([]Job, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	p.Limit = min(p.Limit, 1000)
	rows, err := db.Query(ctx, sqlText("job_list"), p.Queue, p.Kind, p.Status, p.ErrorClass,
		p.CreatedFrom, p.CreatedUntil, p.BeforeID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[Job])
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}
