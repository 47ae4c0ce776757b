package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
)

// The catalog-wide checks narrow themselves: on a database of 20,000
// tables their cost is the catalog rows they read. Each test counts, in
// one transaction, the rows a check read from a catalog table
// (the current transaction's own counters), so
// what it asserts is what the server did, not how long it took. Each runs
// the check once before counting: a session's first statement fills its
// catalog caches (index lookups of pg_class, pg_index, pg_depend...) that
// the next ones reuse.

// catalogRowsRead is how many rows of the catalog table rel tx has read so
// far, by sequential scan or through an index.
func catalogRowsRead(t *testing.T, tx pgx.Tx, rel string) int64 {
	t.Helper()
	var n int64
	// The functions behind pg_stat_xact_sys_tables, which itself reads
	// pg_class and pg_index.
	require.NoError(t, tx.QueryRow(context.Background(), `SELECT pg_stat_get_xact_tuples_returned($1::regclass)
		+ pg_stat_get_xact_tuples_fetched($1::regclass)`, rel).Scan(&n))
	return n
}

// A young database's tables are not read for wraparound: the database's
// own age bounds theirs, so pg_class is not scanned and only databases are
// listed; once its age reaches the bound the oldest tables are named.
func TestWraparoundReadsNoTableWhileTheDatabaseIsYoung(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "wrap-young")
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)

	from := diagnostics.WraparoundTablesFrom(diagnostics.DefaultThresholds())
	require.Greater(t, from, int64(1_000_000), "half of the finding's default age")
	_, err = diagnostics.Wraparound(ctx, tx, from)
	require.NoError(t, err)
	before := catalogRowsRead(t, tx, "pg_class")
	rows, err := diagnostics.Wraparound(ctx, tx, from)
	require.NoError(t, err)
	require.Equal(t, before, catalogRowsRead(t, tx, "pg_class"), "pg_class was read on a young database")
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Equal(t, "database", r.Kind, "%+v", r)
	}

	// From age 0 the tables are read and named (and the counter sees it).
	before = catalogRowsRead(t, tx, "pg_class")
	rows, err = diagnostics.Wraparound(ctx, tx, 0)
	require.NoError(t, err)
	require.Greater(t, catalogRowsRead(t, tx, "pg_class"), before)
	var tables int
	for _, r := range rows {
		if r.Kind == "table" {
			tables++
		}
	}
	require.Equal(t, 5, tables, "%+v", rows)
}

// Sequences are measured one by one through pg_depend's indexes: the
// statement reads pg_depend and pg_attrdef rows for its sequences only,
// never the whole of either.
func TestSequenceExhaustionReadsOnlyItsSequencesDependencies(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "seq-narrow")
	for _, q := range []string{
		"CREATE SEQUENCE narrow_seq AS bigint",
		"CREATE TABLE narrow_fed (id int4 NOT NULL DEFAULT nextval('narrow_seq'))",
		"SELECT setval('narrow_seq', 2000000000)",
		"CREATE TABLE narrow_owned (id serial, v text)",
		"INSERT INTO narrow_owned (v) VALUES ('x')",
		// A catalog with more column defaults than a fresh database's, and
		// statistics that count them: on a fresh one's hundred defaults a
		// scan of pg_attrdef is the planner's cheaper choice (PostgreSQL 18
		// takes it), which is not the big catalog this statement narrows on.
		`DO $$ BEGIN FOR i IN 1..400 LOOP
			EXECUTE format('CREATE TABLE narrow_pad%s (v int DEFAULT 1)', i);
		END LOOP; END $$`,
		"ANALYZE pg_attrdef, pg_depend",
	} {
		_, err := c.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	tx, err := c.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	var depends, defaults int64
	require.NoError(t, tx.QueryRow(ctx, "SELECT (SELECT count(*) FROM pg_depend), (SELECT count(*) FROM pg_attrdef)").Scan(&depends, &defaults))

	_, err = diagnostics.SequenceExhaustion(ctx, tx)
	require.NoError(t, err)
	d0, a0 := catalogRowsRead(t, tx, "pg_depend"), catalogRowsRead(t, tx, "pg_attrdef")
	rows, err := diagnostics.SequenceExhaustion(ctx, tx)
	require.NoError(t, err)
	readDepends, readDefaults := catalogRowsRead(t, tx, "pg_depend")-d0, catalogRowsRead(t, tx, "pg_attrdef")-a0
	require.Less(t, readDepends, int64(50), "pg_depend rows read, of %d", depends)
	require.Less(t, readDefaults, defaults, "pg_attrdef rows read")

	by := map[string]diagnostics.SequenceUse{}
	for _, r := range rows {
		by[r.Sequence] = r
	}
	require.Equal(t, "narrow_fed", by["public.narrow_seq"].Table, "%+v", rows)
	require.EqualValues(t, 2147483647, by["public.narrow_seq"].Limit)
	require.Equal(t, "narrow_owned", by["public.narrow_owned_id_seq"].Table)
	require.Equal(t, "id", by["public.narrow_owned_id_seq"].Column)
}

