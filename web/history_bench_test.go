package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/auth"
)

// historyWeek is a week of samples at the default 10s interval.
const historyWeek = 7 * 24 * 360

// BenchmarkHistoryWeek times the pages that read the flight recorder's
// history with an hour of it and with a week of it (360 and 60,480 samples
// at 10s, a third of them holding a lock chain, as in the demo workload),
// on the same server in the same run:
//
//	go test ./web -run '^$' -bench BenchmarkHistoryWeek -benchtime 20x
//
// Each page is one sub-benchmark per history size; compare their ns/op. A
// page that reads a window (the last hour, a moment, an incident's time)
// should cost the same whatever else is kept; the 24h and 7d windows read
// more samples when there are more, bounded by the page's limits.
func BenchmarkHistoryWeek(b *testing.B) {
	ctx := context.Background()
	e := setup(b)
	pool := e.owner
	var opID int64
	require.NoError(b, pool.QueryRow(ctx, "SELECT id FROM operators WHERE name = 'operator'").Scan(&opID))
	secret, err := auth.SessionCreate(ctx, pool, opID, time.Hour)
	require.NoError(b, err)
	inc, err := audit.IncidentOpen(ctx, pool, audit.IncidentOpenParams{Title: "bench", OpenedBy: "operator"})
	require.NoError(b, err)

	now := time.Now().UTC()
	at := now.Add(-30 * time.Minute).Format(time.RFC3339Nano)
	pages := []struct{ name, path string }{
		{"history_1h", "/history"},
		{"history_24h", "/history?window=24h"},
		{"history_7d", "/history?window=7d"},
		{"history_at", "/history?" + url.Values{"window": {"7d"}, "at": {at}}.Encode()},
		{"api_at", "/api/v1/history?" + url.Values{"check": {"blocking_tree"}, "at": {at}}.Encode()},
		{"incident", fmt.Sprintf("/incidents/%d", inc.ID)},
		{"overview", "/"},
	}
	get := func(b *testing.B, path string) {
		req, err := http.NewRequest(http.MethodGet, e.http.URL+path, nil)
		require.NoError(b, err)
		req.AddCookie(&http.Cookie{Name: sessionCookieName(false), Value: secret})
		resp, err := e.http.Client().Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode, path)
	}
	run := func(size string) {
		for _, p := range pages {
			b.Run(p.name+"/"+size, func(b *testing.B) {
				get(b, p.path) // warm
				b.ResetTimer()
				for b.Loop() {
					get(b, p.path)
				}
			})
		}
	}

	chain, quiet := benchHistoryDocs(b)
	record := func(from, to int) {
		start := time.Now()
		_, err := pool.Exec(ctx, `INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc)
			SELECT $1::timestamptz - i * interval '10 seconds', 'bench', pg_column_size(d), d
			FROM generate_series($2::int, $3::int) AS i,
			     LATERAL (SELECT CASE WHEN i % 3 = 0 THEN $4::jsonb ELSE $5::jsonb END AS d) AS doc`,
			now, from, to, chain, quiet)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, "VACUUM ANALYZE history_samples")
		require.NoError(b, err)
		var size string
		require.NoError(b, pool.QueryRow(ctx, "SELECT pg_size_pretty(pg_total_relation_size('history_samples'))").Scan(&size))
		b.Logf("history up to sample %d: %s (written in %s)", to, size, time.Since(start).Round(time.Second))
	}
	record(1, 360)
	run("hour")
	record(361, historyWeek)
	run("week")
}

// benchHistoryDocs are two recorded documents shaped like the demo's: one
// with a three-backend lock chain and its finding, one quiet; both with 50
// backends of activity, wait events and five queues.
func benchHistoryDocs(b *testing.B) (chain, quiet []byte) {
	t0 := time.Now().Add(-time.Minute)
	job := int64(4242)
	root := int32(1001)
	var activity []diagnostics.Backend
	for i := range 50 {
		activity = append(activity, diagnostics.Backend{PID: int32(2000 + i), Database: "app", User: "app",
			ApplicationName: "console-worker", State: "active", XactStart: &t0, QueryStart: &t0,
			Query: "UPDATE jobs SET status = 'done', finished_at = now() WHERE id = $1 AND lease_generation = $2"})
	}
	var queues []diagnostics.QueueStat
	for _, q := range []string{"email", "billing", "reports", "webhooks", "default"} {
		queues = append(queues, diagnostics.QueueStat{Queue: q, Ready: 120, Running: 8})
	}
	doc := recorder.HistoryDoc{
		Activity:   activity,
		WaitEvents: []recorder.WaitEventCount{{WaitEventType: "Client", WaitEvent: "ClientRead", Backends: 40}},
		Queues:     queues,
	}
	quiet, err := json.Marshal(doc)
	require.NoError(b, err)
	doc.BlockingTree = []diagnostics.BlockingNode{
		{PID: root, RootPID: root, IsRoot: true, BlockedCount: 2, State: "idle in transaction", Database: "app",
			ApplicationName: "console-worker job=4242", JobID: &job, Query: "UPDATE accounts SET balance = balance + 1 WHERE id = 1"},
		{PID: root + 1, RootPID: root, ParentPID: &root, Depth: 1, BlockedCount: 1, State: "active", Database: "app",
			ApplicationName: "billing", WaitEventType: "Lock", WaitEvent: "transactionid", Query: "UPDATE accounts SET balance = balance + 1 WHERE id = 1"},
		{PID: root + 2, RootPID: root, Depth: 2, State: "active", Database: "app",
			ApplicationName: "reports", WaitEventType: "Lock", WaitEvent: "transactionid", Query: "UPDATE accounts SET balance = balance + 1 WHERE id = 2"},
	}
	doc.Findings = []findings.Finding{{Code: findings.CodeRootBlocker, Severity: findings.SeverityCritical,
		Title: fmt.Sprintf("pid %d blocks 2 backends", root)}}
	chain, err = json.Marshal(doc)
	require.NoError(b, err)
	return chain, quiet
}
