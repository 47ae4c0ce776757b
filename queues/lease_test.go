package queues

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func enqueueT(t *testing.T, db DBTX, p EnqueueParams) *Job {
	t.Helper()
	j, err := EnqueueTx(context.Background(), db, p)
	require.NoError(t, err)
	return j
}

func claimOne(t *testing.T, db DBTX, queue, owner string, lease time.Duration) Job {
	t.Helper()
	jobs, err := JobClaim(context.Background(), db, JobClaimParams{Queue: queue, Limit: 1, Owner: owner, Lease: lease})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

// expireLease moves a running job's lease into the past (test only).
func expireLease(t *testing.T, db DBTX, id int64) {
	t.Helper()
	_, err := db.Exec(context.Background(), "UPDATE jobs SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1", id)
	require.NoError(t, err)
}

func TestStateMachine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ClaimAck", func(t *testing.T) {
		tx := testdb.Tx(t)
		j := enqueueT(t, tx, EnqueueParams{Queue: "sm1", Kind: "k", Payload: map[string]int{"a": 1}})
		require.Equal(t, StatusReady, j.Status)
		require.Equal(t, DefaultMaxAttempts, j.MaxAttempts)
		c := claimOne(t, tx, "sm1", "w1", time.Minute)
		require.Equal(t, j.ID, c.ID)
		require.Equal(t, StatusRunning, c.Status)
		require.Equal(t, 1, c.Attempts)
		require.Equal(t, j.LeaseGeneration+1, c.LeaseGeneration)
		require.Equal(t, "w1", *c.LeaseOwner)
		require.JSONEq(t, `{"a":1}`, string(c.Payload))
		require.ErrorIs(t, JobAck(ctx, tx, c.ID, "w2", c.LeaseGeneration), ErrLeaseLost, "ack by non-owner")
		require.NoError(t, JobAck(ctx, tx, c.ID, "w1", c.LeaseGeneration))
		got, err := JobGet(ctx, tx, c.ID)
		require.NoError(t, err)
		require.Equal(t, StatusDone, got.Status)
		require.NotNil(t, got.FinishedAt)
		require.Nil(t, got.LeaseOwner)
		require.ErrorIs(t, JobAck(ctx, tx, c.ID, "w1", c.LeaseGeneration), ErrLeaseLost, "second ack")
	})

	t.Run("StaleAckAfterLeaseExpiry", func(t *testing.T) {
		tx := testdb.Tx(t)
		enqueueT(t, tx, EnqueueParams{Queue: "sm2", Kind: "k"})
		first := claimOne(t, tx, "sm2", "old", time.Minute)
		expireLease(t, tx, first.ID)
		res, err := JobReap(ctx, tx, 100, 20)
		require.NoError(t, err)
		require.Equal(t, 1, res.Requeued)
		// The stale worker cannot ack while the job is ready again...
		require.ErrorIs(t, JobAck(ctx, tx, first.ID, "old", first.LeaseGeneration), ErrLeaseLost)
		second := claimOne(t, tx, "sm2", "new", time.Minute)
		require.Equal(t, 2, second.Attempts)
		require.Greater(t, second.LeaseGeneration, first.LeaseGeneration)
		// ...nor overwrite the newer attempt, even with the same owner name.
		require.ErrorIs(t, JobAck(ctx, tx, first.ID, "old", first.LeaseGeneration), ErrLeaseLost)
		require.ErrorIs(t, JobAck(ctx, tx, first.ID, "new", first.LeaseGeneration), ErrLeaseLost)
		_, err = JobFail(ctx, tx, JobFailParams{ID: first.ID, Owner: "old", Generation: first.LeaseGeneration, Err: errors.New("late")})
		require.ErrorIs(t, err, ErrLeaseLost)
		got, err := JobGet(ctx, tx, first.ID)
		require.NoError(t, err)
		require.Equal(t, StatusRunning, got.Status)
		require.Equal(t, "new", *got.LeaseOwner)
		require.NoError(t, JobAck(ctx, tx, second.ID, "new", second.LeaseGeneration))
		hist, err := got.AttemptErrors()
		require.NoError(t, err)
		require.Len(t, hist, 1)
		require.Equal(t, "lease_expired", hist[0].Class)
	})

	t.Run("RenewByNonOwnerRefused", func(t *testing.T) {
		tx := testdb.Tx(t)
		enqueueT(t, tx, EnqueueParams{Queue: "sm3", Kind: "k"})
		c := claimOne(t, tx, "sm3", "w1", time.Second)
		require.ErrorIs(t, JobRenew(ctx, tx, c.ID, "intruder", c.LeaseGeneration, time.Hour), ErrLeaseLost)
		require.ErrorIs(t, JobRenew(ctx, tx, c.ID, "w1", c.LeaseGeneration-1, time.Hour), ErrLeaseLost)
		require.NoError(t, JobRenew(ctx, tx, c.ID, "w1", c.LeaseGeneration, time.Hour))
		got, err := JobGet(ctx, tx, c.ID)
		require.NoError(t, err)
		require.True(t, got.LeaseUntil.After(c.LeaseUntil.Add(30*time.Minute)))
		held, err := JobRenewMany(ctx, tx, "intruder", []int64{c.ID}, []int64{c.LeaseGeneration}, time.Hour)
		require.NoError(t, err)
		require.Empty(t, held)
		held, err = JobRenewMany(ctx, tx, "w1", []int64{c.ID}, []int64{c.LeaseGeneration}, time.Hour)
		require.NoError(t, err)
		require.Equal(t, []int64{c.ID}, held)
	})

	t.Run("FailRetryThenDead", func(t *testing.T) {
		tx := testdb.Tx(t)
		j := enqueueT(t, tx, EnqueueParams{Queue: "sm4", Kind: "k", MaxAttempts: 2})
		c := claimOne(t, tx, "sm4", "w", time.Minute)
		st, err := JobFail(ctx, tx, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration,
			Err: errors.New("boom 1"), Delay: time.Hour})
		require.NoError(t, err)
		require.Equal(t, StatusReady, st)
		got, _ := JobGet(ctx, tx, j.ID)
		require.True(t, got.AvailableAt.After(time.Now().Add(50*time.Minute)), "backoff applied")
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "sm4", Limit: 5, Owner: "w", Lease: time.Minute})
		require.NoError(t, err)
		require.Empty(t, jobs, "not due during backoff")
		_, err = tx.Exec(ctx, "UPDATE jobs SET available_at = clock_timestamp() WHERE id = $1", j.ID)
		require.NoError(t, err)
		c = claimOne(t, tx, "sm4", "w", time.Minute)
		st, err = JobFail(ctx, tx, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration, Err: errors.New("boom 2")})
		require.NoError(t, err)
		require.Equal(t, StatusDead, st)
		got, _ = JobGet(ctx, tx, j.ID)
		require.Equal(t, "boom 2", *got.LastError)
		require.Equal(t, "boom ?", *got.ErrorClass)
		require.NotNil(t, got.FinishedAt)
		hist, err := got.AttemptErrors()
		require.NoError(t, err)
		require.Len(t, hist, 2)
		require.Equal(t, 1, hist[0].Attempt)
		require.Equal(t, "boom 1", hist[0].Error)
	})

	t.Run("PermanentGoesDeadAtOnce", func(t *testing.T) {
		tx := testdb.Tx(t)
		enqueueT(t, tx, EnqueueParams{Queue: "sm5", Kind: "k"})
		c := claimOne(t, tx, "sm5", "w", time.Minute)
		st, err := JobFail(ctx, tx, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration,
			Err: Permanent(errors.New("bad input")), Permanent: true})
		require.NoError(t, err)
		require.Equal(t, StatusDead, st)
	})

	t.Run("ErrorsHistoryBounded", func(t *testing.T) {
		tx := testdb.Tx(t)
		j := enqueueT(t, tx, EnqueueParams{Queue: "sm6", Kind: "k", MaxAttempts: 50})
		for i := range 7 {
			c := claimOne(t, tx, "sm6", "w", time.Minute)
			_, err := JobFail(ctx, tx, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration,
				Err: errors.New("e"), MaxErrors: 3})
			require.NoError(t, err, i)
		}
		got, _ := JobGet(ctx, tx, j.ID)
		hist, err := got.AttemptErrors()
		require.NoError(t, err)
		require.Len(t, hist, 3)
		require.Equal(t, 5, hist[0].Attempt, "oldest entries dropped")
		require.Equal(t, 7, hist[2].Attempt)
	})

	t.Run("ReaperToDeadWhenAttemptsSpent", func(t *testing.T) {
		tx := testdb.Tx(t)
		j := enqueueT(t, tx, EnqueueParams{Queue: "sm7", Kind: "k", MaxAttempts: 1})
		c := claimOne(t, tx, "sm7", "w", time.Minute)
		expireLease(t, tx, c.ID)
		res, err := JobReap(ctx, tx, 100, 20)
		require.NoError(t, err)
		require.Equal(t, 1, res.Dead)
		got, _ := JobGet(ctx, tx, j.ID)
		require.Equal(t, StatusDead, got.Status)
		require.Equal(t, "lease_expired", *got.ErrorClass)
		require.ErrorIs(t, JobAck(ctx, tx, c.ID, "w", c.LeaseGeneration), ErrLeaseLost)
	})

	t.Run("ReaperBoundedBatches", func(t *testing.T) {
		tx := testdb.Tx(t)
		for range 5 {
			enqueueT(t, tx, EnqueueParams{Queue: "sm8", Kind: "k"})
		}
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "sm8", Limit: 5, Owner: "w", Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, 5)
		_, err = tx.Exec(ctx, "UPDATE jobs SET lease_until = clock_timestamp() - interval '1 second' WHERE queue = 'sm8'")
		require.NoError(t, err)
		res, err := JobReap(ctx, tx, 2, 20)
		require.NoError(t, err)
		require.Equal(t, 2, res.Requeued)
		res, err = JobReap(ctx, tx, 10, 20)
		require.NoError(t, err)
		require.Equal(t, 3, res.Requeued)
	})

	// A floor: the scan skips the leases that ended before it (the
	// reaper's scan of a range a complete scan covered); without one it
	// reaps every expired lease.
	t.Run("ReaperFrom", func(t *testing.T) {
		tx := testdb.Tx(t)
		for range 2 {
			enqueueT(t, tx, EnqueueParams{Queue: "sm8f", Kind: "k"})
		}
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "sm8f", Limit: 2, Owner: "w", Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		old, recent := jobs[0].ID, jobs[1].ID
		_, err = tx.Exec(ctx, "UPDATE jobs SET lease_until = clock_timestamp() - interval '1 hour' WHERE id = $1", old)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "UPDATE jobs SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1", recent)
		require.NoError(t, err)
		res, err := JobReapFrom(ctx, tx, 10, 20, time.Now().Add(-time.Minute))
		require.NoError(t, err)
		require.Equal(t, 1, res.Requeued, "the floor did not bound the scan")
		got, _ := JobGet(ctx, tx, recent)
		require.Equal(t, StatusReady, got.Status)
		got, _ = JobGet(ctx, tx, old)
		require.Equal(t, StatusRunning, got.Status, "a lease that ended below the floor was reaped")
		res, err = JobReapFrom(ctx, tx, 10, 20, time.Time{})
		require.NoError(t, err)
		require.Equal(t, 1, res.Requeued, "a scan from the start skipped a lease")
	})

	t.Run("ReleaseUnstarted", func(t *testing.T) {
		tx := testdb.Tx(t)
		enqueueT(t, tx, EnqueueParams{Queue: "sm9", Kind: "k"})
		c := claimOne(t, tx, "sm9", "w", time.Minute)
		require.ErrorIs(t, JobRelease(ctx, tx, c.ID, "x", c.LeaseGeneration, true), ErrLeaseLost)
		require.NoError(t, JobRelease(ctx, tx, c.ID, "w", c.LeaseGeneration, true))
		got, _ := JobGet(ctx, tx, c.ID)
		require.Equal(t, StatusReady, got.Status)
		require.Equal(t, 0, got.Attempts)
	})

	t.Run("PriorityThenAge", func(t *testing.T) {
		tx := testdb.Tx(t)
		low := enqueueT(t, tx, EnqueueParams{Queue: "sm10", Kind: "k"})
		high := enqueueT(t, tx, EnqueueParams{Queue: "sm10", Kind: "k", Priority: 5})
		enqueueT(t, tx, EnqueueParams{Queue: "sm10", Kind: "k", RunAt: time.Now().Add(time.Hour), Priority: 9})
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "sm10", Limit: 5, Owner: "w", Lease: time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		ids := []int64{jobs[0].ID, jobs[1].ID}
		require.ElementsMatch(t, []int64{low.ID, high.ID}, ids)
	})
}

