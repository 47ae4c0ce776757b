package queues

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// runLogDDL creates the fault drills' record of what ran. start_log gets a
// row from startLogHandler, in its own autocommit insert, before each
// attempt does its work; done_log gets a row from a trigger on jobs in the
// very transaction that marks a job done, so it holds every ack that
// committed and nothing else.
const runLogDDL = `
CREATE TABLE start_log (
    job_id     bigint      NOT NULL,
    attempt    integer     NOT NULL,
    generation bigint      NOT NULL,
    owner      text        NOT NULL,
    claimed_at timestamptz NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE done_log (
    job_id     bigint      NOT NULL,
    attempt    integer     NOT NULL,
    generation bigint      NOT NULL,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION done_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO done_log (job_id, attempt, generation) VALUES (NEW.id, NEW.attempts, NEW.lease_generation);
    RETURN NULL;
END $$;
CREATE TRIGGER done_log AFTER UPDATE OF status ON jobs
    FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION done_log();`

// createRunLog creates start_log and done_log on db.
func createRunLog(t *testing.T, db DBTX) {
	t.Helper()
	_, err := db.Exec(context.Background(), runLogDDL)
	require.NoError(t, err)
}

// startLogHandler records each attempt in start_log (job, attempt, lease
// generation, owner, when its claim took the lease) with an insert of its
// own that commits before the work starts, then sleeps for the payload's
// ms: an attempt cut short by a fault still leaves its row behind. The
// insert may wait out the fault itself (the server is down), so its time
// can fall after the fault while the claim's fell before it.
func startLogHandler(pool *pgxpool.Pool) HandlerFunc {
	return func(ctx context.Context, j *Job) error {
		owner := ""
		if j.LeaseOwner != nil {
			owner = *j.LeaseOwner
		}
		if _, err := pool.Exec(ctx, "INSERT INTO start_log (job_id, attempt, generation, owner, claimed_at) VALUES ($1, $2, $3, $4, $5)",
			j.ID, j.Attempts, j.LeaseGeneration, owner, j.StartedAt); err != nil {
			return err
		}
		return testSleep(ctx, j)
	}
}

// snapshotDurableSQL records, in table durable, the jobs done now with
// their finished_at and the time of the snapshot. Taken right after a
// fault, it is the set of completions that had committed before it.
const snapshotDurableSQL = `CREATE TABLE durable AS
	SELECT id, finished_at, clock_timestamp() AS seen_at FROM jobs WHERE status = 'done'`

// snapshotDurable runs snapshotDurableSQL on db.
func snapshotDurable(t *testing.T, db DBTX) {
	t.Helper()
	_, err := db.Exec(context.Background(), snapshotDurableSQL)
	require.NoError(t, err)
}

