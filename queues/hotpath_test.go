package queues

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestClaimDecodeMatchesJobGet: the claim's positional decode (reused scan
// targets, an interned kind, times and owners carved from slabs, and the
// queue, status and lease owner the claim does not send back but the
// decoder fills in) gives every job exactly what the by-name read of the
// same row gives, for jobs of several kinds, with and without the nullable
// columns, through the plain and the fair claim, and no two jobs share a
// pointer.
func TestClaimDecodeMatchesJobGet(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("Fair%v", fair), func(t *testing.T) {
			ctx := context.Background()
			queue := fmt.Sprintf("decode-%v", fair)
			kinds := []string{"mail", "resize", "mail", "bill", "resize", "mail"}
			for i, kind := range kinds {
				p := EnqueueParams{Queue: queue, Kind: kind, Payload: map[string]int{"n": i}, Priority: int16(i % 2)}
				if i%2 == 0 {
					p.TenantID, p.DedupeKey = fmt.Sprintf("tenant-%d", i), fmt.Sprintf("key-%d", i)
				}
				_, err := EnqueueTx(ctx, pool, p)
				require.NoError(t, err)
			}
			// One job has failed once: its error columns are set when it is claimed again.
			first, err := JobClaim(ctx, pool, JobClaimParams{Queue: queue, Limit: 1, Owner: "w1", Lease: time.Minute, Fair: fair})
			require.NoError(t, err)
			require.Len(t, first, 1)
			_, err = JobFail(ctx, pool, JobFailParams{ID: first[0].ID, Owner: "w1", Generation: first[0].LeaseGeneration,
				Err: errors.New("smtp: 451 try later")})
			require.NoError(t, err)

			jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: queue, Limit: 100, Owner: "w2", Lease: time.Minute, Fair: fair})
			require.NoError(t, err)
			require.Len(t, jobs, len(kinds))
			retried := 0
			for i := range jobs {
				got, err := JobGet(ctx, pool, jobs[i].ID)
				require.NoError(t, err)
				require.Equal(t, *got, jobs[i], "job %d decoded from the claim", jobs[i].ID)
				if jobs[i].LastError != nil {
					retried++
				}
			}
			require.Equal(t, 1, retried, "the failed job comes back with its error")

			// The jobs own what they point to: changing one job's lease owner and
			// times leaves the others as they were.
			*jobs[0].LeaseOwner = "changed"
			*jobs[0].LeaseUntil = time.Time{}
			*jobs[0].StartedAt = time.Time{}
			jobs[0].Payload[0] = ' '
			for _, j := range jobs[1:] {
				require.Equal(t, "w2", *j.LeaseOwner)
				require.False(t, j.LeaseUntil.IsZero())
				require.False(t, j.StartedAt.IsZero())
				require.Equal(t, byte('{'), j.Payload[0])
			}
		})
	}
}

// TestJobConnUnderTimeout: a handler of a queue with a timeout reaches its
// session through the timeout's context, and the timeout and the lease's
// loss still cancel it with their causes.
func TestJobConnUnderTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	causes := make(chan error, 2)
	cfg := testConfig(map[string]QueueConfig{"timed": {Concurrency: 2, Timeout: 300 * time.Millisecond}})
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("slow", func(ctx context.Context, j *Job) error {
			conn, err := JobConn(ctx)
			if err != nil {
				causes <- err
				return err
			}
			var app string
			if err := conn.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&app); err != nil {
				causes <- err
				return err
			}
			if want := fmt.Sprintf("console-worker job=%d", j.ID); app != want {
				causes <- fmt.Errorf("session named %q, want %q", app, want)
				return nil
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
	})
	j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "timed", Kind: "slow", MaxAttempts: 1})
	require.NoError(t, err)
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, errTimeout)
	case <-time.After(15 * time.Second):
		t.Fatal("handler did not end")
	}
	testdb.Eventually(t, 10*time.Second, "the timed-out job dead", func() bool {
		got, err := JobGet(ctx, pool, j.ID)
		require.NoError(t, err)
		return got.Status == StatusDead
	})
	got, err := JobGet(ctx, pool, j.ID)
	require.NoError(t, err)
	require.Equal(t, "timeout", *got.ErrorClass)
}

// TestAckBatchFreesSlots: acks written in batches free their jobs' slots
// and finish them for Stop: a queue of 3 slots works 300 jobs (every slot
// refilled only after a batch's finish), each once, and Stop returns with
// none left running.
func TestAckBatchFreesSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	const n = 300
	ps := slices.Repeat([]EnqueueParams{{Queue: "slots", Kind: "noop"}}, n)
	_, err := EnqueueManyTx(ctx, pool, ps)
	require.NoError(t, err)
	c, err := NewClient(pool, testConfig(map[string]QueueConfig{"slots": {Concurrency: 3}}))
	require.NoError(t, err)
	ran := make(chan int64, n)
	c.Handle("noop", func(ctx context.Context, j *Job) error {
		ran <- j.ID
		return nil
	})
	require.NoError(t, c.Start(ctx))
	testdb.Eventually(t, 60*time.Second, "every job done", func() bool {
		return countJobs(t, pool, "queue = 'slots' AND status = 'done'") == n
	})
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(stopCtx))
	close(ran)
	seen := map[int64]bool{}
	for id := range ran {
		require.False(t, seen[id], "job %d ran twice", id)
		seen[id] = true
	}
	require.Len(t, seen, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Zero(t, c.running.len(), "jobs left in the running set after Stop")
}
