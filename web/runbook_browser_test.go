package web

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/browser"
)

// TestBrowserRunbookStepFromEvidence opens the blocking step during a real
// lock chain, at 1440 and 390 pixels wide: the step and the index carry its
// title and a mark for the finding that points at it, the finding and the
// tree come before the actions, and the actions carry the root blocker's
// pid. Cancelling the root from the step's own action, through preview and
// execute, must cancel the root's statement and take it out of the tree. A
// targeted runbook the finding of a dead-letter spike links to shows that
// finding at the top, and its requeue carries the class.
func TestBrowserRunbookStepFromEvidence(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 200 * time.Millisecond
	th.DeadLetters = 3
	e := setupWith(t, setupOpts{thresholds: &th, private: true})
	ctx := context.Background()
	_, err := e.srv.cfg.Pool.Exec(ctx, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'emails', 'send', 'dead', 'smtp.timeout', 'timeout', now(), 3 FROM generate_series(1, 5)`)
	require.NoError(t, err)
	lc := newLockChain(t, e.url)
	root := strconv.Itoa(int(lc.rootPID))
	b := browser.New(t, 3*time.Minute)
	signIn(t, b, e.http.URL, "operator")
	browser.Do(t, b, chromedp.WaitVisible(css(`[data-testid="finding-lock.root_blocker"]`)))

	// The index marks the step a finding points at.
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/runbook"), chromedp.WaitVisible(css(`[data-testid="runbook-steps"]`)))
	require.Regexp(t, `^● \d+ findings?$`, browser.Get(t, b, chromedp.Text(css(`[data-testid="step-blocking"] + [data-testid="finding-mark"]`))))

	const stepActions = `[data-testid="step-actions"]`
	const stepCancel = stepActions + ` a[data-testid="action-backend.cancel"]`
	for _, width := range []int{1440, 390} {
		t.Run(fmt.Sprintf("Width%d", width), func(t *testing.T) {
			browser.Do(t, b, chromedp.EmulateViewport(int64(width), 900))
			browser.Do(t, b, chromedp.Navigate(e.http.URL+"/runbook/blocking"), chromedp.WaitVisible(css(`[data-testid="panel-blocking_tree"] table`)))
			require.Equal(t, "Step 4: Build the blocking chain and find the root blocker",
				browser.Get(t, b, chromedp.Text(css(`[data-testid="runbook-step-blocking"] h1`))))
			mark := `[data-testid="runbook-step-blocking"] [data-testid="finding-mark"]`
			require.Regexp(t, `^● \d+ findings?$`, browser.Get(t, b, chromedp.Text(css(mark))))
			require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`document.querySelector('`+mark+`').classList.contains('critical')`)),
				"the mark has the colour of the worst finding, the critical root blocker")
			nav := browser.Get(t, b, chromedp.Text(css(`[data-testid="stepnav-blocking"]`)))
			require.Contains(t, nav, "Blocking chain", "the step navigation names the step")
			require.Contains(t, nav, "finding", "and marks it")
			require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="step-findings"] [data-testid="finding-lock.root_blocker"]`))), root)
			require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`(() => {
				const f = document.querySelector('[data-testid="step-findings"]');
				const tree = document.querySelector('[data-testid="panel-blocking_tree"] table');
				const acts = document.querySelector('`+stepActions+`');
				const after = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
				return after(f, tree) && after(tree, acts);
			})()`)), "the findings, then the tree, then the actions")
			require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="actions-from"]`))), "pid "+root)
			if width == 390 {
				requireNoPageOverflow(t, b, "the blocking step")
				requireInView(t, b, stepCancel, "the step's cancel button")
				requireInView(t, b, `[data-testid="stepnav-blocking"]`, "the current step in the step navigation")
			}
			browser.Screenshot(t, b, fmt.Sprintf("runbook-blocking-%d", width))
		})
	}

	// Cancel the root from the step's action: its form carries the pid.
	browser.Do(t, b, chromedp.Click(css(stepCancel)), chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)))
	require.Equal(t, root, browser.Get(t, b, chromedp.Evaluate[string](`document.querySelector("#p-pid").value`)), "the form is filled in with the root's pid")
	require.NotContains(t, browser.Get(t, b, chromedp.Location()), "queue=", "the address carries only what the action takes")
	browser.Do(t, b,
		chromedp.Click(css(`[data-testid="action-preview-button"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-preview"]`)),
	)
	browser.Do(t, b, executeWith("root blocker of the accounts chain", "action-done")...)
	select {
	case err := <-lc.rootDone:
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr) && pgErr.Code == "57014", "the root's statement ended with %v, not cancelled", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the root's statement still runs 20s after the cancel")
	}
	tree, err := diagnostics.BlockingTree(ctx, e.srv.cfg.Pool)
	require.NoError(t, err)
	for _, n := range tree {
		require.NotEqual(t, lc.rootPID, n.PID, "the cancelled root is still in the tree: %+v", n)
	}

	// The dead-letter spike's finding links to its targeted runbook, which
	// shows that finding first and fills the requeue in with its class.
	browser.Do(t, b, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(e.http.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="finding-queue.dead_letters"]`)),
		chromedp.Click(css(`[data-testid="finding-queue.dead_letters"] [data-testid="finding-runbook"]`)),
		chromedp.WaitVisible(css(`[data-testid="target-findings"]`)),
	)
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="target-findings"]`))), "smtp.timeout")
	require.True(t, browser.Get(t, b, chromedp.Evaluate[bool](`(() => {
		const f = document.querySelector('[data-testid="target-findings"]');
		const sym = [...document.querySelectorAll('main p')].find(p => p.textContent.startsWith('Symptoms.'));
		return !!(f.compareDocumentPosition(sym) & Node.DOCUMENT_POSITION_FOLLOWING);
	})()`)), "the finding comes before the runbook's text")
	href := browser.Get(t, b, chromedp.AttributeValue(css(`main > section:last-of-type a[data-testid="action-deadletters.requeue"]`), "href"))
	require.Contains(t, href.Value, "error_class=smtp.timeout")
	require.Contains(t, href.Value, "queue=emails")
	browser.Screenshot(t, b, "runbook-target-dead-letters")
}

// TestBrowserRefusalLeavesTheFindingReadable: a finding whose button is
// refused (the root of another database) shows the refusal, a sentence, in
// the button's place; the finding keeps most of the row to be read in,
// instead of being squeezed to a word per line beside it.
func TestBrowserRefusalLeavesTheFindingReadable(t *testing.T) {
	e, _, otherHolder, _ := twoDatabaseChains(t)
	b := browser.New(t, 2*time.Minute)
	signIn(t, b, e.http.URL, "operator")
	refused := `ul.findings [data-testid="refused-backend.cancel"]`
	browser.Do(t, b, chromedp.Navigate(e.http.URL+"/runbook/blocking"), chromedp.WaitVisible(css(refused)))
	require.Contains(t, browser.Get(t, b, chromedp.Text(css(`[data-testid="step-findings"]`))),
		fmt.Sprintf("Not offered: backend %d is connected to database", otherHolder))
	share := browser.Get(t, b, chromedp.Evaluate[float64](`(() => {
		const li = document.querySelector('ul.findings [data-testid="refused-backend.cancel"]').closest("li");
		return li.querySelector(".evidence").getBoundingClientRect().width / li.getBoundingClientRect().width;
	})()`))
	require.Greater(t, share, 0.5, "the finding's evidence is squeezed beside its refusal")
	browser.Screenshot(t, b, "runbook-step-refused")
}
