package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// withRecorder starts a sampler that records every interval into e's
// database, stopped at cleanup.
func withRecorder(t *testing.T, e *env, interval time.Duration) *recorder.Recorder {
	t.Helper()
	rec := recorder.New(e.srv.cfg.Diagnostics, e.srv.cfg.Pool, recorder.Config{Interval: interval, Name: "test-console"})
	smp := sampler.New(e.srv.cfg.Diagnostics, sampler.Config{Interval: interval, OnSampleFunc: rec.Record})
	require.NoError(t, smp.Start(context.Background()))
	t.Cleanup(smp.Stop)
	e.srv.cfg.Recorder = rec
	return rec
}

// stageClearingChain stages a real lock chain whose root is a queue worker
// running a real job: the root's one statement locks a row and sleeps for
// hold, so the chain clears by itself after hold. It returns the root's pid,
// the job's id and a channel closed when every session of the chain is done.
func stageClearingChain(t *testing.T, dbURL string, hold time.Duration) (rootPID int32, jobID int64, cleared <-chan struct{}) {
	t.Helper()
	ctx := context.Background()
	connect := func(name string) *pgx.Conn { return testdb.Connect(t, dbURL, name) }
	admin := connect("test-setup")
	require.NoError(t, admin.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at) VALUES ('reports', 'monthly_totals', 'running', 'worker-1', now() + interval '5 minutes', now()) RETURNING id`).Scan(&jobID))
	_, err := admin.Exec(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL DEFAULT 0); INSERT INTO accounts (id) VALUES (1), (2)`)
	require.NoError(t, err)
	root := connect(fmt.Sprintf("console-worker job=%d", jobID))
	middle, leaf := connect("billing"), connect("reports")
	require.NoError(t, root.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&rootPID))
	_, err = middle.Exec(ctx, "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	require.NoError(t, err)

	bg, cancel := context.WithTimeout(ctx, hold+time.Minute)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	run := func(c *pgx.Conn, sql string) {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = c.Exec(bg, sql) }()
	}
	run(root, fmt.Sprintf("WITH held AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT pg_sleep(%f) FROM held", hold.Seconds()))
	testdb.WaitBackend(t, admin, fmt.Sprintf("console-worker job=%d", jobID), "state = 'active' AND wait_event = 'PgSleep'")
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The middle session commits once it gets row 1, which frees the
		// leaf: the whole chain then clears without help.
		if _, err := middle.Exec(bg, "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err == nil {
			_, _ = middle.Exec(bg, "COMMIT")
		}
	}()
	testdb.WaitBackend(t, admin, "billing", "wait_event_type = 'Lock'")
	run(leaf, "UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	testdb.WaitBackend(t, admin, "reports", "wait_event_type = 'Lock'")
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return rootPID, jobID, done
}

