package migrations_test

import (
	"context"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// schemaVersion reads the version tern recorded.
func schemaVersion(t *testing.T, conn *pgx.Conn) int32 {
	t.Helper()
	var v int32
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT version FROM "+migrations.VersionTable).Scan(&v))
	return v
}

// A migration that fails half-way is rolled back whole: 017 creates its
// table, index and prune function before it meets a function that is in
// the way, and none of them stays; the schema stays at 16.
func TestFailedMigrationLeavesThePreviousVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.Connect(t, testdb.EmptyURL(t), "migrate")
	require.NoError(t, migrations.UpTo(ctx, conn, 16))
	_, err := conn.Exec(ctx, `CREATE FUNCTION job_kind_runs_record() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`)
	require.NoError(t, err)

	st, err := migrations.UpWith(ctx, conn, migrations.Options{Attempts: 1})
	t.Log(err)
	require.Error(t, err)
	require.Contains(t, err.Error(), "017_job_kind_runs.sql")
	require.Contains(t, err.Error(), "the schema stays at version 16")
	require.Equal(t, int32(16), st.Current)
	require.Equal(t, int32(16), schemaVersion(t, conn))
	for _, obj := range []string{"job_kind_runs", "job_kind_runs_kind_id_idx"} {
		var got *string
		require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass($1)::text`, obj).Scan(&got))
		require.Nil(t, got, "%s, created by the failed migration before it failed, was rolled back", obj)
	}
	require.Zero(t, testdb.Count(t, conn, `SELECT count(*) FROM pg_proc WHERE proname = 'job_kind_runs_prune'`))
	require.Equal(t, 1, testdb.Count(t, conn, `SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_done_kind_idx'`),
		"the index 017 drops is still there")
}

