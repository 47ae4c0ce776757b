package diagnostics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// burnXIDs commits n transactions that each take a transaction ID.
func burnXIDs(t *testing.T, c *pgx.Conn, n int) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Exec(ctx, `CREATE OR REPLACE PROCEDURE burn_xids(n int) LANGUAGE plpgsql AS $$
		BEGIN FOR i IN 1..n LOOP PERFORM txid_current(); COMMIT; END LOOP; END $$`)
	require.NoError(t, err)
	_, err = c.Exec(ctx, "CALL burn_xids($1)", n)
	require.NoError(t, err)
}

// awaitFinding runs findings rounds until one has a finding of code that
// match accepts (any, when match is nil), and returns it.
func awaitFinding(t *testing.T, d *diagnostics.Diagnostics, code string, within time.Duration, match func(findings.Finding) bool) findings.Finding {
	t.Helper()
	var f findings.Finding
	eventually(t, within, func() (bool, string) {
		rep, err := findings.Run(context.Background(), d)
		require.NoError(t, err)
		for _, x := range findingsWith(rep, code) {
			if match == nil || match(x) {
				f = x
				return true, ""
			}
		}
		return false, strings.Join(codes(rep), "; ")
	})
	return f
}

// requireNoFinding runs a findings round on d and fails the test if it has a
// finding of code; why says why none is expected.
func requireNoFinding(t *testing.T, d *diagnostics.Diagnostics, code, why string) {
	t.Helper()
	rep, err := findings.Run(context.Background(), d)
	require.NoError(t, err)
	require.Empty(t, findingsWith(rep, code), "%s: %v", why, codes(rep))
}

// A database whose oldest unfrozen transaction ID has gone the threshold's
// fraction of the way to the wraparound limit is a finding naming the
// database and its oldest tables, with autovacuum_freeze_max_age in the
// evidence. The ages are real: 30,000 transactions are committed after the
// database was created, and the threshold is set just below that.
func TestWraparoundFindingNamesDatabaseAndOldestTables(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "xid-burner")
	_, err := c.Exec(ctx, "CREATE TABLE wrap_victim (id int)")
	require.NoError(t, err)
	burnXIDs(t, c, 30_000)
	var db string
	var age int64
	require.NoError(t, c.QueryRow(ctx, "SELECT current_database(), age(datfrozenxid) FROM pg_database WHERE datname = current_database()").Scan(&db, &age))
	require.GreaterOrEqual(t, age, int64(30_000))

	th := diagnostics.DefaultThresholds()
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	_, ok := findingFor(rep, findings.CodeWraparound, "database", db)
	require.False(t, ok, "the default threshold is far above %d: %v", age, codes(rep))

	require.NoError(t, findings.SetThresholdFlag(&th, fmt.Sprintf("vacuum.wraparound=%.8f", 25_000.0/diagnostics.WraparoundLimit)))
	d.SetThresholds(th)
	rep, err = findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeWraparound, "database", db)
	require.True(t, ok, "%v", codes(rep))
	require.Equal(t, findings.SeverityWarning, f.Severity)
	require.GreaterOrEqual(t, f.Subject["xid_age"].(int64), int64(30_000))
	require.Contains(t, f.Title, "transaction ID wraparound")
	require.Contains(t, f.Evidence, "autovacuum_freeze_max_age 200000000: the anti-wraparound vacuum is not due yet")
	require.Equal(t, "/runbook/verification", f.Runbook)

	// The oldest tables named are this database's five oldest, as the
	// wraparound check lists them.
	rows, err := diagnostics.Wraparound(ctx, c, 0)
	require.NoError(t, err)
	var want []string
	for _, r := range rows {
		if r.Kind == "table" {
			require.Equal(t, db, r.Database)
			want = append(want, r.Name)
		}
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, f.Subject["oldest_tables"])
	require.Contains(t, f.Evidence, want[0]+" (xid age")
}

