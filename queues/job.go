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

// jobDecoder reads the rows of a claim (JobClaim's RETURNING list) by
// position: the claim is the engine's hottest decode. The claim does not
// send back the columns it set to what its caller passed (queue, status,
// lease owner): the decoder fills them in. Matching columns by name per
// row, json.Unmarshal into json.RawMessage (pgx's plan for it) and
// reflection for the nullable pointers all showed in its profile, so jsonb
// is taken as raw bytes and the nullable columns through pgtype values. The
// scan targets live in the decoder and are reused for every row (passed to
// Scan, a row's own locals would each be a heap allocation per row), and
// the kind, which repeats from row to row, is interned: a claim of 1,000
// jobs of one kind allocates it once. What a job points to (lease owner,
// lease and start times) is carved from slabs of one allocation per
// decoder, so no two jobs share a pointer. Allocated per row: the payload
// and the error history, which the handler owns.
type jobDecoder struct {
	j                              Job
	queue, owner                   string
	kind                           internedText
	payload, errs                  []byte
	lastErr, class, dedupe, tenant pgtype.Text
	leaseUntil, started, finished  pgtype.Timestamptz
	dest                           []any
	owners                         []string
	times                          []time.Time
}

// maxInterned bounds the strings one decoder interns (distinct kinds in a
// claim, say); past it each value is allocated as pgx would.
const maxInterned = 64

// newJobDecoder decodes up to rows rows of a claim of queue by owner.
func newJobDecoder(rows int, queue, owner string) *jobDecoder {
	d := &jobDecoder{queue: queue, owner: owner,
		owners: make([]string, 0, rows), times: make([]time.Time, 0, 2*rows)}
	d.kind.strings = make(map[string]string, 4)
	d.dest = []any{&d.j.ID, &d.kind, &d.payload, &d.j.Priority, &d.j.AvailableAt,
		&d.leaseUntil, &d.j.LeaseGeneration, &d.j.Attempts, &d.j.MaxAttempts,
		&d.lastErr, &d.class, &d.errs, &d.dedupe, &d.tenant,
		&d.j.CreatedAt, &d.started, &d.finished}
	return d
}

// scan reads one row into a new Job.
func (d *jobDecoder) scan(row pgx.CollectableRow) (Job, error) {
	d.j = Job{}
	d.payload, d.errs = nil, nil
	if err := row.Scan(d.dest...); err != nil {
		return Job{}, err
	}
	j := d.j
	j.Queue, j.Kind, j.Status = d.queue, d.kind.s, StatusRunning
	j.Payload, j.Errors = d.payload, d.errs
	d.owners = append(d.owners, d.owner)
	j.LeaseOwner = &d.owners[len(d.owners)-1]
	j.LastError, j.ErrorClass = textPtr(d.lastErr), textPtr(d.class)
	j.DedupeKey, j.TenantID = textPtr(d.dedupe), textPtr(d.tenant)
	j.LeaseUntil, j.StartedAt, j.FinishedAt = d.timePtr(d.leaseUntil), d.timePtr(d.started), d.timePtr(d.finished)
	return j, nil
}

// timePtr points into the decoder's slab of times (a new one when it is
// full: earlier pointers keep the old one alive).
func (d *jobDecoder) timePtr(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	d.times = append(d.times, t.Time)
	return &d.times[len(d.times)-1]
}

// internedText is a text scan target that returns the same string for the
// same bytes, up to maxInterned distinct values per map. NULL leaves valid
// false and s empty.
type internedText struct {
	s       string
	valid   bool
	strings map[string]string
}

// ScanBytes implements pgtype.BytesScanner; src is only valid during the call.
func (t *internedText) ScanBytes(src []byte) error {
	t.valid = src != nil
	if src == nil {
		t.s = ""
		return nil
	}
	if s, ok := t.strings[string(src)]; ok { // no allocation for the lookup
		t.s = s
		return nil
	}
	t.s = string(src)
	if len(t.strings) < maxInterned {
		t.strings[t.s] = t.s
	}
	return nil
}

func textPtr(t pgtype.Text) *string {
	if !t.Valid {
		return nil
	}
	s := t.String // a copy: taking &t.String would move every t to the heap, NULL or not
	return &s
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
// Attempts, MaxAttempts, ErrorClass, CreatedAt, StartedAt, FinishedAt and
// LastError (cut to 1,000 characters). The rest (Payload, Errors, the lease) stay zero; JobGet reads
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

// JobListUnfinishedParams filters JobListUnfinished. Running, Due and
// Scheduled choose the states listed (a due job is ready with its
// available_at passed, a scheduled one is ready for later); none set lists
// nothing. The other filters are JobListParams'; AfterID continues a page:
// pass the largest id of the previous page.
type JobListUnfinishedParams struct {
	Queue, Kind, ErrorClass   string
	CreatedFrom, CreatedUntil *time.Time
	Running, Due, Scheduled   bool
	AfterID                   int64
	Limit                     int
}

// JobListUnfinished returns running and ready jobs oldest first (by id), so
// the job that has run or waited longest leads, filtered and
// keyset-paginated, with JobList's columns plus StartedAt and LeaseUntil.
// It reads only the partial indexes of running and ready jobs, never done
// or dead rows.
func JobListUnfinished(ctx context.Context, db DBTX, p JobListUnfinishedParams) ([]Job, error) {
	if p.Limit <= 0 {
		p.Limit = 50
	}
	p.Limit = min(p.Limit, 1000)
	rows, err := db.Query(ctx, sqlText("job_list_unfinished"), p.Queue, p.Kind, p.ErrorClass,
		p.CreatedFrom, p.CreatedUntil, p.AfterID, p.Limit, p.Running, p.Due, p.Scheduled)
	if err != nil {
		return nil, fmt.Errorf("list unfinished jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByNameLax[Job])
	if err != nil {
		return nil, fmt.Errorf("list unfinished jobs: %w", err)
	}
	return jobs, nil
}

// JobScheduledCount counts the ready jobs whose available_at is still
// ahead (a retry's backoff, a run-at) in queue ("" for every queue),
// stopping at limit, so a page can show the count of a huge backlog at a
// bounded cost.
func JobScheduledCount(ctx context.Context, db DBTX, queue string, limit int) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, sqlText("job_scheduled_count"), queue, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("count scheduled jobs: %w", err)
	}
	return n, nil
}
