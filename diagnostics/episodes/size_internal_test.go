package episodes

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// syntheticLook is one look at a wait like the ones production sees: a
// root (a batch job's UPDATE) and nine sessions waiting behind it, job
// workers among them, with statements of realistic length.
func syntheticLook(base int32, at time.Time) []session {
	start := at.Add(-time.Hour)
	ws := at.Add(-time.Second)
	root := session{PID: base, BackendStart: &start, ApplicationName: "nightly-report",
		Query:    "UPDATE accounts SET balance = balance - $1, updated_at = now() WHERE customer_id = $2 AND region = $3 RETURNING id, balance",
		Held:     []string{"RowExclusiveLock on accounts", "RowExclusiveLock on ledger"},
		LockType: "", State: "idle in transaction"}
	out := []session{root}
	for i := int32(1); i <= 9; i++ {
		app := "billing-api"
		if i%3 == 0 {
			app = fmt.Sprintf("console-worker job=%d", 1000000+int(base)*10+int(i))
		}
		out = append(out, session{PID: base + i, Waits: true, BackendStart: &start, ApplicationName: app,
			Query:     "UPDATE accounts SET balance = balance + $1 WHERE customer_id = $2 -- invoice settlement for the customer's open invoices",
			BlockedBy: []int32{base}, LockType: "transactionid", LockMode: "ShareLock", Relation: "accounts",
			LockTarget: "accounts row (4812,17), held by transaction 81234567", WaitStart: &ws})
	}
	return out
}

// TestEpisodeSizeOnDisk records 2,000 two-second episodes of ten sessions
// each through the recorder's own statements and measures what they take
// on disk, both tables with their indexes and TOAST: 30 days of one such
// episode a minute (43,200) must stay under 1 GB.
func TestEpisodeSizeOnDisk(t *testing.T) {
	testdb.SkipShort(t, "2,000 recorded episodes")
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(ctx) })
	r, err := New(Config{URL: url, Name: "size-test", JobLookupFunc: func(context.Context, int64) (string, string, error) {
		return "settle_invoice", "billing", nil
	}})
	require.NoError(t, err)

	const n = 2000
	at := time.Now().Add(-n * time.Minute)
	for i := range n {
		tr := &tracker{}
		look := syntheticLook(int32(10000+i*10), at)
		started, _, _ := tr.observe(at, look)
		require.Len(t, started, 1)
		require.NoError(t, r.insert(ctx, conn, started[0]))
		_, seen, _ := tr.observe(at.Add(time.Second), look)
		require.NoError(t, r.save(ctx, conn, seen[0]))
		_, _, ended := tr.observe(at.Add(2*time.Second), nil)
		require.NoError(t, r.save(ctx, conn, ended[0]))
		at = at.Add(time.Minute)
	}
	_, err = conn.Exec(ctx, "VACUUM ANALYZE lock_episodes, lock_episode_participants")
	require.NoError(t, err)
	st, err := Stats(ctx, conn)
	require.NoError(t, err)
	require.EqualValues(t, n, st.Episodes)
	perEpisode := float64(st.TableBytes) / n
	month := perEpisode * 30 * 24 * 60
	t.Logf("%d episodes of 10 sessions: %d bytes on disk (%.0f per episode; rows %d bytes, %.0f per episode); 30 days at one a minute: %.0f MB",
		n, st.TableBytes, perEpisode, st.RowBytes, float64(st.RowBytes)/n, month/1e6)
	require.Less(t, month, 1e9, "30 days of one 2-second episode a minute with ten sessions must stay under 1 GB")
	require.Greater(t, st.RowBytes, int64(n*1000), "bytes counts every session's row")

	// The size cap keeps the newest episodes within it.
	capBytes := st.RowBytes / 2
	deleted, err := Prune(ctx, conn, PruneParams{MaxBytes: capBytes, BatchSize: 300})
	require.NoError(t, err)
	require.InDelta(t, n/2, deleted, n/20)
	after, err := Stats(ctx, conn)
	require.NoError(t, err)
	require.LessOrEqual(t, after.RowBytes, capBytes)
	require.Equal(t, 0, testdb.Count(t, conn, "SELECT count(*) FROM lock_episode_participants p WHERE NOT EXISTS (SELECT 1 FROM lock_episodes e WHERE e.id = p.episode_id)"),
		"the sessions go with their episode")
	// The retention drops what is older than it.
	deleted, err = Prune(ctx, conn, PruneParams{Retention: time.Duration(n/4) * time.Minute})
	require.NoError(t, err)
	require.Positive(t, deleted)
	require.Zero(t, testdb.Count(t, conn, "SELECT count(*) FROM lock_episodes WHERE start_at < now() - interval '1 minute' * $1", n/4+1))
}