// Half way to the limit is critical; a multixact age larger than the
// transaction ID age names multixact wraparound and its own
// autovacuum_multixact_freeze_max_age. Ages of hundreds of millions cannot
// be staged in a test, so this evaluates a round holding those rows.
func TestWraparoundSeverityAndMultixact(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	r := diagnostics.Round{At: time.Now(), Wraparound: []diagnostics.WraparoundAge{
		{Kind: "database", Database: "app", Name: "app", XIDAge: 1_200_000_000, MXIDAge: 10, FreezeMaxAge: 200_000_000, MultixactFreezeMaxAge: 400_000_000},
		{Kind: "database", Database: "other", Name: "other", XIDAge: 1000, MXIDAge: 700_000_000, FreezeMaxAge: 200_000_000, MultixactFreezeMaxAge: 400_000_000},
		{Kind: "database", Database: "young", Name: "young", XIDAge: 300_000_000, MXIDAge: 0, FreezeMaxAge: 200_000_000, MultixactFreezeMaxAge: 400_000_000},
	}}
	fs := findings.Evaluate(r, th)
	got := map[string]findings.Finding{}
	for _, f := range fs {
		if f.Code == findings.CodeWraparound {
			got[f.Subject["database"].(string)] = f
		}
	}
	require.Len(t, got, 2, "young is 14%% of the way: %v", fs)
	require.Equal(t, findings.SeverityCritical, got["app"].Severity)
	require.Contains(t, got["app"].Evidence, "overdue by 1000000000")
	require.Equal(t, findings.SeverityWarning, got["other"].Severity)
	require.Contains(t, got["other"].Title, "multixact wraparound")
	require.Contains(t, got["other"].Evidence, "autovacuum_freeze_max_age 400000000")
}

// A key claimed and never completed is a finding naming the oldest key and
// how many are stuck; keys claimed recently or completed are not counted.
func TestIdempotencyStuckFinding(t *testing.T) {
	ctx, url, db := freshPool(t)
	_, err := db.Exec(ctx, `INSERT INTO idempotency_requests (scope, idempotency_key, request_hash, state, response_code, response_body, created_at, locked_until) VALUES
		('api', 'oldest-claim', '\x00', 'processing', NULL, NULL, now() - interval '40 minutes', now() - interval '39 minutes'),
		('api', 'old-claim', '\x00', 'processing', NULL, NULL, now() - interval '20 minutes', now() - interval '19 minutes'),
		('api', 'fresh-claim', '\x00', 'processing', NULL, NULL, now(), now() + interval '1 minute'),
		('api', 'done', '\x00', 'completed', 200, '{}', now() - interval '50 minutes', NULL)`)
	require.NoError(t, err)
	d := open(t, url, diagnostics.Config{})
	f, _ := onlyFinding(t, d, findings.CodeIdempotencyStuck, "the fresh claim and the completed key are not stuck")
	require.EqualValues(t, 2, f.Subject["count"])
	require.Equal(t, "oldest-claim", f.Subject["key"])
	require.Equal(t, "api", f.Subject["scope"])
	require.Greater(t, f.Subject["age_seconds"].(float64), 2300.0)
	require.Contains(t, f.Title, "2 idempotency keys stuck")
	require.Equal(t, "/runbook/entry", f.Runbook)

	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, "idempotency.stuck=1h"))
	d.SetThresholds(th)
	requireNoFinding(t, d, findings.CodeIdempotencyStuck, "nothing is an hour old")
}