func TestOperatorMutations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	ready := enqueueT(t, tx, EnqueueParams{Queue: "op", Kind: "k", RunAt: time.Now().Add(time.Hour)})
	got, err := JobRetryNowTx(ctx, tx, ready.ID)
	require.NoError(t, err)
	require.False(t, got.AvailableAt.After(time.Now().Add(time.Minute)))

	running := claimOne(t, tx, "op", "w", time.Minute)
	cancelled, err := JobCancelTx(ctx, tx, running.ID)
	require.NoError(t, err)
	require.Equal(t, StatusDead, cancelled.Status)
	require.Equal(t, "cancelled", *cancelled.ErrorClass)
	require.Greater(t, cancelled.LeaseGeneration, running.LeaseGeneration)
	require.ErrorIs(t, JobAck(ctx, tx, running.ID, "w", running.LeaseGeneration), ErrLeaseLost)
	_, err = JobCancelTx(ctx, tx, running.ID)
	require.ErrorIs(t, err, ErrInvalidState)
	_, err = JobCancelTx(ctx, tx, 1<<60)
	require.ErrorIs(t, err, ErrNotFound)

	back, err := JobRetryNowTx(ctx, tx, running.ID)
	require.NoError(t, err)
	require.Equal(t, StatusReady, back.Status)
	require.Nil(t, back.FinishedAt)

	again := claimOne(t, tx, "op", "w", time.Minute)
	expired, err := LeaseExpireTx(ctx, tx, again.ID)
	require.NoError(t, err)
	require.Equal(t, StatusReady, expired.Status)
	require.Greater(t, expired.LeaseGeneration, again.LeaseGeneration)
	require.ErrorIs(t, JobRenew(ctx, tx, again.ID, "w", again.LeaseGeneration, time.Minute), ErrLeaseLost)
	_, err = LeaseExpireTx(ctx, tx, again.ID)
	require.ErrorIs(t, err, ErrInvalidState)
}

