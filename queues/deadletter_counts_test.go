package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// countsMatch checks that two queries returning (key, value) rows agree:
// a counter table against a count of the jobs themselves.
func countsMatch(t *testing.T, db DBTX, step, want, got string) {
	t.Helper()
	ctx := context.Background()
	read := func(q string) map[string]string {
		rows, err := db.Query(ctx, q)
		require.NoError(t, err, step)
		out := map[string]string{}
		for rows.Next() {
			var key, value string
			require.NoError(t, rows.Scan(&key, &value), step)
			out[key] = value
		}
		require.NoError(t, rows.Err(), step)
		return out
	}
	require.Equal(t, read(want), read(got), "after %s", step)
}

// deadCountsMatch checks dead_letter_counts against a count of the dead
// jobs themselves, group by group, and each group's first and last death
// and sample (deadEdgesMatch).
func deadCountsMatch(t *testing.T, db DBTX, step string) {
	t.Helper()
	countsMatch(t, db, step,
		`SELECT queue || '|' || coalesce(error_class, ''), count(*)::text FROM jobs WHERE status = 'dead' GROUP BY 1`,
		`SELECT queue || '|' || error_class, dead::text FROM dead_letter_counts`)
	deadEdgesMatch(t, db, step)
}

// TestDeadLetterCountsFollowJobs: every way a job enters or leaves 'dead'
// (the engine's failure path, a cancel, a requeue, a retry, a class change,
// a delete, a rollback, a truncate, many workers killing jobs of one class
// at once) keeps dead_letter_counts equal to the dead jobs, and a group
// whose last job leaves is gone from the table.
func TestDeadLetterCountsFollowJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	deadCountsMatch(t, pool, "nothing")

	a, b := errors.New("upstream refused"), errors.New("bad payload")
	var as []int64
	for range 4 {
		as = append(as, deadJob(t, pool, "c1", a))
	}
	bid := deadJob(t, pool, "c1", b)
	deadJob(t, pool, "c2", b)
	deadCountsMatch(t, pool, "jobs dying through JobFail")

	j := enqueueT(t, pool, EnqueueParams{Queue: "c1", Kind: "k"})
	_, err := JobCancelTx(ctx, pool, j.ID)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a cancel")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // before the pool closes
	ids, err := DeadLetterRequeueTx(ctx, tx, DeadLetterFilter{Queue: "c1", ErrorClass: ErrorClass(a)}, 2, false)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	deadCountsMatch(t, tx, "a requeue, inside its transaction")
	require.NoError(t, tx.Rollback(ctx))
	deadCountsMatch(t, pool, "a rolled-back requeue")

	_, err = DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{Queue: "c1", ErrorClass: ErrorClass(a)}, 3, false)
	require.NoError(t, err)
	_, err = JobRetryNowTx(ctx, pool, bid)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a requeue and a retry")
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_counts WHERE queue = 'c1' AND error_class = $1`,
		ErrorClass(b)).Scan(&left))
	require.Zero(t, left, "a group whose last dead job left is deleted")

	_, err = pool.Exec(ctx, `UPDATE jobs SET error_class = NULL WHERE id = $1`, as[3])
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a dead job losing its class")
	_, err = pool.Exec(ctx, `UPDATE jobs SET status = 'dead', error_class = 'other' WHERE queue = 'c2'`)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "dead jobs changing class")
	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind, status, error_class, finished_at)
		SELECT 'c3', 'k', 'dead', 'bulk ' || (g % 3), now() FROM generate_series(1, 30) AS g`)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a bulk insert of dead jobs")
	_, err = pool.Exec(ctx, `DELETE FROM jobs WHERE queue = 'c3' AND error_class = 'bulk 1'`)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a delete")

	// Twenty workers kill jobs of one class at the same time.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "c4", Kind: "k", MaxAttempts: 1})
			if err != nil {
				errs <- err
				return
			}
			jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: "c4", Limit: 1, Owner: "w", Lease: time.Minute})
			if err != nil || len(jobs) != 1 {
				errs <- fmt.Errorf("claim %d: %v (%d jobs)", j.ID, err, len(jobs))
				return
			}
			_, err = JobFail(ctx, pool, JobFailParams{ID: jobs[0].ID, Owner: "w", Generation: jobs[0].LeaseGeneration, Err: a})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	deadCountsMatch(t, pool, "twenty concurrent deaths in one class")
	tot, err := DeadLetterTotals(ctx, pool, "c4")
	require.NoError(t, err)
	require.Equal(t, DeadLetterTotal{Dead: 20, Groups: 1}, tot)

	_, err = pool.Exec(ctx, `TRUNCATE jobs`)
	require.NoError(t, err)
	deadCountsMatch(t, pool, "a truncate")
}