// A running job whose lease is renewed but which has run far longer than
// the latest done jobs of its kind is a finding naming the job; a job of a
// kind with no history, and one running for a usual time, are not.
func TestLongRunningJobPerKind(t *testing.T) {
	ctx, url, db := freshPool(t)
	// Thirty resize jobs that ran two seconds each, finished the way an
	// ack finishes them (the statement records their run times), at two
	// seconds exactly: a busy machine may pause between the statements.
	_, err := db.Exec(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at)
		SELECT 'media', 'resize', 'running', 'worker-1', now() + interval '30 seconds', clock_timestamp() - interval '2 seconds'
		FROM generate_series(1, 30)`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE jobs SET status = 'done', started_at = statement_timestamp() - interval '2 seconds',
		finished_at = statement_timestamp(), lease_owner = NULL, lease_until = NULL WHERE kind = 'resize'`)
	require.NoError(t, err)
	running := func(kind string, ran time.Duration) int64 {
		var id int64
		require.NoError(t, db.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at, attempts)
			VALUES ('media', $1, 'running', 'worker-7', now() + interval '30 seconds', now() - $2::interval, 1) RETURNING id`, kind, ran).Scan(&id))
		return id
	}
	stuck := running("resize", 10*time.Minute)
	usual := running("resize", 1*time.Second)
	unknown := running("transcode", 20*time.Minute)

	d := open(t, url, diagnostics.Config{})
	f, rep := onlyFinding(t, d, findings.CodeLongRunningJob, "only the stuck resize")
	require.Equal(t, stuck, f.Subject["job_id"])
	require.Equal(t, "resize", f.Subject["kind"])
	require.Equal(t, "worker-7", f.Subject["lease_owner"])
	require.InDelta(t, 2.0, f.Subject["usual_seconds"].(float64), 0.11)
	require.Contains(t, f.Evidence, "latest 30 done jobs")
	require.Equal(t, "/runbook/rb-f", f.Runbook)
	for _, id := range []int64{usual, unknown} {
		_, ok := findingFor(rep, findings.CodeLongRunningJob, "job_id", id)
		require.False(t, ok, "job %d: %v", id, codes(rep))
	}
	require.Empty(t, findingsWith(rep, findings.CodeExpiredLeases), "the leases are renewed")

	// Above the floor but under the factor: 10 minutes is 300 times 2s; a
	// factor of 400 leaves it out.
	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, "jobs.long_running=400"))
	d.SetThresholds(th)
	requireNoFinding(t, d, findings.CodeLongRunningJob, "every job is under the raised factor")
}

// Checkpoints requested because WAL filled max_wal_size, not timed, are
// checkpoint pressure, measured between two rounds: a dedicated server with
// a small max_wal_size and an hour's checkpoint_timeout writes WAL until
// the second round sees at least two requested checkpoints.
func TestCheckpointPressureFromRequestedCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, conn := smallWALPrimary(t, map[string]string{"checkpoint_timeout": "1h"})
	d := open(t, primary.URL("postgres"), diagnostics.Config{})
	first := d.Round(ctx)
	require.NotNil(t, first.Checkpointer, "%+v", first.Unavailable)
	require.Nil(t, first.Checkpoints, "one read is no window")
	requireNoFinding(t, d, findings.CodeCheckpoints, "nothing written yet")

	// Five times max_wal_size, in a bounded number of writes: the
	// checkpointer is asked for a checkpoint every time WAL reaches it.
	for i := 0; i < 20; i++ {
		writeWAL(t, conn, 8<<20)
	}
	f := awaitFinding(t, d, findings.CodeCheckpoints, 60*time.Second, nil)
	require.GreaterOrEqual(t, f.Subject["requested"].(int64), int64(2))
	require.EqualValues(t, 0, f.Subject["timed"])
	require.EqualValues(t, 32<<20, f.Subject["max_wal_size"])
	require.Contains(t, f.Evidence, "checkpoint_timeout 1h00m")
	require.Equal(t, "/runbook/resources", f.Runbook)
}

// A query on a standby canceled by replay (a lock conflict: the primary
// truncates a table the standby's transaction reads, and the standby waits
// for nobody) is a finding on that standby, counted between two rounds.
// A snapshot conflict is staged the same way in production, by VACUUM, but
// needs the primary's cleanup to race the standby's snapshot; the lock
// conflict is deterministic.
func TestStandbyConflictCanceledQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, nil)
	standby := testdb.Standby(t, primary, map[string]string{
		"max_standby_streaming_delay": "0",
		"hot_standby_feedback":        "off",
	}, "standby-conflicts")
	writer := connect(t, primary.URL("postgres"), "writer")
	_, err := writer.Exec(ctx, "CREATE TABLE conflicted (id int); INSERT INTO conflicted VALUES (1)")
	require.NoError(t, err)
	reader := connect(t, standby.URL("postgres"), "standby-reader")
	eventually(t, 30*time.Second, func() (bool, string) {
		var n int
		err := reader.QueryRow(ctx, "SELECT count(*) FROM conflicted").Scan(&n)
		return err == nil && n == 1, fmt.Sprint(err)
	})

	th := diagnostics.DefaultThresholds()
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: &th, StandbyURLs: []string{standby.URL("postgres")}})
	first := d.Round(ctx)
	require.Empty(t, first.StandbyConflicts, "one read is no window: %+v", first.Unavailable)

	_, err = reader.Exec(ctx, "BEGIN; SELECT * FROM conflicted")
	require.NoError(t, err)
	_, err = writer.Exec(ctx, "TRUNCATE conflicted")
	require.NoError(t, err)

	f := awaitFinding(t, d, findings.CodeStandbyConflicts, 30*time.Second, nil)
	require.GreaterOrEqual(t, f.Subject["lock"].(int64), int64(1))
	require.GreaterOrEqual(t, f.Subject["canceled"].(int64), int64(1))
	require.Contains(t, f.Evidence, "postgres 1")
	require.Equal(t, "/runbook/rb-j", f.Runbook)
	_, err = reader.Exec(ctx, "SELECT 1")
	require.Error(t, err, "the standby's transaction was ended by replay")

	// Nothing new canceled: the next window counts nothing once it has
	// moved past the conflict.
	th.StandbyConflictWindow = time.Millisecond
	d.SetThresholds(th)
	d.Round(ctx)
	d.Round(ctx)
	requireNoFinding(t, d, findings.CodeStandbyConflicts, "no conflict since the last round")
}

// Engine errors a worker reported in its heartbeat within the window are a
// finding per SQLSTATE: a disk full (53100) on claims and renewals is
// critical and names the workers and operations; an error older than the
// window is not counted. The rows are what the engine's heartbeat writes.
func TestEngineErrorsFromHeartbeats(t *testing.T) {
	ctx, url, db := freshPool(t)
	now := time.Now().UTC()
	full := "ERROR: could not extend file \"base/16384/16390\": No space left on device (SQLSTATE 53100)"
	errs := func(list ...queues.EngineError) string {
		b, err := json.Marshal(list)
		require.NoError(t, err)
		return string(b)
	}
	for _, w := range []struct {
		id   string
		errs string
	}{
		{"w-a", errs(
			queues.EngineError{At: now.Add(-10 * time.Minute), Op: "ack", SQLState: "40001", Error: "serialization failure"},
			queues.EngineError{At: now.Add(-20 * time.Second), Op: "claim", SQLState: "53100", Error: full},
			queues.EngineError{At: now.Add(-10 * time.Second), Op: "renew", SQLState: "53100", Error: full})},
		{"w-b", errs(queues.EngineError{At: now.Add(-5 * time.Second), Op: "claim", SQLState: "53100", Error: full})},
		{"w-c", errs()},
	} {
		_, err := db.Exec(ctx, `INSERT INTO workers (id, host, pid, queues, concurrency, version, recent_errors)
			VALUES ($1, 'host', 1, '{}', 1, 'test', $2::jsonb)`, w.id, w.errs)
		require.NoError(t, err)
	}
	d := open(t, url, diagnostics.Config{})
	f, _ := onlyFinding(t, d, findings.CodeEngineErrors, "the serialization failure is older than the window")
	require.Equal(t, findings.SeverityCritical, f.Severity)
	require.Equal(t, "53100", f.Subject["sqlstate"])
	require.Equal(t, 3, f.Subject["count"])
	require.Equal(t, []string{"w-a", "w-b"}, f.Subject["workers"])
	require.Equal(t, map[string]int{"claim": 2, "renew": 1}, f.Subject["ops"])
	require.Contains(t, f.Title, "The engine is failing: claim 53100")
	require.Contains(t, f.Evidence, "No space left on device")
	require.Contains(t, f.Evidence, "the database's disk is full")

	workers := d.Workers(ctx)
	require.NoError(t, workers.Err)
	for _, w := range workers.Rows {
		if w.ID == "w-b" {
			require.Contains(t, w.LastError(), "claim 53100: ")
		}
	}

	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, "engine.errors=1h"))
	d.SetThresholds(th)
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	fs := findingsWith(rep, findings.CodeEngineErrors)
	require.Len(t, fs, 2, "an hour's window takes the serialization failure in: %v", codes(rep))
	require.Equal(t, "40001", fs[1].Subject["sqlstate"], "critical first")
	require.Equal(t, findings.SeverityWarning, fs[1].Severity)
}

// A slot that keeps WAL makes pg_wal grow past twice max_wal_size: a
// finding that names the slot, before the WAL disk fills. A role without
// pg_monitor cannot list pg_wal: the check says so and nothing is guessed.
func TestWALDirSizeNamesTheSlotHoldingIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, conn := primaryWithSlot(t, nil, "wal_keeper")
	d := open(t, primary.URL("postgres"), diagnostics.Config{})
	requireNoFinding(t, d, findings.CodeWALDir, "nothing retained yet")

	// The slot keeps everything written from now on: three times
	// max_wal_size, in a bounded number of writes.
	for i := 0; i < 12; i++ {
		writeWAL(t, conn, 8<<20)
	}
	f := awaitFinding(t, d, findings.CodeWALDir, 30*time.Second, nil)
	require.GreaterOrEqual(t, f.Subject["wal_bytes"].(int64), int64(64<<20))
	require.Equal(t, "wal_keeper", f.Subject["slot_name"])
	require.Contains(t, f.Evidence, "slot wal_keeper (inactive) retains")
	require.Equal(t, "/runbook/rb-b", f.Runbook)

	_, err := conn.Exec(ctx, "CREATE ROLE wal_peeker LOGIN")
	require.NoError(t, err)
	cfg, err := pgx.ParseConfig(primary.URL("postgres"))
	require.NoError(t, err)
	cfg.User = "wal_peeker"
	peeker, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { peeker.Close(context.Background()) })
	w, err := diagnostics.WALDir(ctx, peeker)
	require.NoError(t, err)
	require.False(t, w.Readable)
	require.Nil(t, w.Bytes)
	require.Empty(t, findings.Evaluate(diagnostics.Round{WALDir: &w}, diagnostics.DefaultThresholds()))
	// The slots query reads the size of pg_wal the same way: without
	// pg_monitor the slots still come back, with no size of pg_wal.
	var version int
	require.NoError(t, peeker.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version))
	slots, err := diagnostics.ReplicationSlots(ctx, peeker, version)
	require.NoError(t, err)
	require.Len(t, slots, 1)
	require.Nil(t, slots[0].PGWALBytes)
}

// A kind's usual run time is read through job_kind_runs_kind_id_idx, not
// by scanning every kind's recorded run times.
func TestLongRunningJobsUsesItsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	_, err := db.Exec(ctx, `INSERT INTO job_kind_runs (kind, seconds)
		SELECT 'k' || (g % 20), ARRAY[2.0, 2.5] FROM generate_series(1, 50000) AS g;
		INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at)
		SELECT 'q', 'k' || g, 'running', 'w', now() + interval '1 minute', now() - interval '1 hour' FROM generate_series(1, 5) AS g;
		ANALYZE jobs; ANALYZE job_kind_runs`)
	require.NoError(t, err)
	q, ok := diagnostics.SQLFor(diagnostics.CheckLongRunningJobs, 0)
	require.True(t, ok)
	rows, err := db.Query(ctx, "EXPLAIN "+q, 300.0, 20, 5.0)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(plan), "job_kind_runs_kind_id_idx", "%s", strings.Join(plan, "\n"))
}

// A kind's usual run time is read once per kind, not once per running job:
// with 300 jobs of one kind running (a fleet stuck on one handler), the
// statement descends job_kind_runs_kind_id_idx once.
func TestLongRunningJobsReadsEachKindOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	_, err := db.Exec(ctx, `INSERT INTO job_kind_runs (kind, seconds)
		SELECT 'k' || (g % 20), ARRAY[2.0] FROM generate_series(1, 20000) AS g;
		INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at)
		SELECT 'q', 'k1', 'running', 'w', now() + interval '1 minute', now() - interval '1 hour' FROM generate_series(1, 300);
		ANALYZE jobs; ANALYZE job_kind_runs`)
	require.NoError(t, err)
	q, ok := diagnostics.SQLFor(diagnostics.CheckLongRunningJobs, 0)
	require.True(t, ok)
	var raw []byte
	require.NoError(t, db.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q, 300.0, 20, 5.0).Scan(&raw))
	var doc []struct{ Plan map[string]any }
	require.NoError(t, json.Unmarshal(raw, &doc))
	loops := -1.0
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		if n["Index Name"] == "job_kind_runs_kind_id_idx" {
			loops = n["Actual Loops"].(float64)
		}
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(doc[0].Plan)
	require.Equal(t, 1.0, loops, "job_kind_runs_kind_id_idx is descended once per running job, not per kind:\n%s", raw)
}