// TestClaimAfterCursor: a claim with a cursor resumes after it within its
// priority level and then takes lower levels from their heads; a job with a
// key behind the cursor waits for a claim from the head.
func TestClaimAfterCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	var mid []*Job
	for i := range 4 {
		mid = append(mid, enqueueT(t, tx, EnqueueParams{Queue: "kc", Kind: "k", Priority: 5, RunAt: base.Add(time.Duration(i) * time.Second)}))
	}
	low := enqueueT(t, tx, EnqueueParams{Queue: "kc", Kind: "k", Priority: 1, RunAt: base})
	claim := func(after *ClaimKey, n int) []Job {
		t.Helper()
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "kc", Limit: n, Owner: "w", Lease: time.Minute, After: after})
		require.NoError(t, err)
		return jobs
	}
	ids := func(jobs []Job) []int64 {
		var out []int64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}

	first := claim(nil, 2)
	require.ElementsMatch(t, []int64{mid[0].ID, mid[1].ID}, ids(first))
	cursor := NextClaimKey(nil, first)
	require.Equal(t, ClaimKey{Priority: 5, AvailableAt: mid[1].AvailableAt, ID: mid[1].ID}, *cursor)

	// Behind the cursor: a higher priority, and an earlier run time at the
	// cursor's own priority (an insert that committed late).
	high := enqueueT(t, tx, EnqueueParams{Queue: "kc", Kind: "k", Priority: 9, RunAt: base})
	late := enqueueT(t, tx, EnqueueParams{Queue: "kc", Kind: "k", Priority: 5, RunAt: base.Add(-time.Minute)})

	next := claim(cursor, 3)
	require.ElementsMatch(t, []int64{mid[2].ID, mid[3].ID, low.ID}, ids(next), "rest of the level, then the lower level")
	cursor = NextClaimKey(cursor, next)
	require.Equal(t, low.ID, cursor.ID, "the cursor is the last key in claim order")
	require.Equal(t, *cursor, *NextClaimKey(cursor, first), "an earlier claim does not move it back")
	require.Empty(t, claim(cursor, 5), "nothing past the cursor")

	require.ElementsMatch(t, []int64{high.ID, late.ID}, ids(claim(nil, 5)), "a claim from the head takes what the cursor passed")
}

