package queues

import (
	"context"
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

// deadEdgesMatch checks each class's first and last death and sample in
// dead_letter_counts against a fresh computation from the dead jobs: the
// earliest and latest finished_at, and the job with the latest finished_at
// (the highest id between equal times) with its error cut to 1,000
// characters.
func deadEdgesMatch(t *testing.T, db DBTX, step string) {
	t.Helper()
	countsMatch(t, db, step,
		`SELECT queue || '|' || coalesce(error_class, ''),
		        format('%s %s %s %s', min(finished_at), max(finished_at),
		               (array_agg(id ORDER BY finished_at DESC, id DESC) FILTER (WHERE finished_at IS NOT NULL))[1],
		               left((array_agg(last_error ORDER BY finished_at DESC, id DESC) FILTER (WHERE finished_at IS NOT NULL))[1], 1000))
		 FROM jobs WHERE status = 'dead' GROUP BY 1`,
		`SELECT queue || '|' || error_class,
		        format('%s %s %s %s', first_finished_at, last_finished_at, sample_job_id, sample_error)
		 FROM dead_letter_counts`)
}

// killAt makes job id dead in class with the given finished_at and error,
// in one statement on db.
func killAt(t *testing.T, db DBTX, id int64, class string, at time.Time, msg string) {
	t.Helper()
	_, err := db.Exec(context.Background(), `UPDATE jobs SET status = 'dead', error_class = $2, finished_at = $3, last_error = $4
		WHERE id = $1`, id, class, at, msg)
	require.NoError(t, err)
}

// TestDeadLetterEdgesFollowJobs: the first and last death and the sample
// kept in dead_letter_counts equal a fresh computation from the dead jobs
// after deaths (one at a time, in bulk with equal times, without a class),
// after requeueing the oldest and then the newest of a class, after a
// delete, an archive, a change of finished_at, a bulk requeue of a whole
// class (its row goes) and a truncate.
func TestDeadLetterEdgesFollowJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	a, b := errors.New("upstream refused"), errors.New("bad payload")
	for range 3 {
		deadJob(t, pool, "e1", a)
	}
	deadJob(t, pool, "e1", b)
	deadJob(t, pool, "e2", a)
	deadEdgesMatch(t, pool, "jobs dying through JobFail")

	_, err := pool.Exec(ctx, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
		SELECT 'e3', 'k', 'dead', 'bulk ' || (g % 3), 'boom ' || g || repeat('x', 2000), timestamptz '2026-01-01' + (g / 4) * interval '1 hour'
		FROM generate_series(1, 40) AS g`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind, status, last_error, finished_at)
		VALUES ('e3', 'k', 'dead', 'no class', now()), ('e3', 'k', 'dead', 'no class either', now() - interval '1 hour')`)
	require.NoError(t, err)
	deadEdgesMatch(t, pool, "a bulk insert of dead jobs, ties in finished_at, long errors, no class")

	oldestAndNewest := func(queue, class string) (int64, int64) {
		var oldest, newest int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT
			(SELECT id FROM jobs WHERE status = 'dead' AND queue = $1 AND coalesce(error_class, '') = $2 ORDER BY finished_at, id LIMIT 1),
			(SELECT id FROM jobs WHERE status = 'dead' AND queue = $1 AND coalesce(error_class, '') = $2 ORDER BY finished_at DESC, id DESC LIMIT 1)`,
			queue, class).Scan(&oldest, &newest))
		return oldest, newest
	}
	for _, c := range []struct{ queue, class string }{{"e1", ErrorClass(a)}, {"e3", "bulk 1"}, {"e3", ""}} {
		oldest, _ := oldestAndNewest(c.queue, c.class)
		ids, err := DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{IDs: []int64{oldest}}, 10, false)
		require.NoError(t, err)
		require.Equal(t, []int64{oldest}, ids)
		deadEdgesMatch(t, pool, "requeueing the oldest of "+c.queue+" "+c.class)
		_, newest := oldestAndNewest(c.queue, c.class)
		_, err = DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{IDs: []int64{newest}}, 10, false)
		require.NoError(t, err)
		deadEdgesMatch(t, pool, "requeueing the newest of "+c.queue+" "+c.class)
	}

	_, newest := oldestAndNewest("e3", "bulk 2")
	_, err = pool.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, newest)
	require.NoError(t, err)
	deadEdgesMatch(t, pool, "a delete of a class's newest")

	_, err = pool.Exec(ctx, `UPDATE jobs SET finished_at = finished_at - interval '1 year' WHERE id = $1`, newest-3)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE jobs SET last_error = 'rewritten' WHERE status = 'dead' AND queue = 'e3' AND error_class = 'bulk 0'`)
	require.NoError(t, err)
	deadEdgesMatch(t, pool, "dead jobs changing finished_at and last_error")

	// The archive moves the oldest finished jobs: here the first deaths.
	_, err = pool.Exec(ctx, sqlText("maintenance_archive_jobs"), 0, 5)
	require.NoError(t, err)
	deadEdgesMatch(t, pool, "an archive")

	ids, err := DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{Queue: "e3", ErrorClass: "bulk 0"}, 1000, false)
	require.NoError(t, err)
	require.NotEmpty(t, ids)
	deadEdgesMatch(t, pool, "a bulk requeue of a whole class")
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter_counts WHERE queue = 'e3' AND error_class = 'bulk 0'`).Scan(&left))
	require.Zero(t, left, "a class requeued whole is gone")

	_, err = pool.Exec(ctx, `TRUNCATE jobs`)
	require.NoError(t, err)
	deadEdgesMatch(t, pool, "a truncate")
	deadJob(t, pool, "e1", a)
	deadEdgesMatch(t, pool, "a death after a truncate")
}

// waitForLock waits until the backend pid waits on a lock.
func waitForLock(t *testing.T, pool *pgxpool.Pool, pid uint32) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(context.Background(),
			`SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		return err == nil && waiting
	}, 30*time.Second, 10*time.Millisecond, "backend %d never waited on a lock", pid)
}

