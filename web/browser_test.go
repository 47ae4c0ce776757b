package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// css is shorthand for a CSS selector.
type css = chromedp.CSS

// executeWith gives reason to the previewed action form, executes it and
// waits for the element the outcome shows (outcome is a data-testid:
// action-done, result-summary).
func executeWith(reason, outcome string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.SendKeys(css(`[data-testid="reason"]`), reason),
		chromedp.Click(css(`[data-testid="action-execute"]`)),
		chromedp.WaitVisible(css(`[data-testid="` + outcome + `"]`)),
	}
}

// followTo clicks sel, a link or a form's button that loads a page, and
// waits for then on the page it loads. The page the click leaves is marked
// first and only a page without the mark counts, so then may be on both
// (main, or the incident page a capture posts back to): the steps after it
// read and type into the new page, not the old one on its way out.
func followTo(t testing.TB, b context.Context, sel, then string) {
	t.Helper()
	browser.Get(t, b, chromedp.Evaluate[bool](`(document.documentElement.dataset.left = "1", true)`))
	browser.Do(t, b, chromedp.Click(css(sel)), chromedp.WaitVisible(css(`html:not([data-left]) `+then)))
}

// TestBrowserSignIn signs in through the real form in headless Chromium,
// checks the page's frame and that htmx loaded under the CSP, and writes
// screenshots of the sign-in page and the overview.
func TestBrowserSignIn(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	ctx := browser.New(t, 60*time.Second)

	browser.Do(t, ctx, chromedp.Navigate(e.http.URL+"/"), chromedp.WaitVisible(css(`[data-testid="login"]`)))
	require.Contains(t, browser.Get(t, ctx, chromedp.Title()), "Sign in")
	browser.Screenshot(t, ctx, "login")

	browser.Do(t, ctx,
		chromedp.SendKeys(css(`#name`), "operator"),
		chromedp.SendKeys(css(`#password`), testPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="findings"]`)),
	)
	require.Contains(t, browser.Get(t, ctx, chromedp.Text(css(`[data-testid="topbar"]`))), "operator (operator)")
	require.True(t, browser.Get(t, ctx, chromedp.Evaluate[bool](`typeof htmx !== "undefined"`)), "htmx must load under the CSP")
	browser.Screenshot(t, ctx, "overview")

	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
	require.True(t, strings.Contains(browser.Get(t, ctx, chromedp.Location()), "/login"))
}