// TestClaimDecodesEveryColumn: the claim decodes its rows by position;
// every column, nullable ones set, must come out as JobGet (by name) reads
// the same row.
func TestClaimDecodesEveryColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	j := enqueueT(t, tx, EnqueueParams{Queue: "dc", Kind: "k", Payload: map[string]int{"n": 7}, Priority: 3,
		MaxAttempts: 4, DedupeKey: "d-1", TenantID: "t-1"})
	c := claimOne(t, tx, "dc", "w", time.Minute)
	_, err := JobFail(ctx, tx, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration,
		Err: errors.New("first try"), Class: "boom"})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE jobs SET available_at = clock_timestamp(), finished_at = clock_timestamp() WHERE id = $1", j.ID)
	require.NoError(t, err)

	claimed := claimOne(t, tx, "dc", "w2", time.Minute)
	got, err := JobGet(ctx, tx, j.ID)
	require.NoError(t, err)
	require.Equal(t, *got, claimed)
	require.NotNil(t, claimed.LeaseOwner)
	require.NotNil(t, claimed.LastError)
	require.NotNil(t, claimed.ErrorClass)
	require.NotNil(t, claimed.DedupeKey)
	require.NotNil(t, claimed.TenantID)
	require.NotNil(t, claimed.FinishedAt)
	require.JSONEq(t, `{"n": 7}`, string(claimed.Payload))
	hist, err := claimed.AttemptErrors()
	require.NoError(t, err)
	require.Len(t, hist, 1)
}

