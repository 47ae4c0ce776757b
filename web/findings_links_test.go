package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/views"
)

// TestFindingLinksResolve: the runbook page of every finding rule is a page
// of the runbook content, and every action a rule may suggest is registered
// in actions. diagnostics names both by constants it cannot check itself:
// it may not import actions. A failed check links to its own step instead
// (TestRunbookContentIsWired checks every check's step), or to the activity
// step when no check of the catalog failed.
func TestFindingLinksResolve(t *testing.T) {
	for _, r := range findings.Rules() {
		page := r.Runbook
		if r.Code == findings.CodeUnavailable {
			require.Empty(t, page, "a failed check links to its own step")
			page = diagnostics.StepActivity
		}
		for _, page := range append([]string{page}, r.AlsoRunbooks...) {
			_, isStep := runbookStepBySlug(page)
			_, isTarget := runbookTargetBySlug(page)
			require.True(t, isStep || isTarget, "%s links to %q, which is no runbook page", r.Code, page)
		}
		for _, a := range r.Actions {
			_, ok := actions.Lookup(a)
			require.True(t, ok, "%s may suggest %q, which is no registered action", r.Code, a)
		}
	}
}

// A repeat blocker's finding links the lock episodes of its application,
// on the overview and the runbook pages that list it; other findings link
// none.
func TestRepeatBlockerLinksItsEpisodes(t *testing.T) {
	r := diagnostics.Round{At: time.Now(), RepeatBlockers: []diagnostics.RepeatBlocker{{RootApplication: "nightly report", Episodes: 4, ClaimsDelayed: 4}},
		Blocking: []diagnostics.BlockingNode{{PID: 7, IsRoot: true, BlockedCount: 1}}}
	rows := findingRows(findings.Evaluate(r, diagnostics.DefaultThresholds()), "operator")
	var got *views.FindingJob
	for _, row := range rows {
		if row.Code == findings.CodeRepeatBlocker {
			got = row.EvidenceLink
		} else {
			require.Nil(t, row.EvidenceLink, "%s links no episodes", row.Code)
		}
	}
	require.NotNil(t, got, "the repeat blocker's row: %+v", rows)
	require.Equal(t, "/lock-episodes?application=nightly+report&since=1h", got.Href)
	require.Contains(t, got.Label, `"nightly report"`)
}
