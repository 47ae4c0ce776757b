package river

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgconsole/console/internal/sqlset"
	"github.com/pgconsole/console/queues"
)

// Client changes River's jobs and queues through River's own client
// (github.com/riverqueue/river), in the caller's transaction: River's
// state machine (attempts, scheduled_at, finalized_at), its unique states
// and its notifications to the clients working the queues stay right,
// which SQL of the console's own would not keep. It works no queue and
// inserts nothing.
type Client struct{ c *riverqueue.Client[pgx.Tx] }

// NewClient is a Client for transactions the caller opens; it holds no
// connection of its own.
func NewClient() (*Client, error) {
	c, err := riverqueue.NewClient(riverpgxv5.New(nil), &riverqueue.Config{})
	if err != nil {
		return nil, fmt.Errorf("make River's client: %w", err)
	}
	return &Client{c: c}, nil
}

// JobRetryTx makes job id available now (River's JobRetry): with one
// more attempt when it had used all of them. A running job is left alone.
func (c *Client) JobRetryTx(ctx context.Context, tx pgx.Tx, id int64) (JobState, error) {
	row, err := c.c.JobRetryTx(ctx, tx, id)
	return jobStateOf(row, id, err)
}

// JobCancelTx cancels job id (River's JobCancel): a job waiting to run is
// cancelled now; a running one is marked for cancellation and the client
// running it cancels its context.
func (c *Client) JobCancelTx(ctx context.Context, tx pgx.Tx, id int64) (JobState, error) {
	row, err := c.c.JobCancelTx(ctx, tx, id)
	return jobStateOf(row, id, err)
}

// QueuePauseTx pauses queue (River's QueuePause): clients stop fetching it.
func (c *Client) QueuePauseTx(ctx context.Context, tx pgx.Tx, queue string) error {
	return queueErr(c.c.QueuePauseTx(ctx, tx, queue, nil), "pause", queue)
}

// QueueResumeTx resumes queue (River's QueueResume).
func (c *Client) QueueResumeTx(ctx context.Context, tx pgx.Tx, queue string) error {
	return queueErr(c.c.QueueResumeTx(ctx, tx, queue, nil), "resume", queue)
}

func queueErr(err error, verb, queue string) error {
	if errors.Is(err, rivertype.ErrNotFound) {
		return fmt.Errorf("River has no queue %q: %w", queue, queues.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s River queue %q: %w", verb, queue, err)
	}
	return nil
}

func jobStateOf(row *rivertype.JobRow, id int64, err error) (JobState, error) {
	if errors.Is(err, rivertype.ErrNotFound) {
		return JobState{}, fmt.Errorf("no River job %d: %w", id, queues.ErrNotFound)
	}
	if err != nil {
		return JobState{}, fmt.Errorf("River job %d: %w", id, err)
	}
	return JobState{ID: row.ID, Queue: row.Queue, Kind: row.Kind, State: string(row.State), Attempt: row.Attempt, MaxAttempts: row.MaxAttempts}, nil
}

// JobState is a River job as an action previews it and guards on: where
// it is, its state and attempt, and the class of its last error.
type JobState struct {
	ID          int64  `db:"id" json:"id"`
	Queue       string `db:"queue" json:"queue"`
	Kind        string `db:"kind" json:"kind"`
	State       string `db:"state" json:"state"`
	Attempt     int    `db:"attempt" json:"attempt"`
	MaxAttempts int    `db:"max_attempts" json:"max_attempts"`
	LastError   string `db:"last_error" json:"last_error,omitempty"`
	Panicked    bool   `db:"last_panicked" json:"-"`
	ErrorClass  string `db:"-" json:"error_class,omitempty"`
}

func classed(rows []JobState) []JobState {
	for i := range rows {
		if rows[i].LastError != "" || rows[i].Panicked {
			rows[i].ErrorClass = ErrorClass(rows[i].LastError, rows[i].Panicked)
		}
	}
	return rows
}

// JobStates reads the River jobs of ids, by id; a job that does not exist
// is left out.
func JobStates(ctx context.Context, db sqlset.DBTX, ids []int64) ([]JobState, error) {
	rows, err := collectRows[JobState](ctx, db, "job_states", "read River jobs", ids)
	return classed(rows), err
}

// DiscardedMatch reads at most limit of the newest discarded River jobs of
// queue and kind ("" for any) whose last error is of class errorClass (""
// for any), newest first; limit bounds the read before the class filter.
func DiscardedMatch(ctx context.Context, db sqlset.DBTX, queue, kind, errorClass string, limit int) ([]JobState, error) {
	rows, err := collectRows[JobState](ctx, db, "discarded_match", "read discarded River jobs", queue, kind, limit)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range classed(rows) {
		if errorClass == "" || r.ErrorClass == errorClass {
			out = append(out, r)
		}
	}
	return out, nil
}

// QueueState is a River queue as an action previews it: whether it is
// paused and how many jobs are available.
type QueueState struct {
	Name      string     `db:"name" json:"name"`
	PausedAt  *time.Time `db:"paused_at" json:"paused_at,omitempty"`
	Available int64      `db:"available" json:"available"`
}

// QueueGet reads River queue name; queues.ErrNotFound when River never
// recorded it (no client has worked it).
func QueueGet(ctx context.Context, db sqlset.DBTX, name string) (QueueState, error) {
	q, err := sqlset.One[QueueState](ctx, db, sqlText("queue_get"), name)
	if errors.Is(err, pgx.ErrNoRows) {
		return QueueState{}, fmt.Errorf("River has no queue %q (a queue is recorded once a client works it): %w", name, queues.ErrNotFound)
	}
	if err != nil {
		return QueueState{}, fmt.Errorf("read River queue %q: %w", name, err)
	}
	return q, nil
}
