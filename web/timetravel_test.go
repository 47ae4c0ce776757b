package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// pastMoment stages a lock chain (root pid returned), a queue "travel"
// with four jobs and two pending outbox events, waits for the recorder to keep a sample of both, then clears
// them, so the past and the present differ. It returns the sample's time.
// An idle-in-transaction session "travel-idle-<db>" stays open: live
// evidence of a check history does not keep.
func pastMoment(t *testing.T, e *env) (at time.Time, rootPID int32) {
	t.Helper()
	ctx := context.Background()
	db := testDatabase(t, e.url)
	e.exec(t, `CREATE TABLE travel_accounts (id int PRIMARY KEY, n int NOT NULL DEFAULT 0); INSERT INTO travel_accounts (id) VALUES (1)`)
	e.exec(t, `INSERT INTO jobs (queue, kind) SELECT 'travel', 'k' FROM generate_series(1, 4)`)
	e.exec(t, `INSERT INTO outbox_events (topic, event_type, payload) SELECT 'travel', 'created', '{}' FROM generate_series(1, 2)`)
	root := testdb.Connect(t, e.url, "travel-root-"+db)
	leaf := testdb.Connect(t, e.url, "travel-leaf-"+db)
	require.NoError(t, root.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&rootPID))
	_, err := root.Exec(ctx, "BEGIN; UPDATE travel_accounts SET n = n + 1 WHERE id = 1")
	require.NoError(t, err)
	leafDone := make(chan error, 1)
	go func() {
		_, err := leaf.Exec(ctx, "UPDATE travel_accounts SET n = n + 1 WHERE id = 1")
		leafDone <- err
	}()
	testdb.WaitBackend(t, e.srv.cfg.Pool, "travel-leaf-"+db, "wait_event_type = 'Lock'")

	withRecorder(t, e, time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for at.IsZero() {
		require.False(t, time.Now().After(deadline), "no recorded sample held the chain within 30s")
		res, entry, err := recorder.PanelAt(ctx, e.srv.cfg.Pool, diagnostics.CheckBlockingTree, time.Now())
		if err == nil {
			for _, row := range res.Rows {
				if n := row.(diagnostics.BlockingNode); n.PID == rootPID && n.IsRoot {
					at = entry.At
				}
			}
		} else if !errors.Is(err, recorder.ErrNoHistory) {
			require.NoError(t, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	_, err = root.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-leafDone)
	e.exec(t, `DELETE FROM jobs WHERE queue = 'travel'`)
	e.exec(t, `DELETE FROM outbox_events WHERE topic = 'travel'`)
	idle := testdb.Connect(t, e.url, "travel-idle-"+db)
	_, err = idle.Exec(ctx, "BEGIN; SELECT 1")
	require.NoError(t, err)
	testdb.WaitBackend(t, e.srv.cfg.Pool, "travel-idle-"+db, "state = 'idle in transaction'")
	return at, rootPID
}

// TestPanelsAtAMoment: at ?at=, every panel whose check history keeps
// shows the recorded sample under a history marker, without refreshing or
// actions; a panel history does not keep says so instead of showing live
// rows; pages that hold panels and the overview follow the moment.
func TestPanelsAtAMoment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")
	moment, rootPID := pastMoment(t, e)
	at := url.Values{"at": {moment.Add(300 * time.Millisecond).Format(time.RFC3339Nano)}}.Encode()
	pid := fmt.Sprintf(`<div class="cv"><span class="indent" aria-hidden="true"></span>%d</div>`, rootPID)
	rootCell := regexp.MustCompile(`>\s*` + strconv.Itoa(int(rootPID)) + `\s*<`)
	marker := fmt.Sprintf("History · at %s (sample %s)", clock(moment.Add(300*time.Millisecond)), clock(moment))

	t.Run("RecordedPanels", func(t *testing.T) {
		recorded := 0
		for _, ck := range diagnostics.Catalog() {
			if ck.History == "" {
				continue
			}
			recorded++
			body := c.page("/panels/" + ck.Name + "?" + at)
			require.Contains(t, body, `data-testid="history-mark"`, ck.Name)
			require.Contains(t, body, marker, ck.Name)
			require.NotContains(t, body, "data-refresh-url", "%s: a panel in the past never refreshes", ck.Name)
			require.NotContains(t, body, `data-testid="action-`, "%s: no action on the past", ck.Name)
			require.NotContains(t, body, "panel-not-recorded", ck.Name)
		}
		require.Equal(t, 8, recorded, "blocking tree, activity, WAL position, queues, workers, outbox, replication, slots")
	})

	t.Run("BlockingTreeAsItWas", func(t *testing.T) {
		past := c.page("/panels/blocking_tree?" + at)
		require.Regexp(t, rootCell, past, "the chain's root, as recorded")
		require.Contains(t, past, "root blocker")
		live := c.page("/panels/blocking_tree")
		require.NotRegexp(t, rootCell, live, "the chain cleared: the live tree does not have it")
		require.NotContains(t, live, pid)
		require.Contains(t, live, "data-refresh-url")
		require.NotContains(t, live, "history-mark")

		queue := regexp.MustCompile(`>\s*travel\s*<`)
		require.Regexp(t, queue, c.page("/panels/queue_health?"+at), "the queue as recorded")
		require.NotRegexp(t, queue, c.page("/panels/queue_health"), "its jobs are gone now")
	})

	t.Run("NotRecorded", func(t *testing.T) {
		idle := "travel-idle-" + testDatabase(t, e.url)
		require.Contains(t, c.page("/panels/idle_in_transaction"), idle, "live, the idle session shows")
		past := c.page("/panels/idle_in_transaction?" + at)
		require.Contains(t, past, `data-testid="panel-not-recorded"`)
		require.Contains(t, past, "Not recorded: history keeps the blocking tree")
		require.Contains(t, past, `data-testid="history-mark"`)
		require.NotContains(t, past, idle, "never live rows under a history marker")
		require.NotContains(t, past, "data-refresh-url")
	})

	t.Run("NoSampleThen", func(t *testing.T) {
		body := c.page("/panels/activity?" + url.Values{"at": {moment.Add(-2 * time.Hour).Format(time.RFC3339)}}.Encode())
		require.Contains(t, body, `data-testid="panel-not-recorded"`)
		require.Contains(t, body, "No sample was recorded in the 30 seconds before")
	})

	t.Run("RunbookStep", func(t *testing.T) {
		live := c.page("/runbook/blocking")
		// Offered, or refused with its reason when the live evidence names
		// a root in another test's database of the shared server.
		require.Regexp(t, `data-testid="(action|refused)-`, live, "an operator may act on the present")
		require.NotContains(t, live, `data-testid="timebar-marker"`)
		past := c.page("/runbook/blocking?" + at)
		require.Contains(t, past, `data-testid="timebar-marker"`)
		require.Contains(t, past, "History · at "+clock(moment.Add(300*time.Millisecond))+" UTC")
		require.Contains(t, past, `data-refresh-url="/panels/blocking_tree?`+at+`"`, "the step's panels load at the moment")
		require.NotRegexp(t, `data-testid="(action|refused)-`, past, "nobody acts on the past")
		require.Contains(t, c.page("/database/activity?"+at), `data-refresh-url="/panels/activity?`+at+`"`)

		// The index keeps the time bar, so the choice is carried on.
		require.Contains(t, c.page("/runbook?"+at), `data-testid="timebar-marker"`)

		// A targeted runbook's evidence travels too: its panels load at
		// the moment, under the recorded heading, with no actions.
		target := "/runbook/" + diagnostics.RunbookSlotRetention
		live = c.page(target)
		require.Contains(t, live, "Live evidence")
		require.Contains(t, live, `data-testid="action-`)
		past = c.page(target + "?" + at)
		require.Contains(t, past, `data-testid="timebar-marker"`)
		require.Contains(t, past, "Recorded evidence")
		require.Regexp(t, `data-refresh-url="/panels/[a-z_]+\?`+regexp.QuoteMeta(at)+`"`, past)
		require.NotRegexp(t, `data-testid="(action|refused)-`, past, "nobody acts on the past")
	})

	t.Run("Queues", func(t *testing.T) {
		queue := regexp.MustCompile(`>\s*travel\s*<`)
		past := c.page("/queues?" + at)
		require.Contains(t, past, marker)
		require.Regexp(t, queue, past, "the queue as recorded")
		require.Contains(t, past, `data-testid="tile-queue-travel"`)
		require.NotContains(t, past, `hx-trigger="every 10s"`, "the past does not refresh")
		require.NotContains(t, past, `data-testid="action-`)
		require.NotRegexp(t, queue, c.page("/queues"), "its jobs are gone now")

		detail := c.page("/queues/travel?" + at)
		require.Contains(t, detail, marker)
		require.Regexp(t, `<dt>Ready</dt>\s*<dd[^>]*><a href="[^"]*">4</a></dd>`, detail, "four ready jobs then")
		require.Regexp(t, `<dt>Due now</dt>\s*<dd[^>]*>4</dd>`, detail, "four due then, counted exactly")
		require.Contains(t, detail, `data-testid="panel-workers"`)
		require.Contains(t, detail, "Not recorded: history keeps", "workers, tenants and dead-letter groups are live only")
		require.NotContains(t, detail, `hx-trigger="every 10s"`)
		resp, _ := c.get("/queues/travel")
		require.Equal(t, http.StatusNotFound, resp.StatusCode, "live, the queue is gone")
	})

	t.Run("Outbox", func(t *testing.T) {
		pending := regexp.MustCompile(`data-testid="tile-pending"[^>]*>\s*<div class="label">Pending</div>\s*<div class="value">(\d+)</div>`)
		past := c.page("/outbox?" + at)
		require.Contains(t, past, marker)
		require.Equal(t, "2", pending.FindStringSubmatch(past)[1], "two events pending then")
		require.Contains(t, past, "Not recorded: history keeps", "the event lists are live only")
		require.NotContains(t, past, `hx-trigger="every 10s"`)
		require.NotContains(t, past, `data-testid="action-`)
		require.NotContains(t, past, `data-testid="inbox-lookup"`, "lookups are about now")
		require.Equal(t, "0", pending.FindStringSubmatch(c.page("/outbox"))[1], "none now")
	})

	t.Run("Overview", func(t *testing.T) {
		// A chart needs two samples: wait for the recorder's next ones.
		deadline := time.Now().Add(30 * time.Second)
		for {
			entries, err := recorder.HistoryRange(context.Background(), e.srv.cfg.Pool, diagnostics.HistoryBlockingTree, moment, time.Now(), 0)
			require.NoError(t, err)
			if len(entries) >= 3 {
				break
			}
			require.False(t, time.Now().After(deadline), "fewer than 3 samples recorded within 30s")
			time.Sleep(100 * time.Millisecond)
		}
		past := c.page("/?" + at)
		require.Contains(t, past, `data-testid="history-mark"`)
		require.Contains(t, past, marker)
		require.Contains(t, past, `data-testid="timebar-marker"`)
		require.NotContains(t, past, "data-refresh-url", "the overview in the past does not refresh")
		require.NotContains(t, past, `data-testid="action-`)
		blocked := regexp.MustCompile(`data-testid="tile-blocked"[^>]*>\s*<div class="label">[^<]*</div>\s*<div class="value">(\d+)</div>`).FindStringSubmatch(past)
		require.NotNil(t, blocked, "the blocked tile")
		n, _ := strconv.Atoi(blocked[1])
		require.GreaterOrEqual(t, n, 1, "the recorded tree had a backend waiting")
		// Over a range the samples fill, the tiles chart them, marking the
		// moment.
		ranged := c.page("/?" + url.Values{"from": {moment.Add(-10 * time.Second).Format(time.RFC3339Nano)},
			"to": {time.Now().UTC().Format(time.RFC3339Nano)}, "at": {moment.Add(300 * time.Millisecond).Format(time.RFC3339Nano)}}.Encode())
		require.Contains(t, ranged, marker)
		require.Regexp(t, `data-testid="tile-blocked"[\s\S]*?data-testid="spark-readout"`, ranged, "charts of the recorded samples")
		require.Contains(t, ranged, `class="moment"`, "the moment marked on them")
		require.Contains(t, ranged, "blocked backends, ", "each chart says what it draws")

		require.Contains(t, c.page("/?window=15m"), "History · last 15 m")
		// A time it cannot read: the page, live, with the picker open on
		// what was typed and what to type instead.
		body := c.page("/?at=yesterday")
		require.Contains(t, body, `data-testid="timebar-problem">at: &#34;yesterday&#34; is not a time; type &#34;5m ago&#34;`)
		require.Contains(t, body, `value="yesterday"`)
	})

	t.Run("Browser", func(t *testing.T) {
		b := browser.New(t, 150*time.Second)
		signIn(t, b, e.http.URL, "operator")
		// "1 h" in the time picker: the step's panels are history.
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/runbook/blocking"),
			chromedp.Click(css(`[data-testid="pick-1 h"]`)),
			chromedp.WaitVisible(css(`[data-testid="timebar-marker"]`)),
			chromedp.WaitVisible(css(`#panel-blocking_tree [data-testid="history-mark"]`)),
		)
		require.Contains(t, browser.Get(t, b, chromedp.Location()), "window=1h")
		// A moment typed into the picker: the chain as it was.
		browser.Do(t, b,
			chromedp.Click(css(`[data-testid="pick-custom"]`)),
			chromedp.Clear(css(`[data-testid="timebar-from"]`)),
			chromedp.Clear(css(`[data-testid="timebar-to"]`)),
			chromedp.SetValue(css(`[data-testid="timebar-at"]`), moment.Add(300*time.Millisecond).Format(time.RFC3339Nano)),
			chromedp.Click(css(`[data-testid="timebar-show"]`)),
		)
		// The 1 h page's panel is marked too: wait for the moment's (an
		// evaluation during the navigation fails; try again).
		shown := fmt.Sprintf(`(document.querySelector('#panel-blocking_tree [data-testid="history-mark"]')?.textContent || '').includes(%q)`, "sample "+clock(moment))
		for deadline := time.Now().Add(30 * time.Second); ; {
			if ok, err := chromedp.Run(b, chromedp.Evaluate[bool](shown)); err == nil && ok {
				break
			}
			require.False(t, time.Now().After(deadline), "the panel at the typed moment did not show within 30s")
			time.Sleep(100 * time.Millisecond)
		}
		require.Contains(t, browser.Get(t, b, chromedp.Text(css(`#panel-blocking_tree`))), strconv.Itoa(int(rootPID)))
		require.Contains(t, browser.Get(t, b, chromedp.Text(css(`#panel-blocking_tree [data-testid="history-mark"]`))), "sample "+clock(moment))
		browser.Screenshot(t, b, "history-step-1440")
		// Moving to another evidence page keeps the moment.
		browser.Do(t, b,
			chromedp.Click(css(`nav.side a[href^="/database/activity"]`)),
			chromedp.WaitVisible(css(`#panel-activity [data-testid="history-mark"]`)),
		)
		require.Contains(t, browser.Get(t, b, chromedp.Location()), "at=")
		// The overview in the past, and a chart's value under the pointer.
		browser.Do(t, b,
			chromedp.Click(css(`nav.side a[href^="/?"]`)),
			chromedp.WaitVisible(css(`[data-testid="tile-blocked"] [data-testid="spark-readout"]`)),
		)
		browser.Screenshot(t, b, "history-overview-1440")
		// The readout rests on the moment; the pointer on the newest point
		// reads that one.
		box := browser.Get(t, b, chromedp.Evaluate[[]float64](`(() => {
			const r = [...document.querySelectorAll('[data-testid="tile-blocked"] rect.hit')].pop().getBoundingClientRect();
			return [r.left + r.width / 2, r.top + r.height / 2];
		})()`))
		resting := browser.Get(t, b, chromedp.Text(css(`[data-testid="tile-blocked"] [data-testid="spark-readout"]`)))
		require.Contains(t, resting, clock(moment)+" UTC · ", "at rest, the moment's value")
		browser.Do(t, b, chromedp.MouseEvent(chromedp.MouseMoved, box[0], box[1]))
		hovered := browser.Get(t, b, chromedp.Text(css(`[data-testid="tile-blocked"] [data-testid="spark-readout"]`)))
		newest := browser.Get(t, b, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid="tile-blocked"] rect.hit')].pop().dataset.value`))
		require.Equal(t, newest, hovered, "the readout shows the hovered point's value")
		require.NotEqual(t, resting, hovered, "not the moment's")
		require.Regexp(t, `^\d\d:\d\d:\d\d UTC · \d+ blocked backends$`, hovered)
		require.NotEmpty(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="tile-blocked"] [data-testid="spark-max"]`))))
		require.NotEmpty(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="tile-blocked"] [data-testid="spark-from"]`))))

		// On a phone: the picker wraps, the marker stays in sight, nothing
		// sticks out of the page.
		step := e.http.URL + "/runbook/blocking?" + at
		browser.Do(t, b,
			chromedp.EmulateViewport(390, 844),
			chromedp.Navigate(step),
			chromedp.WaitVisible(css(`#panel-blocking_tree [data-testid="history-mark"]`)),
		)
		require.Empty(t, browser.Get(t, b, chromedp.Evaluate[string](overflowJS)), "nothing wider than the phone")
		browser.Screenshot(t, b, "history-step-390")
		browser.Do(t, b,
			chromedp.Navigate(e.http.URL+"/?"+at),
			chromedp.WaitVisible(css(`[data-testid="timebar-marker"]`)),
		)
		require.Empty(t, browser.Get(t, b, chromedp.Evaluate[string](overflowJS)), "nothing wider than the phone")
		browser.Screenshot(t, b, "history-overview-390")

		// A time the picker cannot read: the page stays, live, with what was
		// typed and what to type instead.
		for _, width := range []int64{390, 1440} {
			browser.Do(t, b,
				chromedp.EmulateViewport(width, 900),
				chromedp.Navigate(e.http.URL+"/runbook/blocking"),
				chromedp.Click(css(`[data-testid="pick-custom"]`)),
				chromedp.SetValue(css(`[data-testid="timebar-at"]`), "half past nine"),
				chromedp.Click(css(`[data-testid="timebar-show"]`)),
				chromedp.WaitVisible(css(`[data-testid="timebar-problem"]`)),
			)
			require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="timebar-problem"]`))), `"half past nine" is not a time; type "5m ago"`)
			require.Equal(t, "half past nine", browser.Get(t, b, chromedp.Value(css(`[data-testid="timebar-at"]`))))
			browser.Screenshot(t, b, fmt.Sprintf("timebar-problem-%d", width))
		}
	})
}

// TestParseTravel: what the time picker's URLs mean, and the picker they
// draw.
func TestParseTravel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC)
	parse := func(query string) (travel, error) {
		req := httptest.NewRequest(http.MethodGet, "/runbook/blocking?"+query, nil)
		return parseTravel(echo.New().NewContext(req, httptest.NewRecorder()), now)
	}
	for _, live := range []string{"", "window=live", "q=1"} {
		tr, err := parse(live)
		require.NoError(t, err)
		require.False(t, tr.history, live)
		require.Empty(t, tr.query(), live)
	}

	tr, err := parse("at=2026-12-03+03:12:40")
	require.NoError(t, err, "a moment as people type it")
	require.True(t, tr.history)
	require.Equal(t, time.Date(2026, 12, 3, 3, 12, 40, 0, time.UTC), tr.q.at)
	require.Equal(t, tr.q.at.Add(-30*time.Minute), tr.q.from, "charts reach half an hour back")
	require.Equal(t, tr.q.at.Add(30*time.Minute), tr.q.to, "and half an hour on")
	require.Equal(t, "at=2026-12-03T03%3A12%3A40Z", tr.query().Encode())
	require.Equal(t, "/panels/activity?at=2026-12-03T03%3A12%3A40Z", tr.with("/panels/activity"))
	require.Equal(t, "History · at 03:12:40 UTC, 3 Dec", tr.marker())

	tr, err = parse("at=2026-12-03T03:50:00Z")
	require.NoError(t, err)
	require.Equal(t, now, tr.q.to, "never past now")

	tr, err = parse("window=1h")
	require.NoError(t, err)
	require.Equal(t, now.Add(-time.Hour), tr.q.from)
	require.Equal(t, now, tr.q.at, "the window's end")
	require.Equal(t, "window=1h", tr.query().Encode())
	require.Equal(t, "History · last 1 h (03:00:00 to 04:00:00 UTC), evidence as of 04:00:00", tr.marker())
	bar := timeBar("/runbook/blocking", tr)
	require.True(t, bar.History)
	var active []string
	for _, ch := range bar.Choices {
		if ch.Active {
			active = append(active, ch.Label+" "+ch.Href)
		}
	}
	require.Equal(t, []string{"1 h /runbook/blocking?window=1h"}, active)
	require.Equal(t, "/runbook/blocking", bar.LiveHref)
	require.False(t, bar.Custom)

	tr, err = parse("from=2026-12-03+02:00&to=2026-12-03+03:00&at=2026-12-03+02:30")
	require.NoError(t, err)
	require.Equal(t, "custom", tr.q.window)
	bar = timeBar("/", tr)
	require.True(t, bar.Custom, "a typed range keeps its form open")
	require.Equal(t, []string{"2026-12-03 02:00:00", "2026-12-03 03:00:00", "2026-12-03 02:30:00"}, []string{bar.From, bar.To, bar.At})

	live := timeBar("/", travel{})
	require.False(t, live.History)
	require.True(t, live.Choices[0].Active, "Live")
	require.Empty(t, live.Query)

	tr, err = parse("at=5m+ago")
	require.NoError(t, err, "a moment relative to now")
	require.Equal(t, now.Add(-5*time.Minute), tr.q.at)

	tr, err = parse("at=03:20&tz=Europe/Berlin")
	require.NoError(t, err, "a time of day in the person's zone")
	require.Equal(t, time.Date(2026, 12, 3, 2, 20, 0, 0, time.UTC), tr.q.at)
	require.Equal(t, "Europe/Berlin", tr.query().Get("tz"), "links carry the zone")
	bar = timeBar("/", tr)
	require.Equal(t, "2026-12-03 03:20:00", bar.At, "shown back in the zone it was typed in")
	require.Equal(t, "Europe/Berlin", bar.Zone)
	require.Equal(t, "UTC", timeBar("/", travel{}).Zone)

	// What cannot be read keeps the form, with what was typed and what to
	// type instead; the page is live meanwhile, never a 400 page.
	for query, msg := range map[string]string{
		"at=yesterday":                              `at: "yesterday" is not a time; type "5m ago"`,
		"at=5+fortnights+ago":                       `at: "5 fortnights ago" is not a time ago`,
		"window=2h":                                 `window="2h": use 15m, 1h, 24h, 7d or custom`,
		"from=2026-12-03&to=2026-12-02":             "must be before",
		"from=2026-12-03+05:00&to=2026-12-03+04:00": "must be before",
	} {
		tr, err := parse(query)
		require.NoError(t, err, query)
		require.False(t, tr.history, "%s: live meanwhile", query)
		bar := timeBar("/", tr)
		require.Contains(t, bar.Problem, msg, query)
		require.True(t, bar.Custom, "%s: the form stays open", query)
		v, _ := url.ParseQuery(query)
		require.Equal(t, []string{v.Get("from"), v.Get("to"), v.Get("at")}, []string{bar.From, bar.To, bar.At}, "%s: what was typed is kept", query)
	}
}
