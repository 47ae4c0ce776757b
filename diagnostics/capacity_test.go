package diagnostics_test

import (
	"context"
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

// Client backends are counted by database, user and state against the
// slots ordinary roles may use.
func TestConnectionPressureGroupsByUser(t *testing.T) {
	ctx, url := freshDB(t)
	admin := connect(t, url, "admin")
	user := fmt.Sprintf("cp_user_%d", time.Now().UnixNano())
	_, err := admin.Exec(ctx, "CREATE ROLE "+user+" LOGIN")
	require.NoError(t, err)
	t.Cleanup(func() {
		admin.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", user)
		admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+user)
	})
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	cfg.User = user
	for i := 0; i < 5; i++ {
		c, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(context.Background()) })
	}
	rows, err := diagnostics.ConnectionPressure(ctx, admin)
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	var mine int64
	for _, g := range rows {
		if g.User == user && g.State == "idle" {
			mine = g.Connections
		}
	}
	require.EqualValues(t, 5, mine, "%+v", rows)
	var max, reserved int64
	require.NoError(t, admin.QueryRow(ctx, "SELECT current_setting('max_connections')::int8, current_setting('superuser_reserved_connections')::int8").Scan(&max, &reserved))
	require.Equal(t, max, rows[0].MaxConnections)
	require.GreaterOrEqual(t, rows[0].Reserved, reserved)
	require.Equal(t, max-rows[0].Reserved, rows[0].Available())
	require.GreaterOrEqual(t, rows[0].Used, int64(6))

	// With the threshold at a handful of slots, the finding names the
	// largest group.
	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, fmt.Sprintf("connections.near_max=%.4f", 5.0/float64(rows[0].Available()))))
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f := findingsWith(rep, findings.CodeConnections)
	require.Len(t, f, 1, "%v", codes(rep))
	require.Equal(t, rows[0].Available(), f[0].Subject["available"])
	require.Contains(t, f[0].Evidence, user)
	require.Equal(t, "/runbook/rb-a", f[0].Runbook)
}

// Every database and the oldest tables of this one come back with their
// ages; a table created before a burst of transactions is older than one
// created after it.
func TestWraparoundNamesOldestTables(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "wrap")
	_, err := c.Exec(ctx, "CREATE TABLE wrap_old (id int)")
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		_, err := c.Exec(ctx, "SELECT txid_current()")
		require.NoError(t, err)
	}
	rows, err := diagnostics.Wraparound(ctx, c, 0)
	require.NoError(t, err)
	var db string
	require.NoError(t, c.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	var sawDB bool
	var tables []string
	for _, r := range rows {
		require.Positive(t, r.FreezeMaxAge)
		switch r.Kind {
		case "database":
			sawDB = sawDB || r.Name == db
		case "table":
			tables = append(tables, r.Name)
		}
	}
	require.True(t, sawDB, "%+v", rows)
	require.LessOrEqual(t, len(tables), 5)
	require.NotEmpty(t, tables)
}

// A smallint sequence near its end, a bigint sequence feeding an int4
// column, and an identity column near the int4 limit are each measured
// against the limit that will actually stop inserts, and name the column.
func TestSequenceExhaustionUsesTheColumnLimit(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "seq")
	for _, q := range []string{
		"CREATE SEQUENCE tiny_seq AS smallint",
		"SELECT setval('tiny_seq', 32000)",
		"CREATE SEQUENCE wide_seq AS bigint",
		"CREATE TABLE narrow (id int4 NOT NULL DEFAULT nextval('wide_seq'), v text)",
		"SELECT setval('wide_seq', 2000000000)",
		"CREATE TABLE ident (id int4 GENERATED ALWAYS AS IDENTITY (START WITH 2100000000), v text)",
		"INSERT INTO ident (v) VALUES ('x')",
		"CREATE SEQUENCE roomy_seq AS bigint",
		"SELECT setval('roomy_seq', 2000000000)",
	} {
		_, err := c.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	rows, err := diagnostics.SequenceExhaustion(ctx, c)
	require.NoError(t, err)
	by := map[string]diagnostics.SequenceUse{}
	for _, r := range rows {
		by[r.Sequence[strings.Index(r.Sequence, ".")+1:]] = r
	}
	tiny := by["tiny_seq"]
	require.EqualValues(t, 32767, tiny.Limit)
	require.InDelta(t, 32000.0/32766, tiny.UsedFraction, 0.001)

	wide := by["wide_seq"]
	require.Equal(t, "narrow", wide.Table)
	require.Equal(t, "id", wide.Column)
	require.EqualValues(t, 2147483647, wide.Limit, "the int4 column, not the bigint sequence, is the limit")
	require.Greater(t, wide.UsedFraction, 0.9)

	ident := by["ident_id_seq"]
	require.Equal(t, "ident", ident.Table)
	require.Equal(t, "id", ident.Column)
	require.Greater(t, ident.UsedFraction, 0.97)

	require.Less(t, by["roomy_seq"].UsedFraction, 0.01, "a bigint sequence with no column is far from its end")
	require.Equal(t, "ident_id_seq", rows[0].Sequence[strings.Index(rows[0].Sequence, ".")+1:], "most used first")

	// Default threshold: the three nearly exhausted sequences are findings,
	// each naming the column it feeds; the roomy one is not.
	d := open(t, url, diagnostics.Config{})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	fs := findingsWith(rep, findings.CodeSequence)
	require.Len(t, fs, 3, "%v", codes(rep))
	f, ok := findingFor(rep, findings.CodeSequence, "sequence", wide.Sequence)
	require.True(t, ok)
	require.Equal(t, "narrow", f.Subject["table"])
	require.Equal(t, "id", f.Subject["column"])
	require.Contains(t, f.Evidence, "narrow.id (int4)")
	require.Equal(t, findings.SeverityWarning, f.Severity)
	_, ok = findingFor(rep, findings.CodeSequence, "sequence", by["roomy_seq"].Sequence)
	require.False(t, ok)
}

// A key claimed and never completed is stuck; a completed one and a fresh
// claim are not.
func TestIdempotencyStuckKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Pool(t, testdb.URL(t))
	_, err := db.Exec(ctx, `INSERT INTO idempotency_requests (scope, idempotency_key, request_hash, state, response_code, response_body, created_at, locked_until) VALUES
		('api', 'old-claim', '\x00', 'processing', NULL, NULL, now() - interval '20 minutes', now() - interval '19 minutes'),
		('api', 'fresh-claim', '\x00', 'processing', NULL, NULL, now(), now() + interval '1 minute'),
		('api', 'done', '\x00', 'completed', 200, '{}', now() - interval '20 minutes', NULL)`)
	require.NoError(t, err)
	rows, err := queues.IdempotencyStuck(ctx, db, 5*time.Minute, 0)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "old-claim", rows[0].Key)
	require.EqualValues(t, 1, rows[0].Total)
	require.Greater(t, rows[0].AgeSeconds, 1100.0)
}