// table_vacuum reads the dead-tuple counter of every table and the rest
// of the statistics of those it keeps, without pg_stat_user_tables'
// grouping of pg_index; what it reports is what that view says.
func TestTableVacuumReadsNoIndexCatalog(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "vacuum-narrow")
	for _, q := range []string{
		"CREATE TABLE narrow_dead (id int PRIMARY KEY, v int)",
		"CREATE INDEX ON narrow_dead (v)",
		"INSERT INTO narrow_dead SELECT g, g FROM generate_series(1, 100) AS g",
		"DELETE FROM narrow_dead WHERE id <= 40",
		"SELECT pg_stat_force_next_flush()",
	} {
		_, err := c.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	// The counters reach the shared statistics when the session goes
	// idle; wait for them through another session.
	reader := connect(t, url, "vacuum-narrow-reader")
	eventually(t, 15*time.Second, func() (bool, string) {
		var dead int64
		err := reader.QueryRow(ctx, "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'narrow_dead'").Scan(&dead)
		return err == nil && dead == 40, fmt.Sprintf("n_dead_tup %d (%v)", dead, err)
	})

	tx, err := reader.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = diagnostics.TableVacuum(ctx, tx)
	require.NoError(t, err)
	before := catalogRowsRead(t, tx, "pg_index")
	rows, err := diagnostics.TableVacuum(ctx, tx)
	require.NoError(t, err)
	require.Equal(t, before, catalogRowsRead(t, tx, "pg_index"), "pg_index was read")

	var got *diagnostics.TableStat
	for i := range rows {
		if rows[i].Table == "narrow_dead" {
			got = &rows[i]
		}
	}
	require.NotNil(t, got, "%+v", rows)
	var want diagnostics.TableStat
	require.NoError(t, tx.QueryRow(ctx, `SELECT schemaname, n_live_tup, n_dead_tup, n_mod_since_analyze, vacuum_count, autovacuum_count
		FROM pg_stat_user_tables WHERE relname = 'narrow_dead'`).Scan(&want.Schema, &want.LiveTuples, &want.DeadTuples, &want.ModSinceAnalyze, &want.VacuumCount, &want.AutovacuumCount))
	require.Equal(t, want.Schema, got.Schema)
	require.Equal(t, want.LiveTuples, got.LiveTuples)
	require.EqualValues(t, 40, got.DeadTuples)
	require.Equal(t, want.DeadTuples, got.DeadTuples)
	require.Equal(t, want.ModSinceAnalyze, got.ModSinceAnalyze)
	require.Equal(t, want.VacuumCount, got.VacuumCount)
	require.Equal(t, want.AutovacuumCount, got.AutovacuumCount)
	require.InDelta(t, 40.0/100, got.DeadRatio, 0.001)
}
