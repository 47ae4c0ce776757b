package queues

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The functions in this file are the engine's fenced state machine, exported
// so that tools (and the bench's SQL floor) can drive it without a Client.
// Every transition out of running names (owner, generation) and fails with
// ErrLeaseLost when the job is no longer held that way.

// JobClaimParams are the arguments of JobClaim.
type JobClaimParams struct {
	Queue string
	Limit int
	Owner string
	Lease time.Duration
	// Throttled makes the claim take the queue's claim lock first, which
	// makes a max_workers limit exact under concurrent claimers. db must
	// then support SendBatch (a pool, conn or tx).
	Throttled bool
	// After resumes the pick after the key of the last job this claimer
	// took (see NextClaimKey) instead of at the head of the queue's ready
	// index. Nil starts from the head. A job that became ready with a key
	// behind the cursor is only taken by a claim from the head: claimers
	// must restart from the head now and then (the Client does after a
	// short claim while the head is cheap, and at least once a second).
	After *ClaimKey
	// Fair shares the claim between the queue's tenants and enforces their
	// tenant_limits (JobClaimFair's statement); After is then ignored.
	Fair bool
	// TenantAfter is the tenant a fair claim starts after ("" from the
	// first): the last tenant the previous claim served (see NextTenant), so
	// that claims go round the tenants when one claim cannot serve them all.
	TenantAfter string
}

// ClaimKey is a ready job's position in claim order: priority descending,
// then available_at, then id.
type ClaimKey struct {
	Priority    int16
	AvailableAt time.Time
	ID          int64
}

// before reports whether k comes before o in claim order.
func (k ClaimKey) before(o ClaimKey) bool {
	switch {
	case k.Priority != o.Priority:
		return k.Priority > o.Priority
	case !k.AvailableAt.Equal(o.AvailableAt):
		return k.AvailableAt.Before(o.AvailableAt)
	default:
		return k.ID < o.ID
	}
}

// NextClaimKey is the cursor after a claim that started at prev and took
// jobs: the key of the last of them in claim order, or prev when that is
// further on (claims that ran side by side finish in any order).
func NextClaimKey(prev *ClaimKey, jobs []Job) *ClaimKey {
	var last ClaimKey
	found := false
	for i := range jobs {
		k := ClaimKey{Priority: jobs[i].Priority, AvailableAt: jobs[i].AvailableAt, ID: jobs[i].ID}
		if !found || last.before(k) {
			last, found = k, true
		}
	}
	if !found || (prev != nil && !prev.before(last)) {
		return prev
	}
	return &last
}

// NextTenant is the tenant cursor after a fair claim that started after
// prev and took jobs: the last tenant it served in visit order (tenants
// after prev, then from the first again), or prev when it served none.
func NextTenant(prev string, jobs []Job) string {
	var after, wrapped string
	for i := range jobs {
		t := jobs[i].TenantID
		switch {
		case t == nil:
		case *t > prev:
			after = max(after, *t)
		default:
			wrapped = max(wrapped, *t)
		}
	}
	switch {
	case wrapped != "":
		return wrapped
	case after != "":
		return after
	}
	return prev
}