// TestJobAckConfirm: an ack whose commit went through but whose reply was
// lost is retried; the retry matches nothing, and JobAckConfirm recognises
// the job as done by this worker. A job whose lease was taken over and
// finished by another worker is not confirmed.
func TestJobAckConfirm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	_, err := EnqueueManyTx(ctx, tx, []EnqueueParams{{Queue: "ac", Kind: "k"}, {Queue: "ac", Kind: "k"}})
	require.NoError(t, err)
	jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "ac", Limit: 2, Owner: "w1", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	mine, taken := jobs[0], jobs[1]

	// The first ack committed; its reply was lost, so the worker retries.
	acked, err := JobAckMany(ctx, tx, "w1", []int64{mine.ID}, []int64{mine.LeaseGeneration})
	require.NoError(t, err)
	require.Equal(t, []int64{mine.ID}, acked)
	// Meanwhile the other job's lease was taken over and finished by w2.
	_, err = LeaseExpireTx(ctx, tx, taken.ID)
	require.NoError(t, err)
	again, err := JobClaim(ctx, tx, JobClaimParams{Queue: "ac", Limit: 1, Owner: "w2", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, again, 1)
	require.NoError(t, JobAck(ctx, tx, again[0].ID, "w2", again[0].LeaseGeneration))

	ids := []int64{mine.ID, taken.ID}
	gens := []int64{mine.LeaseGeneration, taken.LeaseGeneration}
	retried, err := JobAckMany(ctx, tx, "w1", ids, gens)
	require.NoError(t, err)
	require.Empty(t, retried, "the retry matches nothing")
	done, err := JobAckConfirm(ctx, tx, ids, gens)
	require.NoError(t, err)
	require.Equal(t, []int64{mine.ID}, done, "only the job this worker's lost ack finished")
}
