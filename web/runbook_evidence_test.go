package web

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
)

// A runbook step fills its buttons in from a round that can be seconds
// old: a root blocker that has finished since is left out of the buttons
// (their form asks for a pid) and the page says so, instead of the step
// offering to signal a session that is gone or offering nothing.
func TestStepLeavesOutARootThatFinished(t *testing.T) {
	i, ok := runbookStepBySlug("blocking")
	require.True(t, ok)
	r := diagnostics.Round{At: time.Now(), Blocking: []diagnostics.BlockingNode{
		{PID: 7028, IsRoot: true, BlockedCount: 2}, {PID: 7030, BlockedBy: []int32{7028}}}}
	cancelHref := func(ev runbookEvidence) (string, string) {
		m := runbookStepModel(i, "operator", ev, travel{})
		for _, a := range m.Actions {
			if a.Name == "backend.cancel" {
				return a.Href, m.ActionsFrom
			}
		}
		t.Fatalf("the blocking step offers no backend.cancel: %+v", m.Actions)
		return "", ""
	}

	href, from := cancelHref(runbookEvidence{round: r, finished: func(int32) bool { return false }})
	require.Contains(t, href, "pid=7028", "a live root fills the button in")
	require.Equal(t, "filled in from the evidence: pid 7028", from)

	href, from = cancelHref(runbookEvidence{round: r, finished: func(pid int32) bool { return pid == 7028 }})
	require.False(t, strings.Contains(href, "pid="), "a finished root is left out: %s", href)
	require.Equal(t, "/actions/backend.cancel", href)
	require.Equal(t, "pid 7028, named by the evidence, has finished since: pick one from the live blocking tree", from)
}
