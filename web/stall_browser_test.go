package web

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/collector"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserDatabaseStall freezes a private PostgreSQL (SIGSTOP of the
// postmaster and every backend) while the overview and a runbook step are
// open in Chromium, and checks what an operator sees: a fresh page load
// answers with the frame, the open panels keep their rows marked stale, the
// banner says the database is not answering, the live blocks of /queues,
// /workers and /deadletters keep their rows marked stale, /readyz and writes answer at
// once, and the diagnostics gauge drops to 0. Then it resumes the server
// and checks the pages recover by themselves, without a reload.
func TestBrowserDatabaseStall(t *testing.T) {
	srv := testdb.NewServer(t, map[string]string{"max_connections": "80"})
	dbURL := privateDatabase(t, srv)
	e := setupWith(t, setupOpts{url: dbURL})
	// The collector's rounds get a long budget, so a round hung on the
	// frozen server does not end (and fail) by itself within the test: the
	// gauge must drop because scrapes get no round.
	cd, err := diagnostics.Open(context.Background(), dbURL, diagnostics.Config{Budget: 3 * time.Minute})
	require.NoError(t, err)
	t.Cleanup(cd.Close)
	creg := prometheus.NewRegistry()
	_, err = collector.New(cd, collector.Config{Registerer: creg, Refresh: time.Second, Wait: time.Second})
	require.NoError(t, err)
	_, err = e.srv.cfg.Pool.Exec(context.Background(), `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'stall-q', 'send', 'dead', 'stall.witness', 'seeded before the freeze', now(), 3 FROM generate_series(1, 12)`)
	require.NoError(t, err)
	roundSuccess := func() float64 { return gaugeValue(t, creg, "console_diagnostics_last_round_success") }
	waitUntil(t, 30*time.Second, "the diagnostics round to succeed", func() bool { return roundSuccess() == 1 })

	// A second client, for the write during the stall.
	api := e.client(t)
	api.hc.Timeout = 10 * time.Second // a write that hangs fails the test instead of hanging it
	api.login(auth.RoleOperator)
	api.get("/runbook") // a CSRF token of the signed-in session

	// One browser per page, each signed in: the overview, a runbook step,
	// and one that loads a page afresh during the stall (signing in then
	// would need the database).
	b, step, fresh := stallBrowser(t, e), stallBrowser(t, e), stallBrowser(t, e)
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`#overview-live`))), "stall-q")
	browser.Do(t, step, chromedp.Navigate(e.http.URL+"/runbook/queues"), chromedp.WaitVisible(css(`[data-testid="runbook-step-queues"]`)))
	waitPage(t, step, "the step's panels to load", `document.querySelectorAll('[data-testid^="slot-"]').length === 0 &&
		document.querySelector('#panel-dead_letters').textContent.includes('stall.witness')`, 30*time.Second)
	const livePanels = `[...document.querySelectorAll('[data-refresh-url]')]`
	// The live blocks of the lists, each in a tab of one more browser.
	lists := stallBrowser(t, e)
	listTabs := map[string]context.Context{}
	for _, l := range stallLists {
		tab, cancel := chromedp.NewContext(lists)
		t.Cleanup(cancel)
		// Open the tab under its own context: one opened by a step would
		// close when that step's deadline context ends.
		require.NoError(t, chromedp.Do(tab))
		browser.Do(t, tab, chromedp.Navigate(e.http.URL+l.path), chromedp.WaitVisible(css("#"+l.live)))
		require.Contains(t, browser.Get(t, tab, chromedp.Text(css("#"+l.live))), l.keeps)
		listTabs[l.path] = tab
	}

	freezeServer(t, srv)

	// The first scrape that waits out its Wait without getting a round
	// (the round is hung on the frozen server) must already say the round
	// did not succeed; scrapes before it may be served the last round.
	waitUntil(t, 30*time.Second, "a scrape that waited for a round", func() bool {
		start := time.Now()
		v := roundSuccess()
		if time.Since(start) < time.Second {
			return false
		}
		require.Equal(t, 0.0, v, "a scrape that got no round within its wait must not keep the last success")
		return true
	})

	t.Run("ReadyzAnswers", func(t *testing.T) {
		start := time.Now()
		hc := http.Client{Timeout: 10 * time.Second}
		resp, err := hc.Get(e.http.URL + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		require.Less(t, time.Since(start), 3*time.Second, "/readyz must answer within its one-second bound")
	})
	t.Run("WritesFailFast", func(t *testing.T) {
		api := *api
		api.t = t
		start := time.Now()
		resp, body := api.post("/incidents", url.Values{"_csrf": {api.csrf}, "title": {"written during the stall"}})
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
		require.Contains(t, body, "nothing was changed")
		require.Less(t, time.Since(start), 5*time.Second)
	})

	browser.Do(t, fresh, chromedp.Navigate(e.http.URL+"/runbook"), chromedp.WaitVisible(css(`[data-testid="runbook-steps"]`)))
	// The server answers a fresh page load at once, frame and all; the
	// browser's own time to draw it is not the server's to bound (this
	// machine may be busy), so it is only logged.
	t.Run("PagesAnswerFast", func(t *testing.T) {
		api := *api
		api.t = t
		for _, path := range []string{"/", "/runbook/queues"} {
			start := time.Now()
			resp, body := api.get(path)
			took := time.Since(start)
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.Contains(t, body, `<nav class="side"`, "%s must come with its frame", path)
			require.Less(t, took, 5*time.Second, "%s took %s with the database frozen", path, took)
			t.Logf("%s with the database frozen: %s", path, took.Round(time.Millisecond))
		}
	})
	start := time.Now()
	browser.Do(t, fresh, chromedp.Navigate(e.http.URL+"/runbook/queues"), chromedp.WaitVisible(css(`nav.side`)))
	t.Logf("fresh page load in the browser with the database frozen: frame in %s", time.Since(start).Round(time.Millisecond))
	waitPage(t, fresh, "the fresh page's panels to say the database is not answering, under their titles", livePanels+`.length >= 3 &&
		`+livePanels+`.every(p => p.querySelector('h2') && p.textContent.includes('Database not answering'))`, 30*time.Second)

	banner := `(() => { const b = document.querySelector('[data-testid="db-banner"]');
		return b && !b.hidden && /^Database not answering for \d+s$/.test(b.textContent.trim()); })()`
	waitPage(t, b, "the overview to keep its findings, marked stale", `(() => {
		const live = document.querySelector('#overview-live');
		const mark = live.querySelector('[data-testid="stale"]');
		return mark && /^stale since \d\d:\d\d:\d\d UTC, retrying$/.test(mark.textContent) && live.textContent.includes('stall-q');
	})()`, 40*time.Second)
	waitPage(t, step, "every panel of the step to keep its rows, marked stale", livePanels+`.every(p =>
		p.querySelector('h2') && /^stale since \d\d:\d\d:\d\d UTC, retrying$/.test((p.querySelector('[data-testid="stale"]') || {}).textContent)) &&
		document.querySelector('#panel-dead_letters').textContent.includes('stall.witness')`, 40*time.Second)
	for _, l := range stallLists {
		waitPage(t, listTabs[l.path], "the live block of "+l.path+" to keep its rows, marked stale", `(() => {
			const live = document.querySelector('#`+l.live+`');
			const mark = live.querySelector('[data-testid="stale"]');
			return mark && /^stale since \d\d:\d\d:\d\d UTC, retrying$/.test(mark.textContent) && live.textContent.includes('`+l.keeps+`');
		})()`, 40*time.Second)
	}
	browser.Screenshot(t, listTabs["/deadletters"], "stall-deadletters")
	for name, tab := range map[string]context.Context{"overview": b, "step": step, "fresh": fresh} {
		waitPage(t, tab, "the banner on the "+name+" page", banner, 30*time.Second)
	}
	browser.Screenshot(t, b, "stall-overview")
	browser.Screenshot(t, step, "stall-runbook-step")
	browser.Screenshot(t, fresh, "stall-fresh-load")
	waitUntil(t, 30*time.Second, "console_diagnostics_last_round_success to drop to 0", func() bool { return roundSuccess() == 0 })

	resumeServer(t, srv)

	recovered := `!document.querySelector('[data-stale]') && document.querySelector('[data-testid="db-banner"]').hidden`
	waitPage(t, b, "the overview to recover", recovered+` && document.querySelector('#overview-live').textContent.includes('stall-q')`, 60*time.Second)
	waitPage(t, step, "the step's panels to recover", recovered+` && `+livePanels+`.every(p => p.dataset.status === 'ok') &&
		document.querySelector('#panel-dead_letters').textContent.includes('stall.witness')`, 60*time.Second)
	waitPage(t, fresh, "the page loaded during the stall to fill its panels", recovered+` && `+livePanels+`.every(p => p.dataset.status === 'ok') &&
		document.querySelector('#panel-dead_letters').textContent.includes('stall.witness')`, 60*time.Second)
	for _, l := range stallLists {
		waitPage(t, listTabs[l.path], "the live block of "+l.path+" to recover", recovered+
			` && document.querySelector('#`+l.live+`').textContent.includes('`+l.keeps+`')`, 60*time.Second)
	}
	waitUntil(t, 30*time.Second, "console_diagnostics_last_round_success to come back to 1", func() bool { return roundSuccess() == 1 })
}