// Batcher is implemented by pools, conns and transactions.
type Batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// JobClaim leases up to p.Limit due jobs of p.Queue to p.Owner for p.Lease,
// bumping attempts and lease_generation. queue_settings caps the claim: none
// while paused, and never beyond max_workers running jobs in the queue
// across the fleet (exact when Throttled). With p.Fair the claim is shared
// between the queue's tenants within their tenant_limits (see the package
// doc, "Tenant fairness").
func JobClaim(ctx context.Context, db DBTX, p JobClaimParams) ([]Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	bd, batcher := db.(Batcher)
	locked := batcher && p.Throttled // the claim lock is taken (jobClaimBatch)
	query := "job_claim"
	args := []any{p.Queue, p.Limit, p.Owner, p.Lease.Milliseconds(), nil, nil, nil, locked}
	if p.Fair {
		query = "job_claim_fair"
		args = []any{p.Queue, p.Limit, p.Owner, p.Lease.Milliseconds(), p.TenantAfter, p.Limit, locked}
	} else if p.After != nil {
		args[4], args[5], args[6] = p.After.Priority, p.After.AvailableAt, p.After.ID
	}
	if batcher && (p.Throttled || p.Fair) {
		return jobClaimBatch(ctx, db, bd, p, query, args)
	}
	rows, err := db.Query(ctx, sqlText(query), args...)
	if err != nil {
		return nil, fmt.Errorf("claim jobs in %q: %w", p.Queue, err)
	}
	return collectClaimed(rows, p)
}

// jobClaimBatch runs a claim that needs statements before it in its
// transaction, in one round trip: the queue's claim lock when Throttled,
// and for a fair claim the generic plan (JobClaimGeneric), in a transaction
// of its own unless db is one already.
func jobClaimBatch(ctx context.Context, db DBTX, bd Batcher, p JobClaimParams, query string, args []any) ([]Job, error) {
	_, inTx := db.(pgx.Tx)
	explicit := p.Fair && !inTx
	b := &pgx.Batch{}
	if explicit {
		b.Queue("BEGIN")
	}
	if p.Fair {
		b.Queue(sqlText("job_claim_generic"))
	}
	if p.Throttled {
		b.Queue(sqlText("job_claim_lock"), p.Queue)
	}
	b.Queue(sqlText(query), args...)
	if explicit {
		b.Queue("COMMIT")
	}
	br := bd.SendBatch(ctx, b)
	defer br.Close()
	for range b.Len() - 1 - btoi(explicit) {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("start the claim in %q (lock, plan mode): %w", p.Queue, err)
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("claim jobs in %q: %w", p.Queue, err)
	}
	jobs, err := collectClaimed(rows, p)
	if err != nil {
		return nil, err
	}
	if explicit {
		if _, err := br.Exec(); err != nil {
			return nil, fmt.Errorf("commit the claim in %q: %w", p.Queue, err)
		}
	}
	return jobs, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// collectClaimed reads a claim's rows.
func collectClaimed(rows pgx.Rows, p JobClaimParams) ([]Job, error) {
	// Sized for a full claim up front: growing a slice of 1,000 jobs by
	// doubling copied them several times per claim.
	jobs, err := pgx.AppendRows(make([]Job, 0, p.Limit), rows, newJobDecoder(p.Limit, p.Queue, p.Owner).scan)
	if err != nil {
		return nil, fmt.Errorf("claim jobs in %q: %w", p.Queue, err)
	}
	return jobs, nil
}

func fenced(op string, id int64, rowsAffected int64, err error) error {
	if err != nil {
		return fmt.Errorf("%s job %d: %w", op, id, err)
	}
	if rowsAffected != 1 {
		return fmt.Errorf("%s job %d: %w", op, id, ErrLeaseLost)
	}
	return nil
}

// JobAck marks a running job done, fenced by owner and generation.
func JobAck(ctx context.Context, db DBTX, id int64, owner string, generation int64) error {
	tag, err := db.Exec(ctx, sqlText("job_ack"), id, owner, generation)
	return fenced("ack", id, tag.RowsAffected(), err)
}

// JobAckMany acks a batch of jobs held by owner in one statement and
// returns the ids acked; the others lost their lease. ids and generations
// are parallel.
func JobAckMany(ctx context.Context, db DBTX, owner string, ids, generations []int64) ([]int64, error) {
	return collectIDs(ctx, db, "job_ack_many", fmt.Sprintf("ack %d jobs", len(ids)), ids, generations, owner)
}

// JobAckConfirm returns the ids among ids (with parallel generations) that
// are done at exactly those generations. After an ack whose reply was lost
// (the connection broke after the commit) its retry matches nothing; this
// tells such jobs, which are done, from jobs whose lease was lost.
func JobAckConfirm(ctx context.Context, db DBTX, ids, generations []int64) ([]int64, error) {
	return collectIDs(ctx, db, "job_ack_confirm", fmt.Sprintf("confirm %d acks", len(ids)), ids, generations)
}

// JobFailParams are the arguments of JobFail.
type JobFailParams struct {
	ID         int64
	Owner      string
	Generation int64
	// Err is the attempt's error; its class is ErrorClass(Err) unless Class
	// is set.
	Err   error
	Class string
	// Delay before the job is due again, when it is retried.
	Delay time.Duration
	// Permanent sends the job to dead regardless of attempts left.
	Permanent bool
	// MaxErrors bounds the errors history (default 20).
	MaxErrors int
}

// JobFail records a failed attempt: ready again after Delay, or dead when
// permanent or out of attempts. It returns the new status.
func JobFail(ctx context.Context, db DBTX, p JobFailParams) (string, error) {
	class := p.Class
	if class == "" {
		class = ErrorClass(p.Err)
	}
	msg := "unknown error"
	if p.Err != nil {
		msg = p.Err.Error()
	}
	if p.MaxErrors <= 0 {
		p.MaxErrors = 20
	}
	var status string
	err := db.QueryRow(ctx, sqlText("job_fail"), p.ID, p.Owner, p.Generation, p.Delay.Milliseconds(),
		msg, class, p.Permanent, p.MaxErrors).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("fail job %d: %w", p.ID, ErrLeaseLost)
	}
	if err != nil {
		return "", fmt.Errorf("fail job %d: %w", p.ID, err)
	}
	return status, nil
}