// TestDeadLetterEdgesUnderConcurrentTransactions: two transactions change
// dead jobs of one class at once, the second waiting on the class's
// counter row until the first commits, in every order that matters: two
// deaths (the later one committing first, then last); a requeue of the
// class's newest while another transaction's newer death is uncommitted
// (the requeue's recount must see it once it commits); a death while a
// requeue of the newest is uncommitted; then eight workers killing and
// requeueing jobs of the class at once. The stored first and last death
// and sample end exact each time.
func TestDeadLetterEdgesUnderConcurrentTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []int64
	for range 8 {
		ids = append(ids, enqueueT(t, pool, EnqueueParams{Queue: "cc", Kind: "k"}).ID)
	}
	killAt(t, pool, ids[0], "x", base, "first")
	killAt(t, pool, ids[1], "x", base.Add(time.Hour), "second")
	deadEdgesMatch(t, pool, "two deaths")

	begin := func() (pgx.Tx, uint32) {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		var pid uint32
		require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
		return tx, pid
	}
	// second runs step in tx2 while tx1 holds the class's counter row,
	// waits until it blocks, commits tx1, then tx2.
	second := func(tx1, tx2 pgx.Tx, pid2 uint32, step func(tx pgx.Tx) error) {
		done := make(chan error, 1)
		go func() { done <- step(tx2) }()
		waitForLock(t, pool, pid2)
		require.NoError(t, tx1.Commit(ctx))
		require.NoError(t, <-done)
		require.NoError(t, tx2.Commit(ctx))
	}
	kill := func(id int64, at time.Time, msg string) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE jobs SET status = 'dead', error_class = 'x', finished_at = $2, last_error = $3
				WHERE id = $1`, id, at, msg)
			return err
		}
	}
	requeue := func(id int64) func(pgx.Tx) error {
		return func(tx pgx.Tx) error {
			_, err := DeadLetterRequeueTx(ctx, tx, DeadLetterFilter{IDs: []int64{id}}, 10, false)
			return err
		}
	}

	tx1, _ := begin()
	tx2, pid2 := begin()
	require.NoError(t, kill(ids[2], base.Add(3*time.Hour), "later, committed first")(tx1))
	second(tx1, tx2, pid2, kill(ids[3], base.Add(2*time.Hour), "earlier, committed last"))
	deadEdgesMatch(t, pool, "two concurrent deaths, the later committed first")

	tx1, _ = begin()
	tx2, pid2 = begin()
	require.NoError(t, kill(ids[4], base.Add(-time.Hour), "earliest, committed first")(tx1))
	second(tx1, tx2, pid2, kill(ids[5], base.Add(4*time.Hour), "latest, committed last"))
	deadEdgesMatch(t, pool, "two concurrent deaths, the later committed last")

	tx1, _ = begin()
	tx2, pid2 = begin()
	require.NoError(t, kill(ids[6], base.Add(5*time.Hour), "newer than the requeued, uncommitted")(tx1))
	second(tx1, tx2, pid2, requeue(ids[5]))
	deadEdgesMatch(t, pool, "a requeue of the newest behind an uncommitted newer death")

	tx1, _ = begin()
	tx2, pid2 = begin()
	require.NoError(t, requeue(ids[6])(tx1))
	second(tx1, tx2, pid2, kill(ids[7], base.Add(90*time.Minute), "a death behind an uncommitted requeue"))
	deadEdgesMatch(t, pool, "a death behind an uncommitted requeue of the newest")

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT dead FROM dead_letter_counts WHERE queue = 'cc' AND error_class = 'x'`).Scan(&n))
	require.Equal(t, 6, n)

	// Eight workers at once, each killing jobs of the class and requeueing
	// its dead jobs, in its own transactions.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "cc", Kind: "k"})
				if err == nil {
					_, err = pool.Exec(ctx, `UPDATE jobs SET status = 'dead', error_class = 'x', finished_at = clock_timestamp(),
						last_error = $2 WHERE id = $1`, j.ID, fmt.Sprintf("worker %d death %d", w, i))
				}
				if err == nil && i%2 == 1 {
					_, err = DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{Queue: "cc", ErrorClass: "x"}, 1, false)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	deadEdgesMatch(t, pool, "eight workers killing and requeueing in one class")
	deadCountsMatch(t, pool, "eight workers killing and requeueing in one class")
}

