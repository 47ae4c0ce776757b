package queues

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// goroutineID is the id the runtime gives the calling goroutine, read from
// the first line of its stack ("goroutine 42 [running]:").
func goroutineID() (int64, error) {
	var buf [64]byte
	line := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	id, _, _ := bytes.Cut(line, []byte(" "))
	return strconv.ParseInt(string(id), 10, 64)
}

// TestClaimedJobsShareRunners: handlers that return at once run one after
// another on a few goroutines per claim, not on a goroutine each, and each
// claim's jobs run in the order they were claimed.
func TestClaimedJobsShareRunners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	const jobs = 1000
	_, err := EnqueueCopy(ctx, pool, slices.Repeat([]EnqueueParams{{Queue: "share", Kind: "noop"}}, jobs))
	require.NoError(t, err)
	var mu sync.Mutex
	ran := map[int64][]int64{} // goroutine -> the jobs it ran, in order
	cfg := testConfig(map[string]QueueConfig{"share": {Concurrency: 200}})
	startClient(t, pool, cfg, func(c *Client) {
		// The race detector and a busy machine slow the runners down; the
		// property here is that they are used (the wait is tested below).
		c.claimStartWait = time.Minute
		c.Handle("noop", func(_ context.Context, j *Job) error {
			g, err := goroutineID()
			if err != nil {
				t.Error(err) // a handler's goroutine may not end the test
			}
			mu.Lock()
			ran[g] = append(ran[g], j.ID)
			mu.Unlock()
			return nil
		})
	})
	testdb.Eventually(t, 60*time.Second, "every job ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, ids := range ran {
			n += len(ids)
		}
		return n == jobs
	})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d jobs ran on %d goroutines", jobs, len(ran))
	require.Less(t, len(ran), jobs/4, "claimed jobs ran on a goroutine each")
	for _, ids := range ran {
		require.True(t, slices.IsSorted(ids), "a runner took its claim's jobs out of order: %v", ids)
	}
}

// TestBlockingHandlersDoNotHoldBackTheirClaim: a claim's jobs whose
// handlers block all get to run at once. Every handler waits until all of
// the claim's jobs are running, which only goroutines of their own allow:
// the runners are fewer than the jobs. The queue is then marked to run its
// next claims on a goroutine per job, for a while, without waiting again.
func TestBlockingHandlersDoNotHoldBackTheirClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	jobs := claimRunners() + 8 // more than the runners, and all in the first claim
	_, err := EnqueueCopy(ctx, pool, slices.Repeat([]EnqueueParams{{Queue: "block", Kind: "wait"}}, jobs))
	require.NoError(t, err)
	var started, gaveUp atomic.Int64
	all := make(chan struct{})
	before := time.Now().UnixNano()
	cfg := testConfig(map[string]QueueConfig{"block": {Concurrency: jobs}})
	cfg.PollInterval = time.Minute // one claim takes them all
	c := startClient(t, pool, cfg, func(c *Client) {
		c.queues["block"].claimSize = jobs
		c.Handle("wait", func(context.Context, *Job) error {
			if started.Add(1) == int64(jobs) {
				close(all)
			}
			select {
			case <-all:
			case <-time.After(20 * time.Second):
				gaveUp.Add(1)
			}
			return nil
		})
	})
	testdb.Eventually(t, 60*time.Second, "every job ran", func() bool {
		var done int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'block' AND status = 'done'").Scan(&done))
		return done == jobs
	})
	require.Zero(t, gaveUp.Load(), "jobs of the claim waited behind a blocked handler")
	require.Greater(t, c.queues["block"].spreadUntil.Load(), before,
		"the queue's next claims would wait for its runners again")
}
