package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// lockEpisodesEnv is a console whose lock-episode recorder runs as
// console_web (so the grants of `console roles sql` are what it has),
// looking every 100ms.
func lockEpisodesEnv(t *testing.T) *env {
	t.Helper()
	superURL := testdb.OwnedURL(t)
	return setupWith(t, setupOpts{url: superURL, configure: func(cfg *Config) {
		rec, err := episodes.New(episodes.Config{URL: testdb.AsUser(t, superURL, "console_web"), Interval: 100 * time.Millisecond, Name: "web-test"})
		require.NoError(t, err)
		require.NoError(t, rec.Start(context.Background()))
		t.Cleanup(rec.Stop)
		cfg.Episodes = rec
	}})
}

// wait makes a session named waiterApp wait about hold for a row of table
// that a session named holderApp locked, and returns once it got it.
func (e *env) wait(t *testing.T, table, holderApp, waiterApp string, hold time.Duration) {
	t.Helper()
	ctx := context.Background()
	holder := testdb.Connect(t, e.url, holderApp)
	waiter := testdb.Connect(t, e.url, waiterApp)
	tbl := pgx.Identifier{table}.Sanitize()
	_, err := holder.Exec(ctx, "BEGIN; SELECT * FROM "+tbl+" WHERE id = 1 FOR UPDATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "UPDATE "+tbl+" SET n = n + 1 WHERE id = 1")
		done <- err
	}()
	testdb.WaitBackend(t, e.owner, waiterApp, "wait_event_type = 'Lock' AND datname = current_database()")
	time.Sleep(hold) // the wait the page must show
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-done)
}

// episodesJSON reads GET /api/v1/lock-episodes?query.
func episodesJSON(t *testing.T, c *client, query string) lockEpisodesAnswer {
	t.Helper()
	resp, body := c.get("/api/v1/lock-episodes?"+query, "Accept", "application/json")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var ans lockEpisodesAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &ans))
	return ans
}

func roots(ans lockEpisodesAnswer) []string {
	var out []string
	for _, e := range ans.Episodes {
		out = append(out, e.RootApplication)
	}
	return out
}

