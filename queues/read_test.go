package queues

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// deadJob enqueues a job and fails it to dead with err.
func deadJob(t *testing.T, db DBTX, queue string, err error) int64 {
	t.Helper()
	j := enqueueT(t, db, EnqueueParams{Queue: queue, Kind: "k", MaxAttempts: 1})
	c := claimOne(t, db, queue, "w", time.Minute)
	require.Equal(t, j.ID, c.ID)
	st, ferr := JobFail(context.Background(), db, JobFailParams{ID: c.ID, Owner: "w", Generation: c.LeaseGeneration, Err: err})
	require.NoError(t, ferr)
	require.Equal(t, StatusDead, st)
	return j.ID
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	var timeouts []int64
	for i := range 3 {
		timeouts = append(timeouts, deadJob(t, tx, "dl", fmt.Errorf("call upstream 10.0.0.%d: timeout after %dms", i, 100+i)))
	}
	other := deadJob(t, tx, "dl", errors.New("bad payload"))
	deadJob(t, tx, "dl2", errors.New("bad payload"))

	groups, err := DeadLetterGroups(ctx, tx, "dl")
	require.NoError(t, err)
	require.Len(t, groups, 2)
	require.EqualValues(t, 3, groups[0].Count)
	require.Equal(t, "call upstream ?: timeout after ?ms", groups[0].ErrorClass)
	require.Contains(t, groups[0].SampleError, "timeout")
	require.False(t, groups[0].FirstSeen.After(groups[0].LastSeen))
	all, err := DeadLetterGroups(ctx, tx, "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 3)
	_, err = tx.Exec(ctx, `INSERT INTO jobs (queue, kind, status, attempts, error_class, last_error, finished_at)
		SELECT 'dlmany', 'k', 'dead', 1, 'class ' || g, 'e', now() FROM generate_series(1, 201) AS g`)
	require.NoError(t, err)
	many, err := DeadLetterGroups(ctx, tx, "dlmany")
	require.NoError(t, err)
	require.Len(t, many, 200, "at most 200 groups")

	f := DeadLetterFilter{Queue: "dl", ErrorClass: groups[0].ErrorClass}
	n, err := DeadLetterCount(ctx, tx, f)
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	sample, err := DeadLetterSample(ctx, tx, f, 2)
	require.NoError(t, err)
	require.Len(t, sample, 2)
	n, err = DeadLetterCount(ctx, tx, DeadLetterFilter{IDs: []int64{other}})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	future := time.Now().Add(time.Hour)
	n, err = DeadLetterCount(ctx, tx, DeadLetterFilter{Since: &future})
	require.NoError(t, err)
	require.Zero(t, n)

	ids, err := DeadLetterRequeueTx(ctx, tx, f, 2, false)
	require.NoError(t, err)
	require.Equal(t, timeouts[:2], ids)
	j, _ := JobGet(ctx, tx, ids[0])
	require.Equal(t, StatusReady, j.Status)
	require.Equal(t, 1, j.Attempts, "attempts kept")
	hist, _ := j.AttemptErrors()
	require.Len(t, hist, 1, "errors history kept")
	ids, err = DeadLetterRequeueTx(ctx, tx, f, 10, true)
	require.NoError(t, err)
	require.Equal(t, timeouts[2:], ids)
	j, _ = JobGet(ctx, tx, ids[0])
	require.Equal(t, 0, j.Attempts)
}

// The console's dead-letter reads: groups by class with recent counts,
// counts per queue, and the classes a requeue filter matches, each bounded
// by its cap and limit.
func TestDeadLetterStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	a := func() error { return errors.New("upstream refused") }
	b := func() error { return errors.New("bad payload") }
	old := []int64{deadJob(t, tx, "ds1", a())}
	for range 2 {
		deadJob(t, tx, "ds1", a())
	}
	deadJob(t, tx, "ds1", b())
	unclassified := deadJob(t, tx, "ds1", b())
	old = append(old, deadJob(t, tx, "ds2", b()))
	_, err := tx.Exec(ctx, "UPDATE jobs SET error_class = NULL WHERE id = $1", unclassified)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "UPDATE jobs SET finished_at = now() - interval '1 hour' WHERE id = ANY($1)", old)
	require.NoError(t, err)
	var lastA time.Time
	require.NoError(t, tx.QueryRow(ctx, "SELECT max(finished_at) FROM jobs WHERE queue = 'ds1' AND error_class = 'upstream refused'").Scan(&lastA))

	// Other tests' queues share the database: keep this test's ones.
	notMine := func(queue string) bool { return !strings.HasPrefix(queue, "ds") }
	stats := func(p DeadLetterStatsParams) []DeadLetterClassStat {
		all, err := DeadLetterClassStats(ctx, tx, p)
		require.NoError(t, err)
		all = slices.DeleteFunc(all, func(s DeadLetterClassStat) bool { return notMine(s.Queue) })
		for i := range all {
			all[i].LastFinishedAt = nil
		}
		return all
	}
	all, err := DeadLetterClassStats(ctx, tx, DeadLetterStatsParams{})
	require.NoError(t, err)
	require.NotEmpty(t, all)
	require.Equal(t, "ds1", all[0].Queue, "the largest recent burst comes first")
	require.NotNil(t, all[0].LastFinishedAt)
	require.True(t, lastA.Equal(*all[0].LastFinishedAt), "last death %v, want %v", all[0].LastFinishedAt, lastA)
	require.Equal(t, []DeadLetterClassStat{
		{Queue: "ds1", ErrorClass: "upstream refused", Dead: 3, DeadRecent: 2},
		{Queue: "ds1", ErrorClass: "", Dead: 1, DeadRecent: 1},
		{Queue: "ds1", ErrorClass: "bad payload", Dead: 1, DeadRecent: 1},
		{Queue: "ds2", ErrorClass: "bad payload", Dead: 1, DeadRecent: 0},
	}, stats(DeadLetterStatsParams{}))
	require.Equal(t, DeadLetterClassStat{Queue: "ds1", ErrorClass: "upstream refused", Dead: 3, DeadRecent: 2},
		stats(DeadLetterStatsParams{CountCap: 2})[0], "recent counts stop at the cap, dead counts are exact")
	require.Equal(t, int64(3), stats(DeadLetterStatsParams{Window: 2 * time.Hour})[0].DeadRecent, "a wider window")
	limited, err := DeadLetterClassStats(ctx, tx, DeadLetterStatsParams{MaxGroups: 2})
	require.NoError(t, err)
	require.Len(t, limited, 2, "at most MaxGroups groups")

	counts := func(p DeadLetterStatsParams) []DeadLetterQueueCount {
		all, err := DeadLetterQueueCounts(ctx, tx, p)
		require.NoError(t, err)
		return slices.DeleteFunc(all, func(c DeadLetterQueueCount) bool { return notMine(c.Queue) })
	}
	require.Equal(t, []DeadLetterQueueCount{{Queue: "ds1", Dead: 5, DeadRecent: 4}, {Queue: "ds2", Dead: 1}}, counts(DeadLetterStatsParams{}))
	require.Equal(t, []DeadLetterQueueCount{{Queue: "ds1", Dead: 5, DeadRecent: 3}, {Queue: "ds2", Dead: 1}}, counts(DeadLetterStatsParams{CountCap: 3}))

	classes, err := DeadLetterClassList(ctx, tx, DeadLetterFilter{Queue: "ds1"}, 0)
	require.NoError(t, err)
	require.Equal(t, []DeadLetterClassCount{{"upstream refused", 3}, {"", 1}, {"bad payload", 1}}, classes)
	classes, err = DeadLetterClassList(ctx, tx, DeadLetterFilter{Queue: "ds1"}, 2)
	require.NoError(t, err)
	require.Len(t, classes, 2, "at most limit classes")
	classes, err = DeadLetterClassList(ctx, tx, DeadLetterFilter{IDs: old}, 0)
	require.NoError(t, err)
	require.Equal(t, []DeadLetterClassCount{{"bad payload", 1}, {"upstream refused", 1}}, classes)
}

func TestQueueSettingsAndStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	s, err := QueueSettingsGet(ctx, tx, "st")
	require.NoError(t, err)
	require.Equal(t, QueueSettings{Queue: "st"}, s)
	mw, rate, who := 3, 2.5, "alice"
	s, err = QueueSettingsSetTx(ctx, tx, QueueSettings{Queue: "st", Paused: true, MaxWorkers: &mw, RatePerSecond: &rate, UpdatedBy: &who})
	require.NoError(t, err)
	require.True(t, s.Paused)
	require.False(t, s.UpdatedAt.IsZero())
	got, err := QueueSettingsGet(ctx, tx, "st")
	require.NoError(t, err)
	require.Equal(t, s, got)

	for range 4 {
		enqueueT(t, tx, EnqueueParams{Queue: "st2", Kind: "k"})
	}
	enqueueT(t, tx, EnqueueParams{Queue: "st2", Kind: "k", RunAt: time.Now().Add(time.Hour)})
	c := claimOne(t, tx, "st2", "w", time.Minute)
	c2 := claimOne(t, tx, "st2", "w", time.Minute)
	expireLease(t, tx, c2.ID)
	require.NoError(t, JobAck(ctx, tx, c.ID, "w", c.LeaseGeneration))
	deadJob(t, tx, "st3", errors.New("x"))
	// A paused queue claims nothing.
	enqueueT(t, tx, EnqueueParams{Queue: "st", Kind: "k"})
	jobs, err := JobClaim(ctx, tx, JobClaimParams{Queue: "st", Limit: 5, Owner: "w", Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, jobs)

	stats, err := QueueHealth(ctx, tx, QueueHealthParams{})
	require.NoError(t, err)
	byQueue := map[string]QueueStat{}
	for _, s := range stats {
		byQueue[s.Queue] = s
	}
	st2 := byQueue["st2"]
	require.EqualValues(t, 3, st2.ReadyTotal())
	require.EqualValues(t, 2, st2.Ready)
	require.EqualValues(t, 1, st2.Running)
	require.EqualValues(t, 1, st2.ExpiredLeases)
	require.EqualValues(t, 0, st2.Dead)
	require.EqualValues(t, 1, byQueue["st3"].Dead)
	require.GreaterOrEqual(t, st2.OldestReadySeconds, 0.0)
	require.True(t, byQueue["st"].Paused)
	require.Equal(t, 3, *byQueue["st"].MaxWorkers)

	list, err := JobList(ctx, tx, JobListParams{Queue: "st2", Limit: 2})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Greater(t, list[0].ID, list[1].ID)
	next, err := JobList(ctx, tx, JobListParams{Queue: "st2", BeforeID: list[1].ID})
	require.NoError(t, err)
	require.Len(t, next, 3)
	dead, err := JobList(ctx, tx, JobListParams{Status: StatusDead, Queue: "st3"})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	_, err = JobGet(ctx, tx, 1<<60)
	require.ErrorIs(t, err, ErrNotFound)
}

