package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBrowserTenantThrottle: on a queue page the tenants table shows the
// starved tenant first; its tenant.throttle button opens the action with
// queue and tenant filled in, and the limit lands in tenant_limits.
func TestBrowserTenantThrottle(t *testing.T) {
	testdb.SkipShort(t, "a browser test")
	e := setup(t)
	e.exec(t, `
		INSERT INTO jobs (queue, kind, tenant_id, available_at)
		SELECT 'shared', 'k', 'big', clock_timestamp() - interval '2 minutes' FROM generate_series(1, 500);
		INSERT INTO jobs (queue, kind, tenant_id, available_at)
		SELECT 'shared', 'k', 'small-' || g, clock_timestamp() - g * interval '1 minute' FROM generate_series(1, 4) g;
		INSERT INTO tenant_limits (queue, tenant_id, max_in_flight) VALUES ('shared', '', 20)`)

	b := browser.New(t, 120*time.Second)
	signIn(t, b, e.http.URL, "operator")
	browser.Do(t, b,
		chromedp.Navigate(e.http.URL+"/queues/shared"),
		chromedp.WaitVisible(css(`[data-testid="panel-tenants"]`)),
	)
	browser.Screenshot(t, b, "queue-tenants")
	browser.Do(t, b,
		chromedp.Click(css(`[data-testid="panel-tenants"] a[data-testid="action-tenant.throttle"][href*="tenant=small-4"]`)),
		chromedp.WaitVisible(css(`#p-max_in_flight`)),
		chromedp.SendKeys(css(`#p-max_in_flight`), "5"),
		chromedp.Click(css(`[data-testid="action-preview-button"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-preview"]`)),
	)
	browser.Screenshot(t, b, "tenant-throttle-preview")
	browser.Do(t, b, executeWith("small-4 starved behind big", "action-done")...)
	require.Equal(t, 5, e.queryInt(t, "SELECT max_in_flight FROM tenant_limits WHERE queue = 'shared' AND tenant_id = 'small-4'"))
}
