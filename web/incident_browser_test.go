package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// billingChain stages the demo's lock chain: a billing-api session holds
// a row lock while it sleeps, and two sessions of other applications wait
// for it. rootDone receives the root's statement's end.
func billingChain(t *testing.T, dbURL string) (rootPID int32, rootDone <-chan error) {
	t.Helper()
	ctx := context.Background()
	admin := testdb.Connect(t, dbURL, "test-setup")
	_, err := admin.Exec(ctx, `CREATE TABLE demo_accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
		INSERT INTO demo_accounts (id) VALUES (1), (2)`)
	require.NoError(t, err)
	bg, cancel := context.WithCancel(ctx)
	done := make(chan error, 3)
	run := func(app, sql string) chan error {
		c := testdb.Connect(t, dbURL, app)
		ch := make(chan error, 1)
		go func() { _, err := c.Exec(bg, sql); ch <- err; done <- err }()
		return ch
	}
	t.Cleanup(func() {
		cancel()
		for range 3 {
			<-done
		}
	})
	rc := run("billing-api", `SELECT pg_sleep(600) FROM (SELECT id FROM demo_accounts WHERE id = 1 FOR UPDATE) AS held`)
	testdb.WaitBackend(t, admin, "billing-api", "state = 'active' AND query LIKE '%pg_sleep%'")
	run("orders-api", `UPDATE demo_accounts SET balance = balance + 1 WHERE id = 1`)
	run("reports", `UPDATE demo_accounts SET balance = balance - 1 WHERE id = 1`)
	testdb.WaitBackend(t, admin, "reports", "wait_event_type = 'Lock'")
	require.NoError(t, admin.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = 'billing-api'").Scan(&rootPID))
	return rootPID, rc
}

// TestBrowserIncidentFromFindingToPostMortem walks an incident through the
// console as an operator would, on the demo's chain: overview, the
// finding's page, "Open incident" on the finding (its evidence captured at
// once), cancel the root from the incident's own narrative with a reason,
// the result, capture the blocking tree again once it cleared, a note, the
// export, and the history showing the chain. From the finding to a
// cleared chain takes at most 10 clicks, and the incident holds the tree
// before and after.
func TestBrowserIncidentFromFindingToPostMortem(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 200 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th, private: true})
	withRecorder(t, e, time.Second)
	rootPID, rootDone := billingChain(t, e.url)
	root := strconv.Itoa(int(rootPID))
	start := time.Now().UTC()

	b := browser.New(t, 4*time.Minute)
	signIn(t, b, e.http.URL, "operator")
	finding := `[data-testid="finding-lock.root_blocker"]`
	browser.Do(t, b, chromedp.WaitVisible(css(finding)))
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(finding))), "billing-api")

	clicks := 0
	click := func(sel string, then string) {
		t.Helper()
		clicks++
		browser.Do(t, b, chromedp.Click(css(sel)), chromedp.WaitVisible(css(then)))
	}
	// follow is click for a click that loads a page (followTo).
	follow := func(sel string, then string) {
		t.Helper()
		clicks++
		followTo(t, b, sel, then)
	}
	// The finding's page, then one click opens the incident with its
	// evidence: no title to type.
	follow(finding+` [data-testid="finding-runbook"]`, `[data-testid="step-findings"]`)
	require.Equal(t, "Open incident", browser.Get(t, b, chromedp.Text(css(`[data-testid="step-findings"] `+finding+` [data-testid="incident-from-finding"] button`))))
	follow(`[data-testid="step-findings"] `+finding+` [data-testid="incident-from-finding"] button`, `[data-testid="timeline"]`)
	title := browser.Get(t, b, chromedp.Text(css(`[data-testid="incident"] h1`)))
	require.Contains(t, title, "pid "+root, "the title comes from the finding")
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="open-incident"]`))), "pid "+root, "the pill shows the incident")
	before := browser.Get(t, b, chromedp.Text(css(`[data-testid="timeline"] [data-testid="timeline-panel"]`)))
	require.Contains(t, before, "root blocker", "the blocking tree was captured at once")
	incidentURL, _, _ := strings.Cut(browser.Get(t, b, chromedp.Location()), "#")

	// Cancel the root from the incident's narrative, with a reason.
	follow(`[data-testid="narrative"] a[data-testid="action-backend.cancel"]`, `[data-testid="action-preview-button"]`)
	click(`[data-testid="action-preview-button"]`, `[data-testid="action-preview"]`)
	clicks++
	browser.Do(t, b, executeWith("billing-api holds the row lock the order writers wait on", "action-done")...)
	select {
	case <-rootDone:
	case <-time.After(30 * time.Second):
		t.Fatal("the root's statement still runs 30s after the cancel")
	}
	require.LessOrEqual(t, clicks, 10, "from the finding to a cleared chain")
	t.Logf("clicks from the finding to a cleared chain: %d", clicks)

	// Capture after, once the console's tree no longer has the chain.
	op := e.signedIn(t, "operator")
	require.Eventually(t, func() bool {
		return !strings.Contains(op.page("/panels/blocking_tree", "Accept", "application/json"), `"pid":`+root+`,`)
	}, 30*time.Second, 300*time.Millisecond, "the console's blocking tree still shows the root")
	follow(`[data-testid="open-incident"]`, `[data-testid="timeline"]`)
	follow(`[data-testid="timeline-evidence"] [data-testid="capture-again"]`, `[data-testid="timeline"]`)
	clicks++
	browser.Do(t, b, chromedp.SendKeys(css(`#note`), "billing-api's batch held the row for minutes; cancelled, orders flowed again"))
	follow(`[data-testid="incident-note"]`, `[data-testid="timeline-note"]`)
	panels := browser.Get(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="timeline-evidence"]')].map(li => li.innerText)`))
	require.Contains(t, panels[0], "root blocker", "before: the chain")
	require.Contains(t, panels[len(panels)-1], "Nobody is waiting on a lock", "after: cleared")
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="timeline"]`))), "backend.cancel")

	// The export, rendered for a reader, at both widths.
	md := browser.Get(t, b, chromedp.Evaluate[string](`fetch(document.querySelector('[data-testid="incident-export"]').href).then(r => r.text())`,
		chromedp.EvalAwaitPromise))
	require.Contains(t, md, "| Time (UTC) | What |")
	require.Contains(t, md, "Opened because: finding lock.root_blocker")
	require.Contains(t, md, "billing-api holds the row lock")
	gfmTables(t, md)
	for width, order := range map[int]string{1440: "oldest", 390: "newest"} {
		browser.Do(t, b, chromedp.EmulateViewport(int64(width), 900), chromedp.Navigate(incidentURL+"?order="+order),
			chromedp.WaitVisible(css(`[data-testid="timeline"]`)))
		if width == 390 {
			requireNoPageOverflow(t, b, "the incident page")
		}
		browser.Screenshot(t, b, fmt.Sprintf("incident-%d", width))
		require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`(() => {
			document.querySelector('main').innerHTML = '<section class="panel" data-testid="export-rendered">' + (`+markdownToHTMLJS+`)(`+strconv.Quote(md)+`) + '</section>';
			return true;
		})()`)))
		browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="export-rendered"] table`)))
		browser.Screenshot(t, b, fmt.Sprintf("incident-export-%d", width))
	}

	// The history shows the chain as it was.
	var moment time.Time
	require.Eventually(t, func() bool {
		var ans historyAnswer
		body := op.page("/api/v1/history?" + url.Values{"check": {"blocking_tree"}, "from": {start.Format(time.RFC3339Nano)},
			"to": {time.Now().UTC().Format(time.RFC3339Nano)}}.Encode())
		require.NoError(t, json.Unmarshal([]byte(body), &ans))
		for _, s := range ans.Samples {
			var nodes []diagnostics.BlockingNode
			if json.Unmarshal(s.Data, &nodes) == nil && len(nodes) > 0 && nodes[0].PID == rootPID {
				moment = s.At
				return true
			}
		}
		return false
	}, 30*time.Second, 500*time.Millisecond, "no recorded sample holds the chain")
	browser.Do(t, b, chromedp.EmulateViewport(1440, 900),
		chromedp.Navigate(e.http.URL+"/history?"+url.Values{"at": {moment.Add(300 * time.Millisecond).Format(time.RFC3339Nano)}}.Encode()),
		chromedp.WaitVisible(css(fmt.Sprintf(`[data-testid="history-node-%d"]`, rootPID))))
	browser.Screenshot(t, b, "incident-history")
}