// JobRenew extends a running job's lease to lease from now, fenced.
func JobRenew(ctx context.Context, db DBTX, id int64, owner string, generation int64, lease time.Duration) error {
	tag, err := db.Exec(ctx, sqlText("job_renew"), id, owner, generation, lease.Milliseconds())
	return fenced("renew", id, tag.RowsAffected(), err)
}

// JobRenewMany extends the leases of the jobs owner holds and returns the
// ids still held.
func JobRenewMany(ctx context.Context, db DBTX, owner string, ids, generations []int64, lease time.Duration) ([]int64, error) {
	return collectIDs(ctx, db, "job_renew_many", fmt.Sprintf("renew %d leases", len(ids)), ids, generations, owner, lease.Milliseconds())
}

// JobRelease hands a running job back to ready now without recording a
// failure; unstarted takes back the claim's attempt.
func JobRelease(ctx context.Context, db DBTX, id int64, owner string, generation int64, unstarted bool) error {
	tag, err := db.Exec(ctx, sqlText("job_release"), id, owner, generation, unstarted)
	return fenced("release", id, tag.RowsAffected(), err)
}

// JobPostpone hands a running job back to ready after delay without
// recording a failure and takes its claim's attempt back, fenced by owner
// and generation: the engine could not give it what it needed to run.
func JobPostpone(ctx context.Context, db DBTX, id int64, owner string, generation int64, delay time.Duration) error {
	tag, err := db.Exec(ctx, sqlText("job_postpone"), id, owner, generation, delay.Milliseconds())
	return fenced("postpone", id, tag.RowsAffected(), err)
}

// ReapResult counts what one JobReap batch did.
type ReapResult struct {
	Requeued, Dead int
	// ByQueue counts reaped jobs per queue, DeadByQueue those of them
	// that went dead.
	ByQueue, DeadByQueue map[string]int
	// At is when the batch's statement began, on the database's clock:
	// a batch that came back short reaped every lease it could lock that
	// ended before then. The reaper takes the floor of its next scans
	// from it (a process's clock may run ahead of the database's). Zero
	// in a JobReclaimDead result.
	At time.Time
}