// historyPool is a database whose jobs are 40,000 rows over four queues,
// all but every 97th done, vacuumed and analysed while nothing ran: a
// clone of a template filled once per binary.
func historyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return testdb.Pool(t, historyDatabase.URL(t))
}

var historyDatabase = testdb.Template{Name: "history", Build: func(t testing.TB, url string) {
	ctx := context.Background()
	pool := testdb.Pool(t, url)
	ps := make([]EnqueueParams, 40000)
	for i := range ps {
		ps[i] = EnqueueParams{Queue: fmt.Sprintf("p%d", i%4), Kind: "noop"}
	}
	_, err := EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE jobs SET status = 'done', finished_at = clock_timestamp() WHERE id % 97 <> 0")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "VACUUM (ANALYZE) jobs")
	require.NoError(t, err)
}}

// TestQueueHealthPlan: QueueHealth never scans jobs and reads a few index
// entries per queue and priority, not one per ready job: the counts come
// from the counters, the oldest due job from one probe.
func TestQueueHealthPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := historyPool(t)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	raw := []byte(strings.Join(explainPrepared(t, conn, "queue_health_plan", "queue_health",
		"(ANALYZE, FORMAT JSON)", fmt.Sprintf("(%d)", DefaultCountCap)), "\n"))
	var read float64
	used := map[string]bool{}
	for _, n := range planNodes(t, raw) {
		require.False(t, n["Node Type"] == "Seq Scan" && n["Relation Name"] == "jobs", "queue_health scans jobs:\n%s", raw)
		if ix, ok := n["Index Name"].(string); ok {
			used[ix] = true
			rows, _ := n["Actual Rows"].(float64)
			loops, _ := n["Actual Loops"].(float64)
			read += rows * loops
		}
	}
	require.True(t, used["jobs_ready_pick_idx"], "queue_health does not probe jobs_ready_pick_idx:\n%s", raw)
	// 412 ready jobs in 4 queues: the probes return a handful of entries.
	require.Less(t, read, 40.0, "queue_health reads one index entry per ready job:\n%s", raw)

	stats, err := QueueHealth(ctx, pool, QueueHealthParams{})
	require.NoError(t, err)
	require.Len(t, stats, 4)
	var ready int64
	for _, s := range stats {
		ready += s.ReadyTotal()
		require.Equal(t, s.ReadyTotal(), s.Ready)
		require.True(t, s.ReadyExact())
		require.InDelta(t, 9900, s.DoneApprox, 2000)
	}
	require.EqualValues(t, 40000/97, ready)

	// QueueCounts: the same counts from the counters, with a plan (custom
	// or generic: it has no parameter) that holds no node reading jobs.
	counts, err := QueueCounts(ctx, pool)
	require.NoError(t, err)
	require.Len(t, counts, len(stats))
	for i, c := range counts {
		s := stats[i]
		require.Equal(t, QueueCount{s.Queue, s.ReadyTotal(), s.Running, s.Dead, s.DoneApprox}, c)
	}
	raw = []byte(strings.Join(explainPrepared(t, conn, "queue_counts_plan", "queue_counts", "(FORMAT JSON)", ""), "\n"))
	for _, n := range planNodes(t, raw) {
		require.NotEqual(t, "jobs", n["Relation Name"], "queue_counts reads jobs:\n%s", raw)
	}
}