// The page and the API list the recorded episodes and filter them by
// table, application, job kind, queue and length.
func TestLockEpisodesPageAndAPIFilter(t *testing.T) {
	testdb.SkipShort(t, "three recorded lock waits")
	t.Parallel()
	e := lockEpisodesEnv(t)
	ctx := context.Background()
	_, err := e.owner.Exec(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, n int NOT NULL); INSERT INTO accounts VALUES (1, 0);
		CREATE TABLE ledger (id int PRIMARY KEY, n int NOT NULL); INSERT INTO ledger VALUES (1, 0);
		GRANT SELECT, UPDATE ON accounts, ledger TO PUBLIC`)
	require.NoError(t, err)
	job, err := queues.EnqueueTx(ctx, e.owner, queues.EnqueueParams{Queue: "email", Kind: "send_receipt"})
	require.NoError(t, err)

	e.wait(t, "accounts", "batch-import", "billing", 1500*time.Millisecond)
	e.wait(t, "ledger", "etl", "reports", 200*time.Millisecond)
	e.wait(t, "ledger", "etl-2", fmt.Sprintf("%s job=%d", queues.ApplicationName, job.ID), 200*time.Millisecond)

	c := e.signedIn(t, "viewer")
	var all lockEpisodesAnswer
	testdb.Eventually(t, 30*time.Second, "three closed episodes", func() bool {
		all = episodesJSON(t, c, "since=15m")
		closed := 0
		for _, ep := range all.Episodes {
			if ep.End != nil {
				closed++
			}
		}
		return closed == 3
	})
	require.True(t, all.Recording.On && all.Recording.Leader, "%+v", all.Recording)
	require.Equal(t, "batch-import", all.Episodes[0].RootApplication, "the most waited first")

	require.Equal(t, []string{"batch-import"}, roots(episodesJSON(t, c, "table=accounts")))
	require.ElementsMatch(t, []string{"etl", "etl-2"}, roots(episodesJSON(t, c, "table=ledger")))
	require.Equal(t, []string{"batch-import"}, roots(episodesJSON(t, c, "min_duration=1s")))
	require.Equal(t, []string{"etl-2"}, roots(episodesJSON(t, c, "kind=send_receipt")))
	require.Equal(t, []string{"etl-2"}, roots(episodesJSON(t, c, "queue=email")))
	require.Empty(t, episodesJSON(t, c, "queue=sms").Episodes)
	require.Equal(t, []string{"etl"}, roots(episodesJSON(t, c, "application=reports")))

	page := c.page("/lock-episodes?since=1h&application=etl-2")
	require.Contains(t, page, `data-testid="lock-episodes"`)
	require.Equal(t, 1, strings.Count(page, `data-testid="lock-episode-root"`))
	require.Contains(t, page, "etl-2")
	require.NotContains(t, page, "batch-import")
	require.Contains(t, page, fmt.Sprintf(`href="/jobs/%d"`, job.ID), "the job it delayed, linked")
	require.Contains(t, page, "send_receipt in email")
	require.Contains(t, page, "/history?", "a link to the nearest full sample")
	require.Contains(t, c.page("/lock-episodes"), `href="/lock-episodes"`, "the page is in the navigation")

	for _, bad := range []struct{ query, want string }{
		{"since=yesterday", "since=\\\"yesterday\\\""},
		{"min_duration=soon", "min_duration=\\\"soon\\\""},
		{"min_duration=-2s", "zero or more"},
		{"after=page-2", "not a page cursor"},
		{"after=NaN_1_2", "not a page cursor"},
	} {
		resp, body := c.get("/api/v1/lock-episodes?"+bad.query, "Accept", "application/json")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, bad.query+": "+body)
		require.Contains(t, body, bad.want, bad.query)
	}
}

// claimBlocked holds a SHARE lock on jobs as holderApp for about hold while
// the engine's claim (a session named queues.ApplicationName) waits on it.
func (e *env) claimBlocked(t *testing.T, holderApp string, hold time.Duration) {
	t.Helper()
	ctx := context.Background()
	holder := testdb.Connect(t, e.url, holderApp)
	claimer := testdb.Connect(t, e.url, queues.ApplicationName)
	_, err := holder.Exec(ctx, "BEGIN; LOCK TABLE jobs IN SHARE MODE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := queues.JobClaim(ctx, claimer, queues.JobClaimParams{Queue: "email", Limit: 1, Owner: "w1", Lease: time.Minute})
		done <- err
	}()
	testdb.WaitBackend(t, e.owner, queues.ApplicationName, "wait_event_type = 'Lock' AND datname = current_database()")
	time.Sleep(hold) // the wait the page must show
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-done)
}

// TestBrowserLockEpisodes shows the page at 1440 and 390 pixels wide with
// recorded episodes, a job delayed and an application that blocked the
// claims three times: the finding leads, each episode shows its root and
// timeline, and the phone's page never scrolls sideways.
func TestBrowserLockEpisodes(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := lockEpisodesEnv(t)
	b := browser.New(t, 180*time.Second)
	ctx := context.Background()
	_, err := e.owner.Exec(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, n int NOT NULL); INSERT INTO accounts VALUES (1, 0);
		GRANT SELECT, UPDATE ON accounts TO PUBLIC`)
	require.NoError(t, err)
	job, err := queues.EnqueueTx(ctx, e.owner, queues.EnqueueParams{Queue: "email", Kind: "send_receipt", RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	e.wait(t, "accounts", "batch-import", "billing-api", 1500*time.Millisecond)
	e.wait(t, "accounts", "batch-import", fmt.Sprintf("%s job=%d", queues.ApplicationName, job.ID), 600*time.Millisecond)
	for range 3 {
		e.claimBlocked(t, "nightly-report", 300*time.Millisecond)
	}
	c := e.signedIn(t, "viewer")
	testdb.Eventually(t, 30*time.Second, "five closed episodes", func() bool {
		n := 0
		for _, ep := range episodesJSON(t, c, "since=15m").Episodes {
			if ep.End != nil {
				n++
			}
		}
		return n == 5
	})

	signIn(t, b, e.http.URL, "viewer")
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/lock-episodes"), chromedp.WaitVisible(css(`[data-testid="lock-episodes-finding"]`)))
	finding := browser.Get(t, b, chromedp.Text(css(`[data-testid="lock-episodes-finding"]`)))
	require.Contains(t, finding, `"nightly-report" blocked the job claims 3 times`)
	require.Contains(t, finding, "LOCK TABLE jobs IN SHARE MODE")
	require.Equal(t, 5, browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="lock-episode-root"]').length`)))
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`main`))), "-- JobClaim:", "a held-up claim is named by its statement")
	browser.Screenshot(t, b, "lock-episodes-1440")
	browser.Do(t, b, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(css(`[data-testid="lock-episodes"]`)))
	requireNoPageOverflow(t, b, "the lock episodes page")
	browser.Screenshot(t, b, "lock-episodes-390")
}