// TestHistoryShowsALockChainAfterItCleared stages a lock chain that clears
// after 30s; afterwards the API and the history page show the chain, its
// root and the job behind the root as they were.
func TestHistoryShowsALockChainAfterItCleared(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	withRecorder(t, e, time.Second)
	start := time.Now().UTC()
	rootPID, jobID, cleared := stageClearingChain(t, e.url, 30*time.Second)
	select {
	case <-cleared:
	case <-time.After(90 * time.Second):
		t.Fatal("the lock chain did not clear within 90s")
	}
	clearedAt := time.Now().UTC()

	// The live tree is empty now: wait for a sample that says so.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := c.get("/api/v1/history?" + url.Values{"check": {"blocking_tree"}, "at": {time.Now().UTC().Format(time.RFC3339Nano)}}.Encode())
		var ans historyAnswer
		if resp.StatusCode == http.StatusOK && json.Unmarshal([]byte(body), &ans) == nil && ans.Sample.At.After(clearedAt) {
			// The server is shared with other tests' lock chains: this
			// test's database has no node left.
			var nodes []struct {
				Database string `json:"database"`
			}
			require.NoError(t, json.Unmarshal(ans.Sample.Data, &nodes))
			for _, n := range nodes {
				require.NotEqual(t, testDatabase(t, e.url), n.Database, "the cleared chain is still in the tree: %s", ans.Sample.Data)
			}
			break
		}
		require.False(t, time.Now().After(deadline), "no sample after the chain cleared within 30s: %d %s", resp.StatusCode, body)
		time.Sleep(200 * time.Millisecond)
	}

	// The range finds the moments the chain existed.
	body := c.page("/api/v1/history?" + url.Values{"check": {"blocking_tree"}, "from": {start.Format(time.RFC3339Nano)}, "to": {clearedAt.Format(time.RFC3339Nano)}}.Encode())
	var ranged historyAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &ranged))
	require.True(t, ranged.History)
	// The server is shared with other tests' lock chains: look at this
	// test's database only.
	own := func(data []byte) []diagnostics.BlockingNode {
		var nodes, out []diagnostics.BlockingNode
		require.NoError(t, json.Unmarshal(data, &nodes))
		for _, n := range nodes {
			if n.Database == testDatabase(t, e.url) {
				out = append(out, n)
			}
		}
		return out
	}
	var moment time.Time
	for _, s := range ranged.Samples {
		if len(own(s.Data)) == 3 {
			moment = s.At
		}
	}
	require.False(t, moment.IsZero(), "no recorded sample holds the 3-backend chain: %s", body)

	// "at" a moment within the chain's life: the tree as it was.
	at := moment.Add(300 * time.Millisecond).Format(time.RFC3339Nano)
	body = c.page("/api/v1/history?" + url.Values{"check": {"blocking_tree"}, "at": {at}}.Encode())
	var ans historyAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &ans))
	require.True(t, ans.Sample.At.Equal(moment))
	nodes := own(ans.Sample.Data)
	require.Len(t, nodes, 3)
	require.Equal(t, rootPID, nodes[0].PID)
	require.True(t, nodes[0].IsRoot)
	require.Equal(t, 2, nodes[0].BlockedCount)
	require.NotNil(t, nodes[0].JobID)
	require.Equal(t, jobID, *nodes[0].JobID)
	require.Equal(t, []string{"billing", "reports"}, []string{nodes[1].ApplicationName, nodes[2].ApplicationName})

	// The page: clearly history, the root marked, the job linked.
	body = c.page("/history?" + url.Values{"at": {at}}.Encode())
	require.Contains(t, body, `data-testid="history-banner"`)
	require.Contains(t, body, "History, as of")
	require.Contains(t, body, "Nothing on this page is live")
	require.Contains(t, body, fmt.Sprintf(`data-testid="history-node-%d"`, rootPID))
	require.Contains(t, body, `data-testid="history-root"`)
	require.Contains(t, body, fmt.Sprintf(`href="/jobs/%d"`, jobID))
	require.Contains(t, body, `data-testid="history-moments"`, "the chain is listed in the window")
	require.Contains(t, body, `<span class="sev info">shown</span>`, "and marked as the one shown")
	require.Contains(t, body, "Recording:")

	// An incident opened now, after the chain cleared: its timeline and its
	// export reach five minutes back and show the chain nobody captured.
	op := e.signedIn(t, "operator")
	op.get("/incidents")
	resp, body := op.post("/incidents", url.Values{"_csrf": {op.csrf}, "title": {"orders slow"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	incident := resp.Header.Get("Location")
	body = op.page(incident)
	require.NotContains(t, body, `data-testid="timeline-recorded"`, "the timeline starts when the incident opened")
	require.Contains(t, body, `data-testid="timeline-before"`, "what came before is a click away")
	body = op.page(incident + "?before=1")
	require.Contains(t, body, `data-testid="timeline-recorded"`)
	require.Contains(t, body, fmt.Sprintf("recorded lock chain: pid %d blocked 2 backends", rootPID))
	require.Contains(t, body, `data-testid="timeline-history"`)
	resp, md := op.get(incident + "/export.md")
	require.Equal(t, http.StatusOK, resp.StatusCode, md)
	require.Contains(t, md, fmt.Sprintf(`Recorded: recorded lock chain: pid %d blocked 2 backends`, rootPID))
	require.Contains(t, md, `(before it opened)`)
	require.Contains(t, md, `Recorded: recorded finding appeared: critical pid`)
	require.NotContains(t, md, "job_id", "the compact export leaves the recorder's rows to ?full=1")
	resp, md = op.get(incident + "/export.md?full=1")
	require.Equal(t, http.StatusOK, resp.StatusCode, md)
	require.Contains(t, md, `job_id`, "the recorded tree as a table, with the job behind each backend")
	require.Contains(t, md, fmt.Sprintf("| %d |", jobID))

	b := browser.New(t, 120*time.Second)
	// Signed in once the overview shows (the sign-in page has a main
	// too): navigating earlier races the session cookie.
	signIn(t, b, e.http.URL, "viewer")
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/history?"+url.Values{"at": {at}}.Encode()),
		chromedp.WaitVisible(css(`[data-testid="history-root"]`)),
	)
	browser.Screenshot(t, b, "history")
}

func TestHistoryAPIRefusesBadInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	for _, tc := range []struct{ query, want string }{
		{"check=nope&at=2026-12-03T03:12:40Z", "use one of blocking_tree"},
		{"check=blocking_tree&at=yesterday", `at: \"yesterday\" is not a time; type \"5m ago\"`},
		{"check=blocking_tree", "give either at"},
		{"check=blocking_tree&from=2026-12-03T04:00:00Z&to=2026-12-03T03:00:00Z", "must not be after"},
	} {
		resp, body := c.get("/api/v1/history?"+tc.query, "Accept", "application/json")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.query+": "+body)
		require.Contains(t, body, tc.want, tc.query)
	}
	// Nothing recorded: a 404 that says so and says whether history is on.
	resp, body := c.get("/api/v1/history?check=activity&at=2026-12-03T03:12:40Z", "Accept", "application/json")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	require.Contains(t, body, "no history recorded")
	require.Contains(t, body, "does not record")
	// The page with nothing recorded: an empty state, not an error.
	body = c.page("/history?window=15m")
	require.Contains(t, body, "No lock chains recorded in this window")
	require.True(t, strings.Contains(body, "history is off"), "the page says history is off on a console without a recorder")
	// What the page cannot read keeps the form, with what was typed and
	// what to type instead, never a page of its own with a 400.
	for _, tc := range []struct{ query, want, kept string }{
		{"window=2w", `window=&#34;2w&#34;: use 15m, 1h, 24h, 7d or custom`, ""},
		{"window=custom&at=half+past+nine", `at: &#34;half past nine&#34; is not a time; type &#34;5m ago&#34;`, `value="half past nine"`},
	} {
		body = c.page("/history?" + tc.query)
		require.Contains(t, body, `data-testid="history-problem"`, tc.query)
		require.Contains(t, body, tc.want, tc.query)
		if tc.kept != "" {
			require.Contains(t, body, tc.kept, "%s: what was typed stays in the form", tc.query)
		}
	}
	// A time of day in the browser's zone (its cookie) reads in that zone
	// and says so.
	resp, body = c.get("/history?window=custom&at=03:20", "Cookie", "tz=Asia/Tokyo")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `data-testid="history-zone">Asia/Tokyo<`)
	require.Contains(t, body, ` 03:20:00"`, "the moment shown back as typed, in Tokyo time")
}

// testDatabase is the database name of a test's URL.
func testDatabase(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return strings.TrimPrefix(u.Path, "/")
}