// TestHotStatementPlans: the engine's hot statements probe indexes only,
// never the table, with custom and with generic plans, on statistics taken
// while nothing ran (the case that tempts the planner into scanning the
// whole running index); the fenced batch updates probe the primary key,
// and a claim with a cursor starts its index scan at the cursor.
func TestHotStatementPlans(t *testing.T) {
	t.Parallel()
	pool := historyPool(t)
	ids := make([]string, 200)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	idArray := "'{" + strings.Join(ids, ",") + "}'"
	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for _, c := range []struct {
			name, args string
			want, not  []string
		}{
			{name: "job_claim", args: "('p1', 10, 'w', 60000, NULL, NULL, NULL, false)", want: []string{"jobs_ready_pick_idx"}},
			{name: "job_claim", args: "('p1', 10, 'w', 60000, 0, now(), 500, false)", want: []string{"ROW(available_at, id) >"}},
			{name: "job_reap", args: "(100, 20, NULL)"},
			{name: "job_reap", args: "(100, 20, now() - interval '1 minute')"},
			{name: "queue_done_recent", args: "('p1', 10000)", want: []string{"jobs_done_id_idx"}},
			{name: "dead_letter_requeue", args: "('{}', 'p1', '', NULL, NULL, 10, false)"},
			{name: "dead_letter_class_list", args: "('{}', 'p1', '', NULL, NULL, 50)"},
			// Its only read of jobs is the window of recent deaths, through
			// an index of dead jobs only. With none dead here, the planner
			// may pick either of two empty dead-only indexes (their costs
			// tie, and the statistics' sample breaks the tie); the plan
			// tests on a dead-letter storm pin jobs_dead_finished_idx.
			{name: "dead_letter_class_stats", args: "(900, 10000, 200)", want: []string{"using jobs_dead_"}},
			{name: "job_ack_many", args: "(" + idArray + ", " + idArray + ", 'w')",
				want: []string{"Index Scan using jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_renew_many", args: "(" + idArray + ", " + idArray + ", 'w', 1000)",
				want: []string{"Index Scan using jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			// The fenced single-job transitions probe the primary key: with
			// `status = 'running'` the planner took jobs_running_lease_idx
			// with the id as its condition, a walk of the whole index, which
			// behind a pinned xmin horizon holds an entry for every lease
			// taken since (a release took 108-217 ms at 6-10 M dead tuples).
			{name: "job_ack", args: "(1, 'w', 1)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_release", args: "(1, 'w', 1, true)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_renew", args: "(1, 'w', 1, 1000)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_postpone", args: "(1, 'w', 1, 1000)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_fail", args: "(1, 'w', 1, 1000, 'e', 'c', false, 20)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "job_complete", args: "(1, 'w', 1, 0)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
			{name: "lease_expire", args: "(1)", want: []string{"jobs_pkey"}, not: []string{"jobs_running_lease_idx"}},
		} {
			stmt := fmt.Sprintf("plan_%s_%s_%d", c.name, mode, len(c.args))
			plan := strings.Join(explainPrepared(t, conn, stmt, c.name, "", c.args), "\n")
			require.NotContains(t, plan, "Seq Scan on jobs", "%s %s:\n%s", c.name, mode, plan)
			for _, w := range c.want {
				require.Contains(t, plan, w, "%s %s:\n%s", c.name, mode, plan)
			}
			for _, n := range c.not {
				require.NotContains(t, plan, n, "%s %s:\n%s", c.name, mode, plan)
			}
		}
	})
}

func TestStatsCollector(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	enqueueT(t, pool, EnqueueParams{Queue: "sc", Kind: "k"})
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewStatsCollector(pool)))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP queues_jobs Jobs per queue and status (done is not counted).
# TYPE queues_jobs gauge
queues_jobs{queue="sc",status="dead"} 0
queues_jobs{queue="sc",status="ready"} 1
queues_jobs{queue="sc",status="running"} 0
`), "queues_jobs"))
}

// TestBatchPlansWithoutStatistics: the statements that take a batch of job
// or outbox ids probe an index once per id whatever the statistics say. On
// tables never analyzed (a fresh install that bulk-loaded its backlog), and
// for a worker name the statistics have never seen, the planner takes the
// owner's leased rows for about one row; told the batch's size it then
// scanned them all and compared every row with every id (a join filter:
// 150-500 ms for a batch of 1,000 among 200,000 rows, where the probes take
// 10).
func TestBatchPlansWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, "ALTER TABLE jobs SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "ALTER TABLE outbox_events SET (autovacuum_enabled = false)")
	require.NoError(t, err)
	ps := slices.Repeat([]EnqueueParams{{Queue: "fresh", Kind: "noop"}}, 60000)
	_, err = EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: "fresh", Limit: 1000, Owner: "w", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 1000)
	_, err = pool.Exec(ctx, `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload)
		SELECT 't', 'order', g::text, 'created', '{}' FROM generate_series(1, 60000) g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, sqlText("outbox_claim"), 1000, "r", 60000)
	require.NoError(t, err)
	var events []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT array_agg(id::text ORDER BY id) FROM outbox_events
		WHERE state = 'inflight' AND lease_owner = 'r'`).Scan(&events))
	require.Len(t, events, 1000)
	var analyzed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_statistic
		WHERE starelid IN ('jobs'::regclass, 'outbox_events'::regclass)`).Scan(&analyzed))
	require.Zero(t, analyzed, "the tables must have no statistics for this test")

	ids := make([]string, 900)
	for i := range ids {
		ids[i] = strconv.FormatInt(jobs[i].ID, 10)
	}
	jobIDs := "'{" + strings.Join(ids, ",") + "}'"
	eventIDs := "'{" + strings.Join(events[:900], ",") + "}'"
	gens := "array_fill(1::bigint, ARRAY[900])"
	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for name, args := range map[string]string{
			"job_ack_many":          "(" + jobIDs + ", " + gens + ", 'w')",
			"job_renew_many":        "(" + jobIDs + ", " + gens + ", 'w', 60000)",
			"job_ack_confirm":       "(" + jobIDs + ", " + gens + ")",
			"outbox_mark_accepted":  "('r', " + eventIDs + ", " + gens + ")",
			"outbox_mark_published": "('r', " + eventIDs + ", " + gens + ")",
			"outbox_release":        "('r', " + eventIDs + ", " + gens + ")",
			"outbox_renew":          "('r', " + eventIDs + ", " + gens + ", 60000)",
			"outbox_reschedule": "('r', " + eventIDs + ", " + gens + ", array_fill(0::bigint, ARRAY[900]), " +
				"array_fill('e'::text, ARRAY[900]), 0, array_fill(false, ARRAY[900]))",
		} {
			plan := strings.Join(explainPrepared(t, conn, "fresh_"+name+"_"+mode, name, "", args), "\n")
			require.Regexp(t, `Index Cond: \(id = [a-z]+\.id\)`, plan, "%s %s: one probe per id:\n%s", name, mode, plan)
			for _, not := range []string{"Seq Scan on", "Join Filter", "Hash Join"} {
				require.NotContains(t, plan, not, "%s %s:\n%s", name, mode, plan)
			}
		}
	})
}