// scalePool is a database shaped like a dead-letter storm on a table with
// history, small enough for a test: 60,000 jobs, a tenth dead in 300
// classes over 10 queues, a ready backlog, a few running, the rest done;
// analyzed, so the planner sees the shape. Each test gets a clone of a
// template filled once per binary.
func scalePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	return testdb.Pool(t, scaleDatabase.URL(t))
}

var scaleDatabase = testdb.Template{Name: "scale", Build: func(t testing.TB, url string) {
	ctx := context.Background()
	pool := testdb.Pool(t, url)
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, attempts, error_class, last_error, finished_at)
		 SELECT 'sq' || (g % 10), 'k', 'dead', 1, 'class ' || (g % 300), 'boom', now() - g * interval '1 second'
		 FROM generate_series(1, 6000) AS g`,
		`INSERT INTO jobs (queue, kind, status, attempts, finished_at)
		 SELECT 'sq' || (g % 10), 'k', 'done', 1, now() FROM generate_series(1, 52000) AS g`,
		`INSERT INTO jobs (queue, kind, status, attempts, lease_owner, lease_until, lease_generation)
		 SELECT 'sq' || (g % 10), 'k', 'running', 1, 'w', now() + interval '1 hour', 1 FROM generate_series(1, 50) AS g`,
		`INSERT INTO jobs (queue, kind) SELECT 'sq' || (g % 10), 'k' FROM generate_series(1, 2000) AS g`,
		// ANALYZE samples 300 rows per unit of the largest statistics
		// target: at 10000 the sample is the whole table, so the
		// statistics, and the plans the tests check, are the same at
		// every run (a random sample of 30,000 rows now and then tipped
		// dead_letter_class_stats onto another index).
		`ALTER TABLE jobs ALTER COLUMN finished_at SET STATISTICS 10000`,
		`VACUUM (ANALYZE) jobs`,
		`ANALYZE dead_letter_counts`,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err)
	}
}}

// inEachPlanMode runs check on one connection of pool twice: as a custom
// plan (what pgx's first executions get) and as a generic one (what a
// prepared statement may switch to).
func inEachPlanMode(t *testing.T, pool *pgxpool.Pool, check func(conn *pgxpool.Conn, mode string)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		_, err = conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		check(conn, mode)
	}
}

// explainPrepared prepares the statement sql/<name>.sql as stmt on conn and
// returns the lines of EXPLAIN options EXECUTE stmt args.
func explainPrepared(t *testing.T, conn *pgxpool.Conn, stmt, name, options, args string) []string {
	t.Helper()
	ctx := context.Background()
	_, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+sqlText(name))
	require.NoError(t, err, name)
	rows, err := conn.Query(ctx, "EXPLAIN "+options+" EXECUTE "+stmt+args)
	require.NoError(t, err, name)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err, name)
	return lines
}

// planNodes flattens an EXPLAIN (FORMAT JSON) plan into its nodes.
func planNodes(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var doc []struct {
		Plan map[string]any `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Len(t, doc, 1)
	var out []map[string]any
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		out = append(out, n)
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(doc[0].Plan)
	return out
}