// 016 changes the dead-letter counters and a trigger on jobs. A worker
// that has changed a job in an open transaction and then kills it writes
// the counters (through the triggers) while holding jobs: 016 must wait
// for it on jobs before it holds any counter, or the two deadlock. With a
// single try and no lock timeout, the migration only passes when it took
// its locks in that order.
func TestMigrationTakesJobsBeforeItsCounters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := testdb.EmptyURL(t)
	conn := testdb.Connect(t, url, "migrate")
	require.NoError(t, migrations.UpTo(ctx, conn, 15))
	var id int64
	require.NoError(t, conn.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, attempts, started_at, lease_owner, lease_until)
		VALUES ('q', 'k', 'running', 1, now(), 'w1', now() + interval '1 minute') RETURNING id`).Scan(&id))

	worker := testdb.Connect(t, url, "worker")
	// The migration, not the worker, is the one PostgreSQL fails if they
	// deadlock: the worker checks last.
	_, err := worker.Exec(ctx, "SET deadlock_timeout = '60s'")
	require.NoError(t, err)
	_, err = worker.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = worker.Exec(ctx, "UPDATE jobs SET lease_until = now() + interval '2 minutes' WHERE id = $1", id)
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := migrations.UpWith(ctx, conn, migrations.Options{Attempts: 1})
		done <- err
	}()
	testdb.WaitBackend(t, testdb.Connect(t, url, "watch"), "migrate", "wait_event_type = 'Lock'")

	_, err = worker.Exec(ctx, `UPDATE jobs SET status = 'dead', error_class = 'boom', last_error = 'boom',
		finished_at = now(), lease_owner = NULL, lease_until = NULL WHERE id = $1`, id)
	require.NoError(t, err, "the worker's kill")
	_, err = worker.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done, "016 beside the worker")
	require.Equal(t, migrations.Binary().Max, schemaVersion(t, conn))
	require.Equal(t, 1, testdb.Count(t, conn,
		`SELECT count(*) FROM dead_letter_counts WHERE queue = 'q' AND error_class = 'boom' AND dead = 1 AND sample_job_id = $1`, id))
}

// A migration that loses a deadlock is rolled back and tried again, as one
// that timed out on a lock is. A report holds the dead-letter counts open
// while 016 waits for them with jobs locked, then reads jobs: PostgreSQL
// fails the migration. The report's read of jobs can only return while it
// is still open if the migration's first try was rolled back; the second
// try then applies it.
func TestMigrationRetriesADeadlock(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := testdb.EmptyURL(t)
	conn := testdb.Connect(t, url, "migrate")
	require.NoError(t, migrations.UpTo(ctx, conn, 15))
	// The report checks for deadlocks last, so the migration is the one
	// failed; 3s leaves the report time to ask for jobs on a busy machine.
	_, err := conn.Exec(ctx, "SET deadlock_timeout = '3s'")
	require.NoError(t, err)
	report := testdb.Connect(t, url, "report")
	_, err = report.Exec(ctx, "SET deadlock_timeout = '60s'")
	require.NoError(t, err)
	_, err = report.Exec(ctx, "BEGIN; SELECT count(*) FROM dead_letter_counts")
	require.NoError(t, err)

	type result struct {
		st  migrations.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := migrations.UpWith(ctx, conn, migrations.Options{Attempts: 2, Pause: 50 * time.Millisecond})
		done <- result{st, err}
	}()
	testdb.WaitBackend(t, testdb.Connect(t, url, "watch"), "migrate", "wait_event_type = 'Lock'")

	_, err = report.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err, "the report's read of jobs, once the migration lost the deadlock")
	_, err = report.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err, "the second try")
	require.Equal(t, r.st.Latest, r.st.Current)
}

// Check accepts a schema from MinSchema to the newest migration this binary
// carries, and a newer one while no newer migration is a contract; it
// refuses the others naming both versions and what to do. Up leaves a
// newer schema as it is.
func TestCheckAcceptsARangeOfVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.Connect(t, testdb.URL(t), "check")
	b := migrations.Binary()
	require.Equal(t, int32(migrations.MinSchema), b.Min)
	set := func(version, contract int32, name string) {
		t.Helper()
		_, err := conn.Exec(ctx, "UPDATE "+migrations.VersionTable+" SET version = $1, contract_version = $2, contract_name = $3",
			version, contract, name)
		require.NoError(t, err)
	}

	for _, v := range []int32{b.Min, b.Max} {
		set(v, 20, "020_lock_episodes.sql")
		st, err := migrations.Check(ctx, conn)
		require.NoError(t, err, "version %d", v)
		require.Equal(t, v, st.Current)
		require.NotNil(t, st.MigratedAt, "version %d: when the schema was last migrated (022 set it)", v)
	}

	set(b.Min-1, 20, "020_lock_episodes.sql")
	_, err := migrations.Check(ctx, conn)
	require.ErrorIs(t, err, migrations.ErrSchemaBehind)
	require.Contains(t, err.Error(), fmt.Sprintf("the database is at version %d and this binary needs %d to %d", b.Min-1, b.Min, b.Max))

	set(b.Max+2, b.Max, "last.sql")
	st, err := migrations.Check(ctx, conn)
	require.NoError(t, err, "two expand migrations beyond this binary")
	require.Equal(t, b.Max+2, st.Current)
	st, err = migrations.Up(ctx, conn)
	require.NoError(t, err, "up leaves a newer schema of expands as it is")
	require.Equal(t, b.Max+2, st.Current)

	contract := fmt.Sprintf("%03d_drop_something.sql", b.Max+1)
	set(b.Max+2, b.Max+1, contract)
	_, err = migrations.Check(ctx, conn)
	t.Log(err)
	require.ErrorIs(t, err, migrations.ErrSchemaAhead)
	require.Contains(t, err.Error(), fmt.Sprintf("the database is at version %d and this binary knows up to %d; migration %s (version %d) is a contract",
		b.Max+2, b.Max, contract, b.Max+1))
	require.Contains(t, err.Error(), fmt.Sprintf("run a console that knows version %d or later", b.Max+1))
	_, err = migrations.Up(ctx, conn)
	require.ErrorIs(t, err, migrations.ErrSchemaAhead, "up refuses it too, and applies nothing")
	require.Equal(t, b.Max+2, schemaVersion(t, conn))
}

// withMigrations is the embedded migrations plus extra (file name to SQL).
func withMigrations(t *testing.T, extra map[string]string) fs.FS {
	t.Helper()
	fsys := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		fsys[path] = &fstest.MapFile{Data: b}
		return err
	}))
	for name, sql := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(sql)}
	}
	return fsys
}

// A contract migration records itself in the version table as it is
// applied, and an expand after it does not move the record: a console
// that carries fewer migrations then refuses the schema naming it.
func TestContractMigrationRecordsItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := testdb.Connect(t, testdb.EmptyURL(t), "migrate")
	next := migrations.Binary().Max + 1
	contract := fmt.Sprintf("%03d_drop_column.sql", next)
	expand := fmt.Sprintf("%03d_add_table.sql", next+1)
	fsys := withMigrations(t, map[string]string{
		contract: "-- a test contract\n-- compat: contract\nALTER TABLE workers DROP COLUMN in_flight_by_queue",
		expand:   "-- compat: expand\nCREATE TABLE upgrade_test_added (id int)",
	})
	st, err := migrations.UpWithFS(ctx, conn, migrations.Options{Attempts: 1}, fsys)
	require.NoError(t, err)
	require.Equal(t, next+1, st.Current)
	var version int32
	var name string
	require.NoError(t, conn.QueryRow(ctx, "SELECT contract_version, contract_name FROM "+migrations.VersionTable).Scan(&version, &name))
	require.Equal(t, next, version)
	require.Equal(t, contract, name)

	_, err = migrations.Check(ctx, conn)
	require.ErrorIs(t, err, migrations.ErrSchemaAhead)
	require.Contains(t, err.Error(), "migration "+contract)
}

// From migrations.CompatSince on, a migration that does not say whether
// older consoles live with it, or says something else than expand or
// contract, stops the migrator before it applies anything.
func TestMigrationMustDeclareItsCompat(t *testing.T) {
	t.Parallel()
	require.NoError(t, migrations.LoadFS(migrations.FS()), "the embedded migrations")
	name := fmt.Sprintf("%03d_new.sql", migrations.Binary().Max+1)
	for sql, want := range map[string]string{
		"-- adds a table\nCREATE TABLE x (id int)":              "says nothing of older consoles: add a header line `-- compat: expand`",
		"-- compat: additive\nCREATE TABLE x (id int)":          "says `-- compat: additive`: use expand",
		"CREATE TABLE x (id int);\n-- compat: expand\nSELECT 1": "says nothing of older consoles",
	} {
		err := migrations.LoadFS(withMigrations(t, map[string]string{name: sql}))
		require.ErrorContains(t, err, name+" "+want, sql)
	}
}