// TestClaimPlanLargeBacklog: with a large backlog the planner must still
// update the claimed rows by primary key, not hash-join the table (it cannot
// size a LIMIT taken from a subquery).
func TestClaimPlanLargeBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	ps := slices.Repeat([]EnqueueParams{{Queue: "big", Kind: "noop"}}, 50000)
	_, err := EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "VACUUM (ANALYZE) jobs")
	require.NoError(t, err)
	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for _, name := range []string{"job_claim", "job_reap"} {
			args := "('big', 10, 'w', 60000, NULL, NULL, NULL, false)"
			if name == "job_reap" {
				args = "(100, 20, NULL)"
			}
			plan := strings.Join(explainPrepared(t, conn, "big_"+name+"_"+mode, name, "", args), "\n")
			require.NotContains(t, plan, "Seq Scan on jobs", "%s %s:\n%s", name, mode, plan)
		}
	})
}

// TestJobListUnfinished: the unfinished jobs come oldest first, each state
// chosen alone or together (due and scheduled are both ready, told apart
// by available_at), never a done or dead job, and the keyset continues
// after the last id of a page.
func TestJobListUnfinished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	done := enqueueT(t, tx, EnqueueParams{Queue: "u", Kind: "k"})
	running := enqueueT(t, tx, EnqueueParams{Queue: "u", Kind: "k"})
	due := enqueueT(t, tx, EnqueueParams{Queue: "u", Kind: "k"})
	later := enqueueT(t, tx, EnqueueParams{Queue: "u", Kind: "k", RunAt: time.Now().Add(time.Hour)})
	_, err := tx.Exec(ctx, `INSERT INTO jobs (queue, kind, status, error_class, finished_at) VALUES ('u', 'k', 'dead', 'x', now())`)
	require.NoError(t, err)
	enqueueT(t, tx, EnqueueParams{Queue: "other", Kind: "k"})
	_, err = tx.Exec(ctx, `UPDATE jobs SET status = 'done', finished_at = now() WHERE id = $1`, done.ID)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE jobs SET status = 'running', started_at = now(), lease_owner = 'w',
		lease_until = now() + interval '1 minute' WHERE id = $1`, running.ID)
	require.NoError(t, err)

	ids := func(p JobListUnfinishedParams) []int64 {
		t.Helper()
		p.Queue = "u"
		jobs, err := JobListUnfinished(ctx, tx, p)
		require.NoError(t, err)
		var out []int64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	require.Equal(t, []int64{running.ID, due.ID, later.ID}, ids(JobListUnfinishedParams{Running: true, Due: true, Scheduled: true}))
	require.Equal(t, []int64{running.ID, due.ID}, ids(JobListUnfinishedParams{Running: true, Due: true}))
	require.Equal(t, []int64{running.ID}, ids(JobListUnfinishedParams{Running: true}))
	require.Equal(t, []int64{due.ID}, ids(JobListUnfinishedParams{Due: true}))
	require.Equal(t, []int64{later.ID}, ids(JobListUnfinishedParams{Scheduled: true}))
	require.Empty(t, ids(JobListUnfinishedParams{}))
	first := ids(JobListUnfinishedParams{Running: true, Due: true, Scheduled: true, Limit: 2})
	require.Equal(t, []int64{running.ID, due.ID}, first)
	require.Equal(t, []int64{later.ID}, ids(JobListUnfinishedParams{Running: true, Due: true, Scheduled: true, AfterID: first[1]}))

	jobs, err := JobListUnfinished(ctx, tx, JobListUnfinishedParams{Queue: "u", Running: true})
	require.NoError(t, err)
	require.NotNil(t, jobs[0].StartedAt, "running for needs started_at")
	require.NotNil(t, jobs[0].LeaseUntil)
}