// TestScaleStatementPlans: the console's reads that must stay cheap on a
// huge jobs table (the dead-letter views, the whole-class requeue preview,
// the queue list, the dead jobs list) never read jobs with a sequential
// scan, and use the index their header names, on a table whose statistics
// show a storm of dead letters behind a long history. Each runs with the
// arguments the console passes, as a custom plan (what pgx's first
// executions get) and as a generic one (what a prepared statement may
// switch to).
func TestScaleStatementPlans(t *testing.T) {
	t.Parallel()
	pool := scalePool(t)
	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for i, c := range []struct {
			name, args string
			// want are indexes the plan must use; generic plans may use
			// others (they cannot see the arguments), never a Seq Scan.
			want []string
			// customOnly: a statement whose optional filters are written
			// "$n = '' OR column = $n" has a generic plan that can use no
			// partial index; PostgreSQL keeps custom plans for it, since
			// the generic one costs far more.
			customOnly bool
			// counters: the statement answers from dead_letter_counts
			// alone, in every plan: it reads that table and never jobs,
			// so it costs the same for ten dead jobs or ten million.
			counters bool
		}{
			{"dead_letter_groups", "('', 200)", nil, false, true},
			{"dead_letter_groups", "('sq3', 200)", nil, false, true},
			{"dead_letter_class_stats", "(900, 10000, 200)", []string{"jobs_dead_finished_idx"}, false, false},
			{"dead_letter_totals", "('')", nil, false, true},
			{"dead_letter_totals", "('sq3')", nil, false, true},
			{"dead_letter_count", "('{}', 'sq3', 'class 3', NULL, NULL)", nil, false, false},          // dead_letter_counts; the jobs branch (never run here) may use either dead index
			{"dead_letter_class_list", "('{}', 'sq3', 'class 3', NULL, NULL, 50)", nil, false, false}, // jobs_dead_idx or jobs_dead_queue_class_id_idx
			{"dead_letter_sample", "('{}', 'sq3', 'class 3', NULL, NULL, 10)", nil, false, false},     // jobs_dead_idx or jobs_dead_queue_class_id_idx
			{"queue_health", "(10000)", []string{"jobs_ready_pick_idx"}, false, false},
			{"job_list", "('', '', 'dead', '', NULL, NULL, 0, 50)", []string{"jobs_dead_id_idx"}, true, false},
			{"job_list", "('', '', 'dead', 'class 3', NULL, NULL, 0, 50)", []string{"jobs_dead_class_id_idx"}, true, false},
			{"job_list", "('sq3', '', 'dead', 'class 3', NULL, NULL, 0, 50)", []string{"jobs_dead_queue_class_id_idx"}, true, false},
			{"job_list", "('', '', '', 'class 3', NULL, NULL, 0, 50)", []string{"jobs_error_class_id_idx"}, true, false},
			{"job_list", "('', '', 'done', '', NULL, NULL, 0, 50)", []string{"jobs_done_id_idx"}, true, false},
			// The unfinished jobs, oldest first: each branch reads its own
			// partial index, never the primary key from the oldest (done
			// and dead) rows up, in generic plans too.
			{"job_list_unfinished", "('', '', '', NULL, NULL, 0, 50, true, true, false)", []string{"jobs_running_lease_idx", "jobs_ready_pick_idx"}, false, false},
			{"job_list_unfinished", "('sq3', '', '', NULL, NULL, 59000, 50, true, true, true)", []string{"jobs_running_lease_idx", "jobs_ready_pick_idx"}, false, false},
			{"job_list_unfinished", "('', '', '', NULL, NULL, 0, 50, false, false, true)", []string{"jobs_ready_pick_idx"}, false, false},
			{"job_scheduled_count", "('', 10000)", []string{"jobs_ready_pick_idx"}, false, false},
		} {
			if c.customOnly && mode != "force_custom_plan" {
				continue
			}
			stmt := fmt.Sprintf("scale_plan_%d_%s", i, strings.TrimPrefix(mode, "force_"))
			raw := []byte(strings.Join(explainPrepared(t, conn, stmt, c.name, "(FORMAT JSON)", c.args), "\n"))
			used, read := map[string]bool{}, map[string]bool{}
			for _, n := range planNodes(t, raw) {
				require.False(t, n["Node Type"] == "Seq Scan" && n["Relation Name"] == "jobs",
					"%s%s (%s) reads jobs with a Seq Scan:\n%s", c.name, c.args, mode, raw)
				if ix, ok := n["Index Name"].(string); ok {
					used[ix] = true
				}
				if rel, ok := n["Relation Name"].(string); ok {
					read[rel] = true
				}
			}
			if c.counters {
				require.True(t, read["dead_letter_counts"] && !read["jobs"],
					"%s%s (%s) must answer from dead_letter_counts alone; it reads %v:\n%s", c.name, c.args, mode, read, raw)
			}
			if mode == "force_custom_plan" {
				for _, w := range c.want {
					require.True(t, used[w], "%s%s (%s) does not use %s:\n%s", c.name, c.args, mode, w, raw)
				}
			}
		}
	})
}