// count adds one reaped job of queue that went to status.
func (r *ReapResult) count(queue, status string) {
	r.ByQueue[queue]++
	if status == StatusDead {
		r.Dead++
		r.DeadByQueue[queue]++
	} else {
		r.Requeued++
	}
}

// JobReap returns at most limit expired leases to ready (dead when their
// attempts are spent). Call it again while it reaps a full batch.
func JobReap(ctx context.Context, db DBTX, limit, maxErrors int) (ReapResult, error) {
	return JobReapFrom(ctx, db, limit, maxErrors, time.Time{})
}

// JobReapFrom is JobReap looking only at leases that ended at from or
// later (the zero time: all of them). from is compared with lease_until,
// which the database's clock wrote: take it from an earlier result's At,
// not from this process's clock.
func JobReapFrom(ctx context.Context, db DBTX, limit, maxErrors int, from time.Time) (ReapResult, error) {
	if maxErrors <= 0 {
		maxErrors = 20
	}
	var floor *time.Time
	if !from.IsZero() {
		floor = &from
	}
	rows, err := db.Query(ctx, sqlText("job_reap"), limit, maxErrors, floor)
	if err != nil {
		return ReapResult{}, fmt.Errorf("reap expired leases: %w", err)
	}
	res := ReapResult{ByQueue: map[string]int{}, DeadByQueue: map[string]int{}}
	var queue, status *string // NULL in the one row of a batch that reaped nothing
	_, err = pgx.ForEachRow(rows, []any{&queue, &status, &res.At}, func() error {
		if queue != nil && status != nil {
			res.count(*queue, *status)
		}
		return nil
	})
	if err != nil {
		return ReapResult{}, fmt.Errorf("reap expired leases: %w", err)
	}
	return res, nil
}

// collectReaped counts the (id, queue, status) rows of a statement that
// returned running jobs to ready, or to dead when their attempts were spent.
func collectReaped(rows pgx.Rows) (res ReapResult, err error) {
	res = ReapResult{ByQueue: map[string]int{}, DeadByQueue: map[string]int{}}
	var id int64
	var queue, status string
	_, err = pgx.ForEachRow(rows, []any{&id, &queue, &status}, func() error {
		res.count(queue, status)
		return nil
	})
	return res, err
}

// DeadReclaimResult is what one JobReclaimDead did.
type DeadReclaimResult struct {
	ReapResult
	// Workers are the workers found dead.
	Workers []string
}

// JobReclaimDead finds workers that are dead, not merely slow (their
// heartbeat is older than three of their heartbeat intervals and at least
// minSilence, and the session they recorded on the running server is gone),
// marks them stopped and reclaimed, and returns their running jobs to ready
// (dead when their attempts are spent), fenced like the reaper: the owner's
// late ack is refused. A worker is marked only when it looks dead twice,
// deadConfirmWait apart, on a server that has not restarted in between: a
// server shutting down ends its sessions one after another, and a single
// look could see a live worker's session gone before its own.
func JobReclaimDead(ctx context.Context, db DBTX, minSilence time.Duration, maxErrors int) (DeadReclaimResult, error) {
	return reclaimDeadWorkers(ctx, db, minSilence, maxErrors, func(ctx context.Context) error {
		return sleepCtx(ctx, deadConfirmWait)
	})
}

// sleepCtx waits d, or until ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// deadConfirmWait is how long after a worker first looks dead it is looked
// at again. A shutting-down server ends the session that looked first
// within milliseconds.
const deadConfirmWait = 250 * time.Millisecond

