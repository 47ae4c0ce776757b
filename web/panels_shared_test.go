package web

import (
	"net/http"
	"slices"
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

// TestBlockingStepCostsOneReadPerWindow: viewers of the runbook's blocking
// step poll each of its panels; the panels the shared round reads (the
// blocking tree, the blocked jobs, the deadlock counters) come from that
// round, so the tree and each of those queries run once per PanelMaxAge
// window however many viewers, and no panel of the step reads them again.
func TestBlockingStepCostsOneReadPerWindow(t *testing.T) {
	t.Parallel()
	e := setup(t)
	d := e.srv.cfg.Diagnostics
	const viewers = 20
	var panels []string
	for _, c := range diagnostics.Catalog() {
		if c.Step == diagnostics.StepBlocking || slices.Contains(c.AlsoSteps, diagnostics.StepBlocking) {
			panels = append(panels, c.Name)
		}
	}
	fromRound := []string{diagnostics.CheckBlockingTree, diagnostics.CheckBlockedJobs, diagnostics.CheckDeadlocks}
	for _, name := range fromRound {
		require.Contains(t, panels, name)
	}
	clients := make([]*client, viewers)
	for i := range clients {
		clients[i] = e.signedIn(t, "viewer")
	}
	before := map[string]int64{}
	for _, name := range fromRound {
		before[name] = d.Cost()[name].Statements
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		for _, p := range panels {
			wg.Go(func() {
				var body struct {
					Status string `json:"status"`
				}
				require.Equal(t, http.StatusOK, c.getJSON("/panels/"+p, &body))
				require.Equal(t, "ok", body.Status, p)
			})
		}
	}
	wg.Wait()
	windows := 1 + int64(time.Since(start)/(5*time.Second))
	for _, name := range fromRound {
		n := d.Cost()[name].Statements - before[name]
		require.LessOrEqual(t, n, windows, "%d viewers of the blocking step ran %s %d times", viewers, name, n)
	}
}