// stallLists are the list pages whose live blocks the stall test watches:
// the block's id and a text it must keep while the database is frozen.
var stallLists = []struct{ path, live, keeps string }{
	{"/queues", "queues-live", "stall-q"},
	{"/workers", "workers-live", "Worker processes"},
	{"/deadletters", "deadletters-live", "stall.witness"},
}

// stallBrowser starts a browser signed in as an operator, on the overview.
func stallBrowser(t *testing.T, e *env) context.Context {
	t.Helper()
	b := browser.New(t, 6*time.Minute)
	signIn(t, b, e.http.URL, "operator")
	return b
}

// freezeServer stops every process of srv with SIGSTOP, postmaster first
// (so it forks nothing new), and resumes them at cleanup whatever happens.
func freezeServer(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	t.Cleanup(func() { signalServer(t, srv, syscall.SIGCONT) })
	signalServer(t, srv, syscall.SIGSTOP)
}

// resumeServer wakes the processes freezeServer stopped.
func resumeServer(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	signalServer(t, srv, syscall.SIGCONT)
}

// signalServer sends sig to srv's postmaster, then to each of its children.
func signalServer(t *testing.T, srv *pgserver.Server, sig syscall.Signal) {
	t.Helper()
	f, err := os.Open(filepath.Join(srv.DataDir(), "postmaster.pid"))
	require.NoError(t, err)
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	require.NoError(t, err)
	pm, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pm, sig), "signal the postmaster %d", pm)
	procs, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	children := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone since the glob
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pm) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if syscall.Kill(pid, sig) == nil {
			children++
		}
	}
	require.Positive(t, children, "the postmaster %d has no children to signal", pm)
}

// gaugeValue gathers g and returns the unlabelled gauge name.
func gaugeValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitPage waits until expr is true on the tab, failing the test (with a
// screenshot) after within.
func waitPage(t *testing.T, tab context.Context, what, expr string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, within)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(200*time.Millisecond))); err != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(tab), 5*time.Second)
		defer cancel()
		text, _ := chromedp.Run(sctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
		t.Fatalf("waited %s for %s: %v; the page showed:\n%s", within, what, err, text)
	}
}
