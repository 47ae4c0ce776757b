package web

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
)

// TestPanelsAreSharedAmongViewers: twenty people watching a panel cost the
// database what one does. Each panel's query runs at most once per
// PanelMaxAge whoever asks (the blocking tree is the shared findings
// round's), and each answer says how old its rows are.
func TestPanelsAreSharedAmongViewers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	d := e.srv.cfg.Diagnostics
	const viewers = 20
	clients := make([]*client, viewers)
	for i := range clients {
		clients[i] = e.signedIn(t, "viewer")
	}
	for _, tc := range []struct{ panel, costOf string }{
		{diagnostics.CheckActivity, diagnostics.CheckActivity},
		{diagnostics.CheckReplicationSlots, diagnostics.CheckReplicationSlots},
		{diagnostics.CheckBlockingTree, diagnostics.CheckBlockingTree},
	} {
		t.Run(tc.panel, func(t *testing.T) {
			before := d.Cost()[tc.costOf].Statements
			start := time.Now()
			var wg sync.WaitGroup
			ages := make([]string, viewers)
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var body struct {
						At    time.Time `json:"at"`
						AgeMS *int64    `json:"age_ms"`
					}
					require.Equal(t, http.StatusOK, c.getJSON("/panels/"+tc.panel, &body))
					require.False(t, body.At.IsZero(), "the answer says when its rows were read")
					require.NotNil(t, body.AgeMS, "and how old they are")
					ages[i] = body.At.String()
				}()
			}
			wg.Wait()
			// One statement per PanelMaxAge that the burst spanned (one,
			// unless the machine stalled for seconds), whatever the number
			// of viewers.
			windows := 1 + int64(time.Since(start)/(5*time.Second))
			ran := d.Cost()[tc.costOf].Statements - before
			require.LessOrEqual(t, ran, windows, "%d viewers of %s ran its query %d times", viewers, tc.panel, ran)

			_, page := clients[0].get("/panels/" + tc.panel)
			require.Contains(t, page, `data-testid="panel-age"`)
			require.Regexp(t, `as of \d\d:\d\d:\d\d UTC, [0-9.]+m?s old`, page)
		})
	}
}