// TestDeadLetterCountOfAWholeClassReadsTheCounters: the requeue's count and
// class list of a queue and class alone (what an operator signs in a
// storm) equal the dead jobs it would move and read dead_letter_counts
// without touching jobs, so they cost the same for a class of ten or of a
// million; a filter the counters cannot answer (ids, a time range) counts
// the jobs.
func TestDeadLetterCountOfAWholeClassReadsTheCounters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := scalePool(t)
	since := time.Now().Add(-time.Hour)
	for _, f := range []DeadLetterFilter{
		{Queue: "sq3", ErrorClass: "class 3"}, {Queue: "sq3"}, {ErrorClass: "class 3"}, {},
		{Queue: "sq3", ErrorClass: "class 3", Since: &since}, {Queue: "sq4", ErrorClass: "class 3"},
	} {
		var want int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'dead'
			AND ($1 = '' OR queue = $1) AND ($2 = '' OR error_class = $2) AND ($3::timestamptz IS NULL OR finished_at >= $3)`,
			f.Queue, f.ErrorClass, f.Since).Scan(&want))
		got, err := DeadLetterCount(ctx, pool, f)
		require.NoError(t, err)
		require.Equal(t, want, got, "%+v", f)

		rows, err := pool.Query(ctx, `SELECT coalesce(error_class, ''), count(*) FROM jobs WHERE status = 'dead'
			AND ($1 = '' OR queue = $1) AND ($2 = '' OR error_class = $2) AND ($3::timestamptz IS NULL OR finished_at >= $3)
			GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 50`, f.Queue, f.ErrorClass, f.Since)
		require.NoError(t, err)
		wantClasses, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadLetterClassCount])
		require.NoError(t, err)
		classes, err := DeadLetterClassList(ctx, pool, f, 50)
		require.NoError(t, err)
		require.Equal(t, wantClasses, classes, "%+v", f)
	}

	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for i, c := range []struct {
			args      string
			readsJobs bool
		}{
			{"('{}', 'sq3', 'class 3', NULL, NULL)", false},
			{"('{}', '', '', NULL, NULL)", false},
			{"('{}', 'sq3', 'class 3', now() - interval '1 hour', NULL)", true},
		} {
			stmt := fmt.Sprintf("whole_class_%d_%s", i, strings.TrimPrefix(mode, "force_"))
			for _, q := range []struct{ name, args string }{{"dead_letter_count", c.args}, {"dead_letter_class_list", strings.TrimSuffix(c.args, ")") + ", 50)"}} {
				raw := []byte(strings.Join(explainPrepared(t, conn, stmt+"_"+q.name, q.name, "(ANALYZE, FORMAT JSON)", q.args), "\n"))
				readJobs := false
				for _, n := range planNodes(t, raw) {
					if n["Relation Name"] == "jobs" && n["Actual Loops"].(float64) > 0 {
						readJobs = true
					}
				}
				require.Equal(t, c.readsJobs, readJobs, "%s%s (%s) read jobs: %v\n%s", q.name, q.args, mode, readJobs, raw)
			}
		}
	})
}