// requireRanOnce checks a drill's run log once every job is done:
//
//  1. each of the n jobs is done, and its completion committed exactly once;
//  2. no job started again after its completion committed, and every job
//     in the durable snapshot is still done as it was then and never
//     started after it;
//  3. no lease generation started twice; a job started at most twice, and
//     then its first start has no committed ack, its second runs under a
//     newer lease, and interrupted says the first was cut short by the
//     fault: an SQL condition on (f) and (s), the first and second
//     start_log rows, with args as its parameters.
//
// It returns how many jobs started twice.
func requireRanOnce(t *testing.T, db DBTX, n int, interrupted string, args ...any) int {
	t.Helper()
	ctx := context.Background()
	ids := func(q string, args ...any) []int64 {
		t.Helper()
		rows, err := db.Query(ctx, q, args...)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return got
	}

	var done, acks, acked int
	require.NoError(t, db.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&done))
	require.NoError(t, db.QueryRow(ctx, "SELECT count(*), count(DISTINCT job_id) FROM done_log").Scan(&acks, &acked))
	require.Equal(t, n, done, "every job is done")
	require.Equal(t, n, acked, "every job's completion committed")
	require.Empty(t, ids("SELECT job_id FROM done_log GROUP BY job_id HAVING count(*) > 1 ORDER BY 1"),
		"jobs whose completion committed more than once")

	require.Empty(t, ids(`SELECT DISTINCT s.job_id FROM start_log s JOIN done_log d USING (job_id)
		WHERE s.at > d.at ORDER BY 1`), "jobs started again after their completion committed")
	require.Empty(t, ids(`SELECT d.id FROM durable d JOIN jobs j USING (id)
		WHERE j.status <> 'done' OR j.finished_at IS DISTINCT FROM d.finished_at
		   OR EXISTS (SELECT FROM start_log s WHERE s.job_id = d.id AND s.at > d.seen_at)
		ORDER BY 1`), "jobs done before the fault that ran or finished again after it")

	require.Empty(t, ids(`SELECT DISTINCT job_id FROM start_log GROUP BY job_id, generation
		HAVING count(*) > 1 ORDER BY 1`), "jobs that started twice under one lease")
	require.Empty(t, ids("SELECT job_id FROM start_log GROUP BY job_id HAVING count(*) > 2 ORDER BY 1"),
		"jobs started more than twice")
	bad := ids(`WITH twice AS (
			SELECT job_id, array_agg(s ORDER BY at) AS starts FROM start_log s
			GROUP BY job_id HAVING count(*) = 2
		)
		SELECT job_id FROM twice, LATERAL (SELECT starts[1] AS f, starts[2] AS s) p
		WHERE NOT ((s).generation > (f).generation
		       AND NOT EXISTS (SELECT FROM done_log d WHERE d.job_id = twice.job_id AND d.generation = (f).generation)
		       AND `+interrupted+`)
		ORDER BY 1`, args...)
	if len(bad) > 0 {
		logRuns(t, db, bad)
	}
	require.Empty(t, bad, "jobs started twice whose first start was not cut short by the fault, or had its ack committed")
	var twice int
	require.NoError(t, db.QueryRow(ctx,
		"SELECT count(*) FROM (SELECT FROM start_log GROUP BY job_id HAVING count(*) = 2) x").Scan(&twice))
	return twice
}

// logRuns logs what start_log and done_log say of the jobs ids: the
// evidence a failed drill needs to tell a double run from a slow ack.
func logRuns(t *testing.T, db DBTX, ids []int64) {
	t.Helper()
	rows, err := db.Query(context.Background(), `
		SELECT 'start', job_id, attempt, generation, owner, claimed_at, at FROM start_log WHERE job_id = ANY($1)
		UNION ALL
		SELECT 'done', job_id, attempt, generation, '', NULL, at FROM done_log WHERE job_id = ANY($1)
		ORDER BY 2, 7`, ids)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var what, owner string
		var id, gen int64
		var attempt int
		var at time.Time
		var claimed *time.Time
		require.NoError(t, rows.Scan(&what, &id, &attempt, &gen, &owner, &claimed, &at))
		claim := ""
		if claimed != nil {
			claim = " claimed at " + claimed.Format("15:04:05.000000")
		}
		t.Logf("job %d: %s attempt %d generation %d owner %q%s at %s", id, what, attempt, gen, owner, claim, at.Format("15:04:05.000000"))
	}
	require.NoError(t, rows.Err())
}

// requireNoStaleAckOfDone fails for a "stale ack refused" line in logs
// (a client's JSON log) about an attempt whose completion committed: an
// ack whose reply was lost must be recognised as done.
func requireNoStaleAckOfDone(t *testing.T, db DBTX, logs string) {
	t.Helper()
	var jobs, attempts []int64
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `"stale ack refused`) {
			continue
		}
		var l struct {
			Job     int64 `json:"job"`
			Attempt int64 `json:"attempt"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l), "%s", line)
		jobs, attempts = append(jobs, l.Job), append(attempts, l.Attempt)
	}
	rows, err := db.Query(context.Background(), `SELECT d.job_id FROM done_log d
		JOIN unnest($1::bigint[], $2::integer[]) AS a(job_id, attempt) USING (job_id, attempt)`, jobs, attempts)
	require.NoError(t, err)
	wrong, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Empty(t, wrong, "acks that committed were logged as stale")
	if len(jobs) > 0 {
		t.Logf("%d stale acks logged, none of a completion that committed", len(jobs))
	}
}
