package queues

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The operator mutations below run in the caller's transaction: the actions
// package calls them and writes its audit row in the same transaction.

// operatorUpdate runs a single-job operator statement and tells a missing job
// (ErrNotFound) from one in the wrong state (ErrInvalidState).
func operatorUpdate(ctx context.Context, db DBTX, op, name string, id int64) (*Job, error) {
	j, err := queryJob(ctx, db, name, id)
	if errors.Is(err, ErrNotFound) {
		cur, gerr := JobGet(ctx, db, id)
		if gerr != nil {
			return nil, fmt.Errorf("%s job %d: %w", op, id, gerr)
		}
		return cur, fmt.Errorf("%s job %d (status %s): %w", op, id, cur.Status, ErrInvalidState)
	}
	if err != nil {
		return nil, fmt.Errorf("%s job %d: %w", op, id, err)
	}
	return j, nil
}

// JobCancelTx cancels a ready or running job: it becomes dead with
// error_class "cancelled". A running job's lease_generation is bumped, so its
// worker's ack is refused and its next heartbeat cancels the handler's
// context. Other statuses give ErrInvalidState (and the job as it is).
func JobCancelTx(ctx context.Context, db DBTX, id int64) (*Job, error) {
	return operatorUpdate(ctx, db, "cancel", "job_cancel", id)
}

// JobRetryNowTx makes a ready job due now, or puts a dead job back to ready
// now keeping its attempts and errors history (a spent job gets one more
// attempt). Other statuses give ErrInvalidState.
func JobRetryNowTx(ctx context.Context, db DBTX, id int64) (*Job, error) {
	return operatorUpdate(ctx, db, "retry", "job_retry_now", id)
}

// LeaseExpireTx takes a running job's lease away: ready now, attempt kept,
// lease_generation bumped so the old worker can neither ack nor renew. Use
// it when the owner is known dead and waiting for lease expiry is too slow.
func LeaseExpireTx(ctx context.Context, db DBTX, id int64) (*Job, error) {
	return operatorUpdate(ctx, db, "expire lease of", "lease_expire", id)
}

// DeadLetterFilter selects dead jobs. Zero fields mean "any"; Since and
// Until bound finished_at (Until exclusive).
type DeadLetterFilter struct {
	IDs               []int64
	Queue, ErrorClass string
	Since, Until      *time.Time
}

func (f DeadLetterFilter) args() []any {
	ids := f.IDs
	if ids == nil {
		ids = []int64{}
	}
	return []any{ids, f.Queue, f.ErrorClass, f.Since, f.Until}
}

// DeadLetterCount counts the dead jobs matching f.
func DeadLetterCount(ctx context.Context, db DBTX, f DeadLetterFilter) (int64, error) {
	var n int64
	if err := db.QueryRow(ctx, sqlText("dead_letter_count"), f.args()...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// DeadLetterSample returns the newest limit dead jobs matching f.
func DeadLetterSample(ctx context.Context, db DBTX, f DeadLetterFilter, limit int) ([]Job, error) {
	return collectRows[Job](ctx, db, "dead_letter_sample", "sample dead letters", append(f.args(), limit)...)
}

// DeadLetterRequeueTx puts at most limit dead jobs matching f back to ready
// now, oldest first, and returns their ids. resetAttempts gives them a full
// set of attempts again; otherwise each gets one more attempt. The errors
// history is kept. Jobs whose dedupe key is now held by an unfinished job
// are skipped.
func DeadLetterRequeueTx(ctx context.Context, db DBTX, f DeadLetterFilter, limit int, resetAttempts bool) ([]int64, error) {
	return collectIDs(ctx, db, "dead_letter_requeue", "requeue dead letters", append(f.args(), limit, resetAttempts)...)
}

// DeadLetterGroup is the dead jobs of one queue with one error class.
type DeadLetterGroup struct {
	Queue       string    `db:"queue"`
	ErrorClass  string    `db:"error_class"`
	Count       int64     `db:"count"`
	FirstSeen   time.Time `db:"first_seen"`
	LastSeen    time.Time `db:"last_seen"`
	SampleError string    `db:"sample_error"`
	SampleJobID int64     `db:"sample_job_id"`
}

// DeadLetterGroupLimit is how many groups DeadLetterGroups returns at most.
const DeadLetterGroupLimit = 200

// DeadLetterGroups groups dead jobs by queue and error class, largest group
// first, at most DeadLetterGroupLimit groups; queue "" means every queue.
// Counts are exact and read from dead_letter_counts, so the cost follows
// the number of groups, not of dead jobs (DeadLetterTotals gives the total
// beyond the groups shown).
func DeadLetterGroups(ctx context.Context, db DBTX, queue string) ([]DeadLetterGroup, error) {
	return collectRows[DeadLetterGroup](ctx, db, "dead_letter_groups", "group dead letters", queue, DeadLetterGroupLimit)
}
