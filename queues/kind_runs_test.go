package queues

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// kindRuns returns, per kind, the run times job_kind_runs holds, newest
// row first.
func kindRuns(t *testing.T, db DBTX) map[string][]float64 {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT kind, s FROM job_kind_runs, unnest(seconds) AS s ORDER BY id DESC`)
	require.NoError(t, err)
	out := map[string][]float64{}
	var kind string
	var s float64
	_, err = pgx.ForEachRow(rows, []any{&kind, &s}, func() error {
		out[kind] = append(out[kind], s)
		return nil
	})
	require.NoError(t, err)
	return out
}

// An ack records the run time of every job it finishes, per kind, in one
// row per kind; what a statement does to jobs that were already done, or
// to jobs it does not finish, records nothing.
func TestAcksRecordKindRunTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	// Five resize jobs that started 2 s ago and three thumbnail jobs that
	// started 7 s ago, claimed by w1.
	_, err := db.Exec(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, started_at)
		SELECT 'media', CASE WHEN g <= 5 THEN 'resize' ELSE 'thumbnail' END, 'running', 'w1', now() + interval '1 minute', 1,
		       clock_timestamp() - CASE WHEN g <= 5 THEN interval '2 seconds' ELSE interval '7 seconds' END
		FROM generate_series(1, 8) AS g`)
	require.NoError(t, err)
	var ids, gens []int64
	rows, err := db.Query(ctx, `SELECT id, lease_generation FROM jobs ORDER BY id`)
	require.NoError(t, err)
	var id, gen int64
	_, err = pgx.ForEachRow(rows, []any{&id, &gen}, func() error {
		ids, gens = append(ids, id), append(gens, gen)
		return nil
	})
	require.NoError(t, err)

	acked, err := JobAckMany(ctx, db, "w1", ids, gens)
	require.NoError(t, err)
	require.Len(t, acked, 8)
	runs := kindRuns(t, db)
	require.Len(t, runs, 2, "%v", runs)
	require.Len(t, runs["resize"], 5)
	require.Len(t, runs["thumbnail"], 3)
	for _, s := range runs["resize"] {
		require.InDelta(t, 2.0, s, 0.5)
	}
	for _, s := range runs["thumbnail"] {
		require.InDelta(t, 7.0, s, 0.5)
	}
	// Exactly the seconds between the rows' start and finish, as extract
	// gives them.
	rows, err = db.Query(ctx, `SELECT extract(epoch FROM finished_at - started_at)::float8 FROM jobs WHERE kind = 'resize'`)
	require.NoError(t, err)
	exact, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	require.NoError(t, err)
	require.ElementsMatch(t, exact, runs["resize"])
	var statements int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM job_kind_runs`).Scan(&statements))
	require.Equal(t, 2, statements, "one row per kind for the statement")

	// Touching done jobs later (a note on them) and failing a running one
	// record nothing.
	_, err = db.Exec(ctx, `UPDATE jobs SET last_error = 'annotated' WHERE status = 'done'`)
	require.NoError(t, err)
	var failID int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, started_at)
		VALUES ('media', 'resize', 'running', 'w1', now() + interval '1 minute', 1, now()) RETURNING id`).Scan(&failID))
	_, err = db.Exec(ctx, `UPDATE jobs SET status = 'dead', finished_at = clock_timestamp() WHERE id = $1`, failID)
	require.NoError(t, err)
	after := kindRuns(t, db)
	require.Len(t, after["resize"], 5)
	require.Len(t, after["thumbnail"], 3)
	require.Len(t, after, 2)
}

// The prune keeps, for each kind it is given, the rows that hold the
// kind's newest 200 run times, and leaves other kinds alone.
func TestKindRunTimesPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	// Per kind, 30 rows of 10 run times each: row r holds the value r, so
	// the newest rows hold the highest values.
	_, err := db.Exec(ctx, `INSERT INTO job_kind_runs (kind, seconds)
		SELECT k, array_fill(r::float8, ARRAY[10])
		FROM unnest(ARRAY['a', 'b']) AS k, generate_series(1, 30) AS r
		ORDER BY r, k`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `SELECT job_kind_runs_prune(ARRAY['a'])`)
	require.NoError(t, err)
	runs := kindRuns(t, db)
	require.Len(t, runs["a"], 200, "the newest 200 run times of a are kept")
	require.Equal(t, 11.0, runs["a"][len(runs["a"])-1], "rows 11 to 30 are the newest 20")
	require.Len(t, runs["b"], 300, "b was not pruned")

	// A row that straddles the 200th run time stays whole.
	_, err = db.Exec(ctx, `INSERT INTO job_kind_runs (kind, seconds) VALUES ('b', array_fill(99::float8, ARRAY[195]))`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `SELECT job_kind_runs_prune(ARRAY['b'])`)
	require.NoError(t, err)
	require.Len(t, kindRuns(t, db)["b"], 205)
}

// Ack statements keep job_kind_runs bounded without anyone calling the
// prune: a kind acked one job at a time for 1,000 statements keeps its
// newest 200 run times plus the rows added since the last prune (about one
// statement in 64 prunes: 700 statements without one are a chance of one
// in 60,000).
func TestKindRunTimesStayBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	// The jobs are made in one statement: the acks are what is counted.
	rows, err := db.Query(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, started_at)
		SELECT 'q', 'k', 'running', 'w', now() + interval '5 minutes', 1, now() FROM generate_series(1, 1000) RETURNING id`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < len(ids) && time.Now().Before(deadline); i++ {
		_, err := JobAckMany(ctx, db, "w", []int64{ids[i]}, []int64{1})
		require.NoError(t, err)
	}
	require.Equal(t, len(ids), testdb.Count(t, db, "SELECT count(*) FROM jobs WHERE status = 'done'"), "every ack finished its job")
	var n int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM job_kind_runs`).Scan(&n))
	require.Less(t, n, 900, "1,000 one-job acks left %d rows", n)
	require.GreaterOrEqual(t, n, 200, "the acks recorded their run times")
}

// Under REPEATABLE READ the prune does nothing (its snapshot may predate
// another prune's deletes, which would fail the caller's transaction); the
// rows wait for a READ COMMITTED statement.
func TestKindRunTimesPruneOnlyUnderReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	_, err := db.Exec(ctx, `INSERT INTO job_kind_runs (kind, seconds) SELECT 'a', ARRAY[1.0::float8] FROM generate_series(1, 300)`)
	require.NoError(t, err)
	tx, err := db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT job_kind_runs_prune(ARRAY['a'])`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Len(t, kindRuns(t, db)["a"], 300)
	_, err = db.Exec(ctx, `SELECT job_kind_runs_prune(ARRAY['a'])`)
	require.NoError(t, err)
	require.Len(t, kindRuns(t, db)["a"], 200)
}
