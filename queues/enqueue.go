package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/internal/sqlset"
)

// NotifyChannel is the LISTEN/NOTIFY channel enqueues signal on, with the
// queue name as payload. It is only a wake-up hint: workers poll anyway.
const NotifyChannel = "console_jobs"

// NotifyInterval is the least time between two wake-up NOTIFYs EnqueueTx
// sends for one queue from one process. A transaction that sent NOTIFY
// takes a cluster-wide lock at commit, held through the commit's WAL flush,
// so notifying on every enqueue serialises the commits of all enqueuers
// (single-row EnqueueTx ran at a tenth of plain INSERT commits at 16
// callers), and so does notifying more often than those commits complete.
// An enqueue on an idle queue always notifies and starts within
// milliseconds. The jobs enqueued within the interval after it are found by
// the workers' busy polling: for a NotifyInterval after a claim that found
// jobs, a worker claims again every BusyRepoll. A job whose transaction
// commits later than that, or whose notifying transaction rolled back,
// waits at most for the poll (ClientConfig.PollInterval).
const NotifyInterval = 100 * time.Millisecond

// BusyRepoll is how often a worker claims while its queue is busy (within
// NotifyInterval of a claim that found jobs).
const BusyRepoll = 10 * time.Millisecond

// lastNotify holds, per queue, when this process last had EnqueueTx notify
// (*atomic.Int64, nanoseconds since notifyEpoch).
var lastNotify sync.Map

var notifyEpoch = time.Now()

// notifyDue reports whether this enqueue should notify: no notification
// for queue was sent from this process within NotifyInterval.
func notifyDue(queue string) bool {
	now := int64(time.Since(notifyEpoch)) + int64(NotifyInterval) // the first is always due
	v, ok := lastNotify.Load(queue)
	if !ok {
		v, _ = lastNotify.LoadOrStore(queue, new(atomic.Int64))
	}
	last := v.(*atomic.Int64)
	prev := last.Load()
	return now-prev >= int64(NotifyInterval) && last.CompareAndSwap(prev, now)
}

// DefaultMaxAttempts is used when EnqueueParams.MaxAttempts is zero; it
// matches the column default in migration 001.
const DefaultMaxAttempts = 8

// EnqueueParams describes one job to enqueue.
type EnqueueParams struct {
	// Queue and Kind are required. Kind selects the handler.
	Queue, Kind string
	// Payload is marshalled to JSON; json.RawMessage and []byte pass through
	// (they must be valid JSON). nil becomes {}.
	Payload any
	// Priority: higher runs first within a queue.
	Priority int16
	// RunAt delays the job; zero means now (the database's clock).
	RunAt time.Time
	// MaxAttempts defaults to DefaultMaxAttempts.
	MaxAttempts int
	// DedupeKey, when set, makes the enqueue a no-op (ErrDuplicate) while an
	// unfinished job of the same queue holds the same key.
	DedupeKey string
	// TenantID is recorded for per-tenant views and fairness.
	TenantID string
}

func (p *EnqueueParams) normalise() ([]byte, error) {
	if p.Queue == "" || p.Kind == "" {
		return nil, errors.New("enqueue: queue and kind are required")
	}
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	var b []byte
	switch v := p.Payload.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		b = v
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("enqueue %s: marshal payload: %w", p.Kind, err)
		}
		return b, nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("enqueue %s: payload is not valid JSON", p.Kind)
	}
	return b, nil
}

func (p *EnqueueParams) runAt() *time.Time {
	if p.RunAt.IsZero() {
		return nil
	}
	return &p.RunAt
}

// insertedJob is a job row plus whether this statement inserted it.
type insertedJob struct {
	Job
	Inserted bool  `db:"inserted"`
	Notified int64 `db:"notified"`
}

// EnqueueTx inserts one job in the caller's transaction (so it commits or
// rolls back with the caller's own writes) and returns it. The wake-up
// NOTIFY is delivered at commit; it is sent at most once per NotifyInterval
// per queue from this process (see NotifyInterval). When the dedupe key is held by an
// unfinished job, it returns that job (when visible) and ErrDuplicate.
func EnqueueTx(ctx context.Context, db DBTX, p EnqueueParams) (*Job, error) {
	payload, err := p.normalise()
	if err != nil {
		return nil, err
	}
	if p.DedupeKey == "" {
		return enqueueNew(ctx, db, p, payload)
	}
	got, err := sqlset.All[insertedJob](ctx, db, sqlText("job_insert"), p.Queue, p.Kind, payload, p.Priority,
		p.runAt(), p.MaxAttempts, p.DedupeKey, p.TenantID, notifyDue(p.Queue))
	if err != nil {
		return nil, fmt.Errorf("enqueue %s on %q: %w", p.Kind, p.Queue, err)
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("enqueue %s on %q key %q: %w", p.Kind, p.Queue, p.DedupeKey, ErrDuplicate)
	}
	if !got[0].Inserted {
		return &got[0].Job, fmt.Errorf("enqueue %s on %q key %q: job %d: %w", p.Kind, p.Queue, p.DedupeKey, got[0].ID, ErrDuplicate)
	}
	return &got[0].Job, nil
}

