package diagnostics_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// BenchmarkFindingsRoundLarge measures one full findings round on a
// database with 1,000,000 job rows (94% done, 5% ready, 0.9% dead, 0.1%
// running), 105,000 outbox events and 50 backends blocked behind one idle
// root blocker. Setup takes a while; run it on purpose:
//
//	go test -run '^$' -bench FindingsRoundLarge -benchtime 20x ./diagnostics/
func BenchmarkFindingsRoundLarge(b *testing.B) {
	ctx := context.Background()
	url := testdb.URL(b)
	db := testdb.Pool(b, url)
	setup := time.Now()
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, finished_at, created_at, available_at)
		 SELECT 'q' || (g % 5), 'k', 'done', now() - interval '1 hour', now() - interval '2 hours', now() - interval '2 hours'
		 FROM generate_series(1, 940000) AS g`,
		`INSERT INTO jobs (queue, kind, available_at)
		 SELECT 'q' || (g % 5), 'k', now() - (g % 600) * interval '1 second' FROM generate_series(1, 50000) AS g`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'q' || (g % 5), 'k', 'dead', 'E' || (g % 7), now() - (g % 3600) * interval '1 second', 8 FROM generate_series(1, 9000) AS g`,
		`INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at)
		 SELECT 'q' || (g % 5), 'k', 'running', 'w', now() + (g % 200 - 10) * interval '1 second', now() FROM generate_series(1, 1000) AS g`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, published_at)
		 SELECT 't', 'e', '{}', 'published', now() FROM generate_series(1, 100000)`,
		`INSERT INTO outbox_events (topic, event_type, payload) SELECT 't', 'e', '{}' FROM generate_series(1, 5000)`,
		`VACUUM ANALYZE jobs`,
		`VACUUM ANALYZE outbox_events`,
	} {
		_, err := db.Exec(ctx, q)
		require.NoError(b, err, q)
	}
	var rootID int64
	require.NoError(b, db.QueryRow(ctx, "SELECT min(id) FROM jobs WHERE status = 'ready'").Scan(&rootID))

	const blocked = 50
	holdRow(b, url, blocked, "UPDATE jobs SET priority = 2 WHERE id = $1", rootID)
	d, err := diagnostics.Open(ctx, url, diagnostics.Config{})
	require.NoError(b, err)
	b.Cleanup(d.Close)
	r := d.BlockingTree(ctx)
	require.NoError(b, r.Err)
	require.GreaterOrEqual(b, len(r.Rows), blocked+1)
	b.Logf("setup %s", time.Since(setup).Round(time.Millisecond))

	// Warm up (and take the first WAL sample).
	first := d.Round(ctx)
	require.Empty(b, first.Unavailable)
	var last diagnostics.Round
	var tooks []time.Duration
	b.ResetTimer()
	for b.Loop() {
		last = d.Round(ctx)
		tooks = append(tooks, last.Took)
	}
	b.StopTimer()
	require.Empty(b, last.Unavailable)
	sort.Slice(tooks, func(i, j int) bool { return tooks[i] < tooks[j] })
	b.Logf("rounds %d: min %s median %s max %s", len(tooks), tooks[0], tooks[len(tooks)/2], tooks[len(tooks)-1])
	type kv struct {
		k string
		v time.Duration
	}
	var ts []kv
	for k, v := range last.Timings {
		ts = append(ts, kv{k, v})
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].v > ts[j].v })
	line := ""
	for _, x := range ts {
		line += fmt.Sprintf(" %s=%s", x.k, x.v.Round(10*time.Microsecond))
	}
	b.Logf("checks:%s", line)
	line = ""
	for _, f := range findings.Evaluate(last, diagnostics.DefaultThresholds()) {
		line += fmt.Sprintf(" [%s %v]", f.Code, f.Subject["blocked_count"])
	}
	b.Logf("findings:%s", line)
}
