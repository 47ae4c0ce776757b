package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

// signIn signs in through the form and waits for the overview.
func signIn(t *testing.T, b context.Context, base, user string) {
	t.Helper()
	browser.Do(t, b,
		chromedp.Navigate(base+"/login"),
		chromedp.SendKeys(css(`#name`), user),
		chromedp.SendKeys(css(`#password`), testPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="findings"]`)),
	)
}

// overflowJS names the elements that stick out of the page's width, or ""
// when there is none. Those inside a box that scrolls sideways on its own
// are fine, and so is what a screen-reader-only box holds; those clipped by
// an ancestor with overflow-x hidden or clip count (the page does not
// scroll, but the content cannot be reached), and so does anything that
// makes the page itself scroll.
const overflowJS = `(() => {
	const w = innerWidth;
	const within = el => { for (let p = el.parentElement; p; p = p.parentElement) {
		const st = getComputedStyle(p);
		if (st.clipPath !== "none" || p.getBoundingClientRect().width <= 1) return "visually hidden";
		const o = st.overflowX;
		if (o === "auto" || o === "scroll") return "a scrolling box";
		if (o === "hidden" || o === "clip") return "clipped by " + p.tagName.toLowerCase() + (p.className ? "." + String(p.className).split(" ").join(".") : "");
	} return "the page"; };
	const out = [...document.querySelectorAll("body *")].filter(el => {
		const r = el.getBoundingClientRect();
		return r.width > 0 && r.height > 0 && r.right > w + 1 && getComputedStyle(el).visibility !== "hidden" && !["a scrolling box", "visually hidden"].includes(within(el));
	}).slice(0, 4).map(el => el.tagName.toLowerCase() + (el.className ? "." + String(el.className).split(" ").join(".") : "") +
		" right=" + Math.round(el.getBoundingClientRect().right) + " (" + within(el) + ")");
	if (document.documentElement.scrollWidth <= w && out.length === 0) return "";
	return "scrollWidth " + document.documentElement.scrollWidth + ", innerWidth " + w + ": " + out.join(", ");
})()`

// waitLeft waits until the tab has left the page at path and the next one
// has loaded, and returns its URL. Evaluations fail while the tab
// navigates; they are retried until the step deadline.
func waitLeft(t *testing.T, b context.Context, path string) string {
	t.Helper()
	deadline := time.Now().Add(browser.StepTimeout)
	for {
		sctx, cancel := context.WithTimeout(b, 2*time.Second)
		url, err := chromedp.Run(sctx, chromedp.Evaluate[string](`document.readyState === "complete" && !location.pathname.startsWith(`+strconv.Quote(path)+`) ? location.href : ""`))
		cancel()
		if err == nil && url != "" {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tab did not leave %s (last error: %v)", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requireNoPageOverflow fails when the page scrolls sideways or clips
// content at its right edge.
func requireNoPageOverflow(t *testing.T, b context.Context, what string) {
	t.Helper()
	require.Empty(t, browser.Get(t, b, chromedp.Evaluate[string](overflowJS)), "%s scrolls sideways or clips content", what)
	requireScrollersFocusable(t, b, what)
}

// requireScrollersFocusable fails when a box in <main> scrolls sideways but
// takes no keyboard focus. app.js measures the boxes a swap brought in one
// animation frame after htmx settles them, so the check is repeated until
// it holds or the step's time is up: a page is judged once it has settled,
// not in the frames between the swap and the measure.
func requireScrollersFocusable(t *testing.T, b context.Context, what string) {
	t.Helper()
	deadline := time.Now().Add(browser.StepTimeout)
	for {
		boxes := browser.Get(t, b, chromedp.Evaluate[string](unfocusableScrollJS))
		if boxes == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has a box that scrolls sideways but takes no keyboard focus: %s", what, boxes)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unfocusableScrollJS names the boxes that scroll sideways but neither take
// keyboard focus nor hold anything that does, or "" when there is none.
const unfocusableScrollJS = `(() => [...document.querySelectorAll("main *")].filter(el => {
	const o = getComputedStyle(el).overflowX;
	if (o !== "auto" && o !== "scroll") return false;
	if (el.scrollWidth <= el.clientWidth + 1 || el.getBoundingClientRect().width === 0) return false;
	return el.tabIndex < 0 && !el.querySelector("a[href], button, input, select, textarea, [tabindex]");
}).slice(0, 4).map(el => el.tagName.toLowerCase() + "." + String(el.className).split(" ").join(".") + " " + el.scrollWidth + ">" + el.clientWidth).join(", "))()`

// requireInView fails unless the element is shown whole within the
// viewport's width.
func requireInView(t *testing.T, b context.Context, sel, what string) {
	t.Helper()
	box := browser.Get(t, b, chromedp.Evaluate[string](fmt.Sprintf(`(() => { const el = document.querySelector(%q);
		if (!el) return "missing"; const r = el.getBoundingClientRect();
		if (r.width === 0 || r.height === 0) return "not shown";
		return r.left >= 0 && r.right <= innerWidth + 0.5 ? "" : "from " + Math.round(r.left) + " to " + Math.round(r.right) + " of " + innerWidth; })()`, sel)))
	require.Empty(t, box, "%s (%s) is not within the screen's width", what, sel)
}

// TestBrowserPhone uses the console on a 390x844 phone during a lock chain
// with an open incident and dead letters: on the overview, the blocking
// step, the dead letters and an action's page the page never scrolls
// sideways, the actions are whole on screen (finding actions full width),
// the top bar does not cover the content and shows the incident, and the
// menu button opens the navigation, which leads to another page.
func TestBrowserPhone(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 200 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th, private: true})
	ctx := context.Background()
	db := e.srv.cfg.Pool
	_, err := db.Exec(ctx, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'emails-eu', 'send_receipt', 'dead', 'smtp.timeout', 'dial tcp 10.0.0.7:25: i/o timeout while sending the receipt of a very long order', now(), 8
		FROM generate_series(1, 12)`)
	require.NoError(t, err)
	inc, err := audit.IncidentOpen(ctx, db, audit.IncidentOpenParams{Title: "checkout latency after the deploy", OpenedBy: "admin"})
	require.NoError(t, err)
	lc := newLockChain(t, e.url)
	root := strconv.Itoa(int(lc.rootPID))

	b := browser.New(t, 180*time.Second)
	browser.Do(t, b, chromedp.EmulateViewport(390, 844))
	signIn(t, b, e.http.URL, "operator")
	require.Equal(t, 390, browser.Get(t, b, chromedp.Evaluate[int](`innerWidth`)), "the phone's viewport")
	shot := func(name string) { browser.Screenshot(t, b, "phone-"+name) }

	// Overview: the root blocker's finding, stacked, its actions full width.
	browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="finding-lock.root_blocker"]`)))
	requireNoPageOverflow(t, b, "the overview")
	finding := `[data-testid="finding-lock.root_blocker"]`
	requireInView(t, b, finding+` [data-testid="action-backend.cancel"]`, "the finding's cancel button")
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`(() => {
		const li = document.querySelector('`+finding+`'), btn = li.querySelector('[data-testid="action-backend.cancel"]');
		return btn.getBoundingClientRect().width >= 0.9 * li.getBoundingClientRect().width; })()`)), "a finding's action takes the full width")
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('[data-testid="topbar"]').getBoundingClientRect().bottom <=
		document.querySelector('main').getBoundingClientRect().top + 0.5`)), "the top bar ends above the content")
	pill := browser.Get(t, b, chromedp.Text(css(`[data-testid="open-incident"]`)))
	require.Contains(t, pill, "checkout latency after the deploy")
	requireInView(t, b, `[data-testid="open-incident"]`, "the incident pill")
	require.Equal(t, fmt.Sprintf("/incidents/%d", inc.ID), browser.Get(t, b, chromedp.Evaluate[string](`document.querySelector('[data-testid="open-incident"]').getAttribute("href")`)))
	shot("overview")

	// The menu: hidden until its button opens it; a link navigates.
	require.False(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('nav.side').getBoundingClientRect().width > 0`)), "the navigation starts hidden")
	requireInView(t, b, `[data-testid="menu-button"]`, "the menu button")
	browser.Do(t, b,
		chromedp.Click(css(`[data-testid="menu-button"]`)),
		chromedp.WaitVisible(css(`nav.side a[href="/deadletters"]`)),
	)
	require.Equal(t, "true", browser.Get(t, b, chromedp.Evaluate[string](`document.querySelector('[data-testid="menu-button"]').getAttribute("aria-expanded")`)))
	requireInView(t, b, `nav.side a[href="/deadletters"]`, "the menu's Dead letters link")
	shot("menu")
	browser.Do(t, b,
		chromedp.Click(css(`nav.side a[href="/deadletters"]`)),
		chromedp.WaitVisible(css(`[data-testid="deadletters"]`)),
	)
	require.True(t, strings.HasSuffix(browser.Get(t, b, chromedp.Location()), "/deadletters"))
	require.False(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('nav.side').getBoundingClientRect().width > 0`)), "the menu is closed on the new page")

	// Dead letters: one card per group, the requeue button whole.
	browser.Get(t, b, chromedp.Poll[bool](`document.querySelectorAll('[data-testid^="slot-"]').length === 0`))
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`main`))), "smtp.timeout")
	requireNoPageOverflow(t, b, "the dead letters")
	requireInView(t, b, `a[data-testid="action-deadletters.requeue"][href*="error_class=smtp.timeout"]`, "the requeue button")
	shot("deadletters")

	// The blocking step: the tree with the root's cancel button on screen.
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/runbook/blocking"), chromedp.WaitVisible(css(`[data-testid="panel-blocking_tree"]`)))
	browser.Get(t, b, chromedp.Poll[bool](`document.querySelectorAll('[data-testid^="slot-"]').length === 0`))
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="panel-blocking_tree"]`))), root)
	requireNoPageOverflow(t, b, "the blocking step")
	treeCancel := `[data-testid="panel-blocking_tree"] a[data-testid="action-backend.cancel"]`
	requireInView(t, b, treeCancel, "the root blocker's cancel button")
	shot("blocking")

	// The action's page, from that button: form, preview, execute button.
	browser.Do(t, b, chromedp.Click(css(treeCancel)), chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)))
	require.Contains(t, browser.Get(t, b, chromedp.Location()), "pid="+root)
	requireNoPageOverflow(t, b, "the action's form")
	requireInView(t, b, `[data-testid="action-preview-button"]`, "the preview button")
	browser.Do(t, b, chromedp.Click(css(`[data-testid="action-preview-button"]`)), chromedp.WaitVisible(css(`[data-testid="action-preview"]`)))
	requireNoPageOverflow(t, b, "the action's preview")
	requireInView(t, b, `[data-testid="action-execute"]`, "the execute button")
	shot("action")

	// Wide tables are read a row at a time: the audit trail is labelled
	// cards on a phone, as tables with actions are (the workers and the top
	// statements too: TestWideTablesAreCardsOnAPhone).
	recordAudit(t, e, 1, "olga", "queue.pause", audit.OutcomeSucceeded, nil)
	for _, page := range []struct{ path, row string }{
		{"/audit", `[data-testid="audit-row"]`},
		{"/jobs?status=dead&queue=emails-eu", `[data-testid="panel-jobs"] tbody tr`},
	} {
		browser.Do(t, b, chromedp.Navigate(e.http.URL+page.path), chromedp.WaitVisible(css(page.row)))
		requireNoPageOverflow(t, b, page.path)
		// The filters fold into a summary naming those on, so the first
		// screen shows data: the first row starts above the fold.
		require.False(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('[data-testid="filters-fold"]').open`)),
			"%s: the filters are folded on a phone", page.path)
		top := browser.Get(t, b, chromedp.Evaluate[float64](`document.querySelector('`+page.row+`').getBoundingClientRect().top`))
		require.Less(t, top, 844.0-40, "%s: the first row starts above the fold", page.path)
		require.Equal(t, "block", browser.Get(t, b, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+page.row+`')).display`)),
			"%s: each row is a card", page.path)
		require.NotEmpty(t, browser.Get(t, b, chromedp.Evaluate[string](`document.querySelector('`+page.row+` td').dataset.label || ""`)),
			"%s: each cell says what it is", page.path)
		shot(strings.TrimPrefix(strings.ReplaceAll(strings.Split(page.path, "?")[0], "/", "-"), "-"))
	}
	require.Equal(t, "queue emails-eu", browser.Get(t, b, chromedp.Text(css(`[data-testid="filters-active"]`))),
		"the folded filters say which are on")

	// Pages whose pickers or filters come before their evidence fold them
	// the same way: the history page's time picker, the lock episodes'
	// filters, and a typed range in the time bar of an evidence page (the
	// statements, in the past). What each shows first starts above the fold.
	sampled := time.Now().UTC().Add(-20 * time.Minute).Truncate(time.Second)
	doc, err := json.Marshal(map[string]any{diagnostics.HistoryBlockingTree: []diagnostics.BlockingNode{
		{Kind: "backend", PID: 4242, IsRoot: true, BlockedCount: 12, ApplicationName: "nightly-report", Query: "LOCK TABLE accounts"},
		{Kind: "backend", PID: 4243, Depth: 1, BlockedBy: []int32{4242}, ApplicationName: "billing-api", Query: "UPDATE accounts SET n = n + 1"},
	}})
	require.NoError(t, err)
	e.exec(t, `INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc) VALUES ($1, 'phone-test', 1, $2::jsonb)`, sampled, string(doc))
	e.exec(t, `INSERT INTO lock_episodes (start_at, last_seen_at, end_at, end_seen, recorded_by, root_pid, root_application,
		lock_mode, lock_target, peak_waiting, waited_seconds) VALUES ($1::timestamptz, $1::timestamptz + interval '40 s', $1::timestamptz + interval '41 s', true, 'phone-test', 4242,
		'nightly-report', 'RowExclusiveLock', 'accounts', 12, 300)`, sampled.Add(-10*time.Minute))
	for _, page := range []struct{ path, first, active string }{
		{"/history", `[data-testid="history-moments"] tbody tr`, "last 1h · at "},
		{"/lock-episodes", `[data-testid^="lock-episode-"] header`, "last 1h"},
		{"/database/statements?from=1h+ago&to=now", `[data-testid="panel-statements_top"] [data-testid="panel-not-recorded"]`, "from "},
	} {
		browser.Do(t, b, chromedp.Navigate(e.http.URL+page.path), chromedp.WaitVisible(css(page.first)))
		requireNoPageOverflow(t, b, page.path)
		require.False(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('[data-testid="filters-fold"]').open`)),
			"%s: the picker is folded on a phone", page.path)
		require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="filters-active"]`))), page.active,
			"%s: the folded picker says what it shows", page.path)
		top := browser.Get(t, b, chromedp.Evaluate[float64](`document.querySelector('`+page.first+`').getBoundingClientRect().top`))
		require.Less(t, top, 844.0-40, "%s: %s starts above the fold", page.path, page.first)
		shot("fold-" + strings.Trim(strings.NewReplacer("/", "-", "?", "-", "=", "-", "&", "-", "+", "-").Replace(page.path), "-"))
	}
	// A tap on the summary opens the picker again.
	browser.Do(t, b, chromedp.Click(css(`[data-testid="filters-fold"] > summary`)), chromedp.WaitVisible(css(`[data-testid="timebar-form"]`)))
}