// enqueueNew is EnqueueTx for a job without a dedupe key: one INSERT that
// returns only what the server chose, the rest of the job filled in here.
func enqueueNew(ctx context.Context, db DBTX, p EnqueueParams, payload []byte) (*Job, error) {
	j := &Job{Queue: p.Queue, Kind: p.Kind, Status: StatusReady, Priority: p.Priority,
		MaxAttempts: p.MaxAttempts, Errors: json.RawMessage("[]")}
	if p.TenantID != "" {
		tenant := p.TenantID
		j.TenantID = &tenant
	}
	var stored []byte // jsonb as raw bytes: pgx would json.Unmarshal into a json.RawMessage
	err := db.QueryRow(ctx, sqlText("job_insert_new"), p.Queue, p.Kind, payload, p.Priority,
		p.runAt(), p.MaxAttempts, p.TenantID, notifyDue(p.Queue)).
		Scan(&j.ID, &stored, &j.AvailableAt, &j.CreatedAt, nil) // nil: the NOTIFY count, only there to run it
	if err != nil {
		return nil, fmt.Errorf("enqueue %s on %q: %w", p.Kind, p.Queue, err)
	}
	j.Payload = stored
	return j, nil
}

// EnqueueManyTx inserts a batch of jobs with one statement in the caller's
// transaction and returns their ids in input order; a job skipped because
// its dedupe key is held by an unfinished job (or by an earlier job of the
// same batch) gets id 0. One NOTIFY per distinct queue, not per job.
func EnqueueManyTx(ctx context.Context, db DBTX, ps []EnqueueParams) ([]int64, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	n := len(ps)
	queues, kinds, keys, tenants := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads := make([]json.RawMessage, n)
	prios := make([]int16, n)
	runAts := make([]*time.Time, n)
	maxes := make([]int32, n)
	for i := range ps {
		p := &ps[i]
		b, err := p.normalise()
		if err != nil {
			return nil, fmt.Errorf("job %d of %d: %w", i, n, err)
		}
		queues[i], kinds[i], keys[i], tenants[i] = p.Queue, p.Kind, p.DedupeKey, p.TenantID
		payloads[i], prios[i], runAts[i], maxes[i] = b, p.Priority, p.runAt(), int32(p.MaxAttempts)
	}
	type inserted struct {
		ID        int64  `db:"id"`
		Queue     string `db:"queue"`
		DedupeKey string `db:"dedupe_key"`
		Notified  int64  `db:"notified"`
	}
	got, err := sqlset.All[inserted](ctx, db, sqlText("job_insert_many"), queues, kinds, payloads, prios, runAts, maxes, keys, tenants)
	if err != nil {
		return nil, fmt.Errorf("enqueue %d jobs: %w", n, err)
	}
	// Inserted rows come back in input order (ids grow in insert order), so
	// the skipped inputs are the ones the next returned row does not match.
	ids := make([]int64, n)
	next := 0
	for i := range ps {
		if next < len(got) && got[next].Queue == ps[i].Queue && got[next].DedupeKey == ps[i].DedupeKey {
			ids[i] = got[next].ID
			next++
		}
	}
	return ids, nil
}

// CopyFromer is what EnqueueCopy needs: a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type CopyFromer interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// EnqueueCopy bulk-inserts jobs with COPY, the fastest path for large
// backfills, then sends one NOTIFY per queue. COPY cannot skip conflicts: a
// dedupe key held by an unfinished job fails the whole call (nothing is
// inserted). On a pool each COPY commits by itself; pass a pgx.Tx to make
// it part of a larger transaction.
func EnqueueCopy(ctx context.Context, db CopyFromer, ps []EnqueueParams) (int64, error) {
	if len(ps) == 0 {
		return 0, nil
	}
	// Rows without RunAt take available_at from the database clock, so
	// they are copied without that column.
	var now, later [][]any
	var queues []string
	for i := range ps {
		p := &ps[i]
		b, err := p.normalise()
		if err != nil {
			return 0, fmt.Errorf("job %d of %d: %w", i, len(ps), err)
		}
		row := []any{p.Queue, p.Kind, b, p.Priority, int32(p.MaxAttempts), nullString(p.DedupeKey), nullString(p.TenantID)}
		if p.RunAt.IsZero() {
			now = append(now, row)
		} else {
			later = append(later, append(row, p.RunAt))
		}
		if !slices.Contains(queues, p.Queue) {
			queues = append(queues, p.Queue)
		}
	}
	cols := []string{"queue", "kind", "payload", "priority", "max_attempts", "dedupe_key", "tenant_id"}
	var total int64
	if len(now) > 0 {
		n, err := db.CopyFrom(ctx, pgx.Identifier{"jobs"}, cols, pgx.CopyFromRows(now))
		total += n
		if err != nil {
			return total, fmt.Errorf("copy %d jobs: %w", len(now), err)
		}
	}
	if len(later) > 0 {
		n, err := db.CopyFrom(ctx, pgx.Identifier{"jobs"}, append(cols, "available_at"), pgx.CopyFromRows(later))
		total += n
		if err != nil {
			return total, fmt.Errorf("copy %d scheduled jobs: %w", len(later), err)
		}
	}
	if _, err := db.Exec(ctx, sqlText("job_notify"), queues); err != nil {
		return total, fmt.Errorf("notify after copy: %w", err)
	}
	return total, nil
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
