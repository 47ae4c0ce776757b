package queues

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func tenantCounts(jobs []Job) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		t := ""
		if j.TenantID != nil {
			t = *j.TenantID
		}
		out[t]++
	}
	return out
}

// tenantJobs is n jobs of kind for tenant in queue.
func tenantJobs(queue, kind, tenant string, n int) []EnqueueParams {
	ps := slices.Repeat([]EnqueueParams{{Queue: queue, Kind: kind, TenantID: tenant}}, n)
	return ps
}

// TestClaimFairShares: a fair claim splits its size evenly between the
// tenants with ready jobs, gives slots a small tenant cannot use to the
// others, and goes round the tenants with the tenant cursor.
func TestClaimFairShares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	burst := append(append(tenantJobs("fs", "k", "a", 50), tenantJobs("fs", "k", "b", 10)...), tenantJobs("fs", "k", "c", 1)...)
	_, err := EnqueueManyTx(ctx, tx, burst)
	require.NoError(t, err)
	claim := func(after string, n int) []Job {
		t.Helper()
		jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "fs", Limit: n, Owner: "w", Lease: time.Minute, Fair: true, TenantAfter: after})
		require.NoError(t, err)
		return jobs
	}
	first := claim("", 9)
	require.Equal(t, map[string]int{"a": 5, "b": 3, "c": 1}, tenantCounts(first),
		"three each; c has one, its two spare slots fill the first tenant in visit order")
	require.Equal(t, "c", NextTenant("", first))

	second := claim("c", 9)
	require.Equal(t, map[string]int{"a": 5, "b": 4}, tenantCounts(second), "from the start again, the remainder to the first")
	require.Equal(t, "b", NextTenant("c", second), "wrapped: the last tenant served")

	third := claim("b", 4)
	require.Equal(t, map[string]int{"a": 2, "b": 2}, tenantCounts(third), "after b nothing: wraps to a, then b")
}

// TestClientFairAfterBurst: tenant b enqueues 50 jobs after tenant a's
// burst of 5,000; with fair claims b's jobs are all started within the
// first few hundred claimed jobs, not after a's whole burst.
func TestClientFairAfterBurst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := EnqueueCopy(ctx, pool, tenantJobs("fair", "noop", "a", 5000))
	require.NoError(t, err)
	_, err = EnqueueCopy(ctx, pool, tenantJobs("fair", "noop", "b", 50))
	require.NoError(t, err)

	startClient(t, pool, testConfig(map[string]QueueConfig{"fair": {Concurrency: 10}}), registerTestKinds)
	testdb.Eventually(t, 60*time.Second, "b's jobs done", func() bool {
		return countJobs(t, pool, "tenant_id = 'b' AND status = 'done'") == 50
	})
	// How many jobs had started when b's last one did: a fair share is
	// about 100 (b takes every other slot); 300 leaves room for the first
	// claims, made before the engine saw a tenant, and for claim batches.
	started := countJobs(t, pool, "started_at <= (SELECT max(started_at) FROM jobs WHERE tenant_id = 'b')")
	t.Logf("b's 50 jobs were all started within the first %d claimed jobs", started)
	require.LessOrEqual(t, started, int64(300), "b waited behind a's burst")
}

// TestTenantMaxInFlightAcrossWorkers: a tenant's max_in_flight (the
// queue's default) holds across two processes while another tenant, with
// an override, runs beside it.
func TestTenantMaxInFlightAcrossWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	admin := testdb.Pool(t, url)
	_, err := admin.Exec(ctx, `INSERT INTO tenant_limits (queue, tenant_id, max_in_flight) VALUES ('tl', '', 3), ('tl', 'big', 6)`)
	require.NoError(t, err)
	var ps []EnqueueParams
	for i := range 400 {
		ps = append(ps, EnqueueParams{Queue: "tl", Kind: "work", TenantID: []string{"small", "big"}[i%2]})
	}
	_, err = EnqueueCopy(ctx, admin, ps)
	require.NoError(t, err)

	var mu sync.Mutex
	inFlight, peak := map[string]int{}, map[string]int{}
	var done atomic.Int64
	handler := func(ctx context.Context, j *Job) error {
		tenant := *j.TenantID
		mu.Lock()
		inFlight[tenant]++
		peak[tenant] = max(peak[tenant], inFlight[tenant])
		mu.Unlock()
		timer := time.NewTimer(10 * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
		}
		mu.Lock()
		inFlight[tenant]--
		mu.Unlock()
		done.Add(1)
		return nil
	}
	for i := range 2 {
		cfg := testConfig(map[string]QueueConfig{"tl": {Concurrency: 8}})
		cfg.ID = fmt.Sprintf("tl-%d", i)
		startClient(t, testdb.Pool(t, url), cfg, func(c *Client) { c.Handle("work", handler) })
	}
	testdb.Eventually(t, 60*time.Second, "200 jobs done", func() bool { return done.Load() >= 200 })
	mu.Lock()
	defer mu.Unlock()
	t.Logf("peak in flight per tenant: %v", peak)
	require.LessOrEqual(t, peak["small"], 3, "the default max_in_flight, across two workers of 8")
	require.LessOrEqual(t, peak["big"], 6, "the override, across two workers of 8")
	require.Greater(t, peak["big"], 3, "the override raised the limit above the default")
}

// TestTenantRateLimit: a tenant's rate holds across claims (its token
// bucket is in the database) while a tenant without a rate runs freely.
func TestTenantRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	const rate = 20.0
	_, err := pool.Exec(ctx, `INSERT INTO tenant_limits (queue, tenant_id, rate_per_second) VALUES ('tr', 'slow', $1)`, rate)
	require.NoError(t, err)
	_, err = EnqueueCopy(ctx, pool, append(tenantJobs("tr", "noop", "slow", 200), tenantJobs("tr", "noop", "free", 200)...))
	require.NoError(t, err)
	startClient(t, pool, testConfig(map[string]QueueConfig{"tr": {Concurrency: 8}}), registerTestKinds)
	testdb.Eventually(t, 30*time.Second, "the free tenant done", func() bool {
		return countJobs(t, pool, "tenant_id = 'free' AND status = 'done'") == 200
	})
	testdb.Eventually(t, 30*time.Second, "30 of the slow tenant's jobs done", func() bool {
		return countJobs(t, pool, "tenant_id = 'slow' AND status = 'done'") >= 30
	})
	// In any window of w seconds at most rate*w + one bucket (rate) of the
	// slow tenant's jobs start; checked on the database's own timestamps.
	var n int64
	var span float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), extract(epoch FROM max(started_at) - min(started_at))
		FROM jobs WHERE tenant_id = 'slow' AND started_at IS NOT NULL`).Scan(&n, &span))
	t.Logf("slow tenant: %d jobs started in %.2fs at rate %.0f/s", n, span, rate)
	require.LessOrEqual(t, float64(n), rate*span+rate+1, "started %d jobs in %.2fs at rate %.0f/s", n, span, rate)
}