// reclaimDeadWorkers is JobReclaimDead with between run between the two
// looks (tests make things happen there).
func reclaimDeadWorkers(ctx context.Context, db DBTX, minSilence time.Duration, maxErrors int,
	between func(context.Context) error) (DeadReclaimResult, error) {
	if maxErrors <= 0 {
		maxErrors = 20
	}
	type suspect struct {
		ID              string
		ServerStartedAt time.Time
	}
	rows, err := db.Query(ctx, sqlText("worker_dead_find"), minSilence.Milliseconds())
	if err != nil {
		return DeadReclaimResult{}, fmt.Errorf("find dead workers: %w", err)
	}
	suspects, err := pgx.CollectRows(rows, pgx.RowToStructByPos[suspect])
	if err != nil || len(suspects) == 0 {
		if err != nil {
			err = fmt.Errorf("find dead workers: %w", err)
		}
		return DeadReclaimResult{}, err
	}
	ids := make([]string, len(suspects))
	for i, s := range suspects {
		ids[i] = s.ID
	}
	if err := between(ctx); err != nil {
		return DeadReclaimResult{}, fmt.Errorf("confirm dead workers %v: %w", ids, err)
	}
	rows, err = db.Query(ctx, sqlText("worker_dead_mark"), minSilence.Milliseconds(), ids, suspects[0].ServerStartedAt)
	if err != nil {
		return DeadReclaimResult{}, fmt.Errorf("mark dead workers %v: %w", ids, err)
	}
	dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(dead) == 0 {
		if err != nil {
			err = fmt.Errorf("mark dead workers %v: %w", ids, err)
		}
		return DeadReclaimResult{}, err
	}
	rows, err = db.Query(ctx, sqlText("job_reclaim_dead"), dead, maxErrors)
	if err != nil {
		return DeadReclaimResult{}, fmt.Errorf("reclaim the jobs of dead workers %v: %w", dead, err)
	}
	reaped, err := collectReaped(rows)
	if err != nil {
		return DeadReclaimResult{}, fmt.Errorf("reclaim the jobs of dead workers %v: %w", dead, err)
	}
	return DeadReclaimResult{Workers: dead, ReapResult: reaped}, nil
}

// JobCompleteTx marks job done inside tx, the caller's transaction, so
// that the handler's own writes and the job's completion commit together:
// if the lease was lost the caller's writes never land, and if they landed
// the job is not run again. Call it from the handler with the handler's
// context (or one derived from it), as the transaction's last statement
// before Commit, and return nil only once Commit succeeded: the engine
// then acks nothing. When it returns an error the caller must roll tx
// back and return an error (ErrLeaseLost when the job is no longer held).
//
// It is fenced like an ack, by the job's owner and lease generation, and
// also by the lease not having ended in the database (lease_until) nor on
// the worker's clock (LeaseDeadline): a lost lease returns an error
// wrapping ErrLeaseLost. The job's row stays locked until tx ends, and the
// worker's lease renewal waits for that lock, so commit promptly. Within a
// running job's handler it also bounds the rest of tx with
// idle_in_transaction_session_timeout at the lease's remaining time: a
// worker cut off from the database between this statement and its COMMIT
// holds the row only until the server ends its session, and the job then
// runs again elsewhere with none of tx's writes.
func JobCompleteTx(ctx context.Context, tx DBTX, job *Job) error {
	owner := ""
	if job.LeaseOwner != nil {
		owner = *job.LeaseOwner
	}
	var idleMS int64
	jc := jobContextOf(ctx)
	if jc != nil && jc.job.ID == job.ID {
		if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLost) {
			return fmt.Errorf("complete job %d: %w", job.ID, cause)
		}
		deadline, _ := LeaseDeadline(ctx)
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("complete job %d: %w", job.ID, ErrLeaseDeadline)
		}
		idleMS = max(1, left.Milliseconds())
	} else {
		jc = nil
	}
	tag, err := tx.Exec(ctx, sqlText("job_complete"), job.ID, owner, job.LeaseGeneration, idleMS)
	if err := fenced("complete", job.ID, tag.RowsAffected(), err); err != nil {
		return err
	}
	if jc != nil {
		jc.completed.Store(true)
	}
	return nil
}