// markdownToHTMLJS renders the export's Markdown (headings, paragraphs,
// lists, quotes, bold, GFM tables, backslash escapes) as HTML, for a
// screenshot of what a post-mortem shows; it is no general renderer.
const markdownToHTMLJS = `(md) => {
	const esc = s => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
	const inline = s => esc(s).replace(/\\(.)/g, '$1').replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>');
	const cells = l => l.trim().slice(1, -1).split(/(?<!\\)\|/).map(c => c.trim());
	const out = [];
	const lines = md.split('\n');
	for (let i = 0; i < lines.length; i++) {
		const l = lines[i];
		if (l.startsWith('|')) {
			const head = cells(l); i++;
			let h = '<div class="table-wrap"><table><thead><tr>' + head.map(c => '<th>' + inline(c) + '</th>').join('') + '</tr></thead><tbody>';
			while (i + 1 < lines.length && lines[i + 1].startsWith('|')) { i++; h += '<tr>' + cells(lines[i]).map(c => '<td>' + inline(c) + '</td>').join('') + '</tr>'; }
			out.push(h + '</tbody></table></div>');
		} else if (/^#{1,3} /.test(l)) {
			const n = l.indexOf(' ');
			out.push('<h' + (n + 1) + '>' + inline(l.slice(n + 1)) + '</h' + (n + 1) + '>');
		} else if (l.startsWith('- ')) {
			out.push('<ul><li>' + inline(l.slice(2)) + '</li></ul>');
		} else if (l.startsWith('> ')) {
			out.push('<blockquote>' + inline(l.slice(2)) + '</blockquote>');
		} else if (l.trim() !== '') {
			out.push('<p>' + inline(l) + '</p>');
		}
	}
	return out.join('');
}`