// TestBrowserFinish checks the finish at 1440x900: no table is clipped,
// headings are words rather than catalog names, every time is relative with
// its absolute UTC time on hover, no placeholder looks like a value, the
// open incident's pill is on every page (and leaves when it is closed),
// "?" lists every shortcut and "g d" follows one, the jump box goes to a
// job, a queue, a session by pid and an incident, and the theme toggle
// switches to dark, survives a reload (the server renders it) and goes back
// to the system's.
func TestBrowserFinish(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	ctx := context.Background()
	db := e.srv.cfg.Pool
	var job int64
	require.NoError(t, db.QueryRow(ctx, `WITH ins AS (INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'emails-eu', 'send_receipt', 'dead', 'smtp.timeout', 'i/o timeout', now(), 8 FROM generate_series(1, 3) RETURNING id)
		SELECT max(id) FROM ins`).Scan(&job))
	inc, err := audit.IncidentOpen(ctx, db, audit.IncidentOpenParams{Title: "replica lag after the deploy", OpenedBy: "admin"})
	require.NoError(t, err)
	// A session idle in a transaction: the jump box finds it by pid.
	app := testdb.Connect(t, e.url, "nightly-report")
	var appPID int
	require.NoError(t, app.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&appPID))
	_, err = app.Exec(ctx, "BEGIN; SELECT count(*) FROM jobs")
	require.NoError(t, err)

	b := browser.New(t, 180*time.Second)
	signIn(t, b, e.http.URL, "admin")
	for _, path := range []string{"/", "/runbook/blocking", "/deadletters", "/jobs", "/queues", "/database/activity", "/database/maintenance",
		"/database/resources", "/workers", "/audit", "/actions/deadletters.requeue?queue=emails-eu", "/history", "/incidents"} {
		browser.Do(t, b, chromedp.Navigate(e.http.URL+path), chromedp.WaitVisible(css(`main`)))
		browser.Get(t, b, chromedp.Poll[bool](`document.querySelectorAll('[data-testid^="slot-"]').length === 0`))
		requireNoPageOverflow(t, b, path)
		clipped := browser.Get(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('main .table-wrap, main table')]
			.filter(w => w.scrollWidth > w.clientWidth + 1).map(w => (w.closest('[id]') || {}).id + " " + w.scrollWidth + ">" + w.clientWidth)`))
		require.Empty(t, clipped, "%s: tables clipped at 1440 px", path)
		badHeads := browser.Get(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('main th')].map(th => th.textContent.trim())
			.filter(h => h !== "" && (/_|\b(tup|blks|xact|lsn|fpi|ms)\b/.test(h) || h[0] !== h[0].toUpperCase()))`))
		require.Empty(t, badHeads, "%s: column headings that are not words", path)
		badTimes := browser.Get(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('time')]
			.filter(el => !el.hasAttribute("data-ts") || !/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/.test(el.title) ||
				!/( ago$|^in )/.test(el.textContent.trim()) || el.textContent.trim() === "")
			.map(el => el.outerHTML)`))
		require.Empty(t, badTimes, "%s: times not shown relative with the absolute time on hover", path)
		badHolders := browser.Get(t, b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('input[placeholder], textarea[placeholder]')]
			.map(i => i.placeholder).filter(p => /\d{4}-\d\d-\d\d|^\d+(\.\d+)?$/.test(p))`))
		require.Empty(t, badHolders, "%s: placeholders that look like values", path)
		require.Equal(t, fmt.Sprintf("/incidents/%d", inc.ID),
			browser.Get(t, b, chromedp.Evaluate[string](`(document.querySelector('[data-testid="open-incident"]') || {getAttribute: () => "no pill"}).getAttribute("href")`)),
			"%s: the open incident's pill", path)
	}
	pill := browser.Get(t, b, chromedp.Text(css(`[data-testid="open-incident"]`)))
	require.Contains(t, pill, "replica lag after the deploy")
	require.Regexp(t, `\d+(ms|s) ago`, pill, "the pill says how long the incident has been open")
	browser.Screenshot(t, b, "finish-incidents")

	// Help: "?" opens the dialog with every shortcut; "g d" goes to a page.
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/"), chromedp.WaitVisible(css(`[data-testid="findings"]`)), chromedp.KeyEvent("?"),
		chromedp.WaitVisible(css(`[data-testid="help-dialog"]`)))
	require.Equal(t, len(views.Shortcuts), browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="help-dialog"] [data-testid="shortcut"]').length`)))
	helpText := browser.Get(t, b, chromedp.Text(css(`[data-testid="help-dialog"]`)))
	for _, k := range views.Shortcuts {
		require.Contains(t, helpText, k.What)
	}
	browser.Screenshot(t, b, "finish-help")
	browser.Do(t, b, chromedp.KeyEvent("g"), chromedp.KeyEvent("d"), chromedp.WaitVisible(css(`[data-testid="deadletters"]`)))

	// The jump box, focused with "/".
	jump := func(q string) string {
		browser.Do(t, b, chromedp.KeyEvent("/"))
		require.Equal(t, "jump", browser.Get(t, b, chromedp.Evaluate[string](`document.activeElement.id`)), "/ focuses the jump box")
		// CDP delivers the key's character as an event of its own, which
		// lands in the box now focused; a browser's keydown preventDefault
		// stops it, so clear it here.
		browser.Get(t, b, chromedp.Evaluate[string](`document.getElementById("jump").value = ""`))
		browser.Do(t, b, chromedp.SendKeys(css(`#jump`), q))
		// Enter submits the form; submitting it after this evaluation
		// returns keeps the navigation out of the evaluation.
		browser.Get(t, b, chromedp.Evaluate[bool](`setTimeout(() => document.querySelector('[data-testid="jump-form"]').requestSubmit(), 0) > 0`))
		return waitLeft(t, b, "/deadletters")
	}
	at := jump(fmt.Sprintf("#%d", job))
	require.True(t, strings.HasSuffix(at, fmt.Sprintf("/jobs/%d", job)), "a job id goes to the job, not %s", at)
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/deadletters"), chromedp.WaitVisible(css(`main`)))
	require.True(t, strings.HasSuffix(jump("emails-eu"), "/queues/emails-eu"), "a queue name goes to the queue")
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/deadletters"), chromedp.WaitVisible(css(`main`)))
	require.True(t, strings.HasSuffix(jump(fmt.Sprintf("incident %d", inc.ID)), fmt.Sprintf("/incidents/%d", inc.ID)), "incident N goes to it")
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/deadletters"), chromedp.WaitVisible(css(`main`)))
	jump(fmt.Sprintf("pid %d", appPID))
	browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="jump-backend"]`)))
	backend := browser.Get(t, b, chromedp.Text(css(`[data-testid="jump-backend"]`)))
	require.Contains(t, backend, "nightly-report")
	require.Contains(t, backend, "idle in transaction")
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('[data-testid="jump-backend"] a[href*="pid=%d"]') !== null`, appPID))),
		"the session's page offers its actions for that pid")
	browser.Screenshot(t, b, "finish-jump-pid")

	// Theme: dark, kept over a reload, then back to the system's (light here).
	bg := func() string {
		return browser.Get(t, b, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	}
	require.Equal(t, "rgb(246, 247, 249)", bg())
	browser.Do(t, b, chromedp.Click(css(`[data-testid="theme-toggle"]`)))
	require.Equal(t, "dark", browser.Get(t, b, chromedp.Evaluate[string](`document.documentElement.dataset.theme || ""`)))
	require.Equal(t, "rgb(15, 18, 22)", bg())
	browser.Do(t, b, chromedp.Reload(), chromedp.WaitVisible(css(`main`)))
	require.Equal(t, "rgb(15, 18, 22)", bg(), "the dark theme is kept over a reload")
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`fetch(location.href).then(r => r.text()).then(t => /<html[^>]*data-theme="dark"/.test(t))`, chromedp.EvalAwaitPromise)),
		"the server renders the dark theme from the toggle's cookie")
	browser.Screenshot(t, b, "finish-dark")
	browser.Do(t, b, chromedp.Click(css(`[data-testid="theme-toggle"]`)))
	require.Equal(t, "rgb(246, 247, 249)", bg(), "light")
	browser.Do(t, b, chromedp.Click(css(`[data-testid="theme-toggle"]`)))
	require.Equal(t, "", browser.Get(t, b, chromedp.Evaluate[string](`document.documentElement.dataset.theme || ""`)), "back to the system's")

	// Closing the incident takes the pill away.
	_, err = audit.IncidentClose(ctx, db, audit.IncidentCloseParams{ID: inc.ID, ClosedBy: "admin", Summary: "lag gone"})
	require.NoError(t, err)
	e.srv.openIncidents.Invalidate()
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/jobs"), chromedp.WaitVisible(css(`main`)))
	require.Zero(t, browser.Get(t, b, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="open-incident"]').length`)))
}