// TestDeadLetterGroupsReadNoJobs: the dead-letter groups (every queue and
// one queue) and the class stats outside the window's deaths read nothing
// of jobs but the window: their first and last deaths and samples come
// from dead_letter_counts, so no probe per class follows the depth of the
// jobs indexes. Each group's values equal a fresh computation from jobs.
func TestDeadLetterGroupsReadNoJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := scalePool(t)
	groups, err := DeadLetterGroups(ctx, pool, "")
	require.NoError(t, err)
	require.Len(t, groups, DeadLetterGroupLimit)
	for _, g := range groups[:20] {
		var want DeadLetterGroup
		require.NoError(t, pool.QueryRow(ctx, `SELECT queue, error_class, count(*), min(finished_at), max(finished_at),
			(array_agg(last_error ORDER BY finished_at DESC, id DESC))[1], (array_agg(id ORDER BY finished_at DESC, id DESC))[1]
			FROM jobs WHERE status = 'dead' AND queue = $1 AND error_class = $2 GROUP BY 1, 2`, g.Queue, g.ErrorClass).
			Scan(&want.Queue, &want.ErrorClass, &want.Count, &want.FirstSeen, &want.LastSeen, &want.SampleError, &want.SampleJobID))
		require.Equal(t, want.FirstSeen.UTC(), g.FirstSeen.UTC(), "%s %s", g.Queue, g.ErrorClass)
		require.Equal(t, want.LastSeen.UTC(), g.LastSeen.UTC(), "%s %s", g.Queue, g.ErrorClass)
		want.FirstSeen, want.LastSeen, g.FirstSeen, g.LastSeen = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		require.Equal(t, want, g)
	}
	// A one-second window: scalePool's newest death is a second old, so
	// every last death comes from the counters.
	stats, _, err := DeadLetterClassStatsAll(ctx, pool, DeadLetterStatsParams{Window: time.Second, MaxGroups: 40})
	require.NoError(t, err)
	require.Len(t, stats, 300)
	for i, g := range stats {
		var want time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT max(finished_at) FROM jobs WHERE status = 'dead' AND queue = $1 AND error_class = $2`,
			g.Queue, g.ErrorClass).Scan(&want))
		require.NotNil(t, g.LastFinishedAt, "group %d (%s %s)", i, g.Queue, g.ErrorClass)
		require.Equal(t, want.UTC(), g.LastFinishedAt.UTC(), "group %d (%s %s)", i, g.Queue, g.ErrorClass)
	}

	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		for i, c := range []struct {
			name, args string
			// window: the only index of jobs the statement may read.
			window string
		}{
			{"dead_letter_groups", "('', 200)", ""},
			{"dead_letter_groups", "('sq3', 200)", ""},
			{"dead_letter_class_stats", "(1, 10000, NULL)", "jobs_dead_finished_idx"},
			{"dead_letter_class_stats", "(900, 10000, 200)", "jobs_dead_finished_idx"},
		} {
			stmt := "no_jobs_" + strings.TrimPrefix(mode, "force_") + "_" + string(rune('a'+i))
			raw := []byte(strings.Join(explainPrepared(t, conn, stmt, c.name, "(ANALYZE, FORMAT JSON)", c.args), "\n"))
			for _, n := range planNodes(t, raw) {
				if n["Relation Name"] != "jobs" || n["Actual Loops"].(float64) == 0 {
					continue
				}
				require.True(t, c.window != "" && n["Index Name"] == c.window,
					"%s%s (%s) reads jobs through %v, not only the window's index %q:\n%s", c.name, c.args, mode, n["Index Name"], c.window, raw)
			}
		}
	})
}

// TestDeadLetterClassEdgesProbeBounded: the recount a leaving job costs
// (dead_letter_class_edges, run by the counting trigger for its class)
// reads each class's first and last death and sample in a few index
// entries, whatever the size of the class: jobs only through
// jobs_dead_idx (first and last) and jobs_dead_finished_idx (the jobs of
// the last instant), never a walk of the class.
func TestDeadLetterClassEdgesProbeBounded(t *testing.T) {
	t.Parallel()
	pool := scalePool(t)
	// Ten times bigger classes than scalePool's, so that a walk of one
	// shows.
	_, err := pool.Exec(context.Background(), `INSERT INTO jobs (queue, kind, status, attempts, error_class, last_error, finished_at)
		SELECT 'sq3', 'k', 'dead', 1, 'class 3', 'boom', now() - interval '2 days' - g * interval '1 second'
		FROM generate_series(1, 2000) AS g`)
	require.NoError(t, err)
	// The statistics count the bigger class: otherwise the plan depends on
	// whether autovacuum's ANALYZE has run since the insert, and with the
	// older statistics the planner may take the dead jobs' id index.
	_, err = pool.Exec(context.Background(), "ANALYZE jobs")
	require.NoError(t, err)
	inEachPlanMode(t, pool, func(conn *pgxpool.Conn, mode string) {
		ctx := context.Background()
		rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, FORMAT JSON)
			SELECT e.* FROM dead_letter_counts AS c CROSS JOIN LATERAL dead_letter_class_edges(c.queue, c.error_class) AS e
			WHERE c.queue = 'sq3' AND c.error_class = 'class 3'`)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		raw := []byte(strings.Join(lines, "\n"))
		read := 0.0
		for _, n := range planNodes(t, raw) {
			if n["Relation Name"] != "jobs" {
				continue
			}
			require.Contains(t, []any{"jobs_dead_idx", "jobs_dead_finished_idx"}, n["Index Name"], "%s:\n%s", mode, raw)
			removed, _ := n["Rows Removed by Filter"].(float64)
			read += (n["Actual Rows"].(float64) + removed) * n["Actual Loops"].(float64)
		}
		require.LessOrEqual(t, read, 3.0, "%s: jobs rows read for one class of 2,020\n%s", mode, raw)
	})
}
