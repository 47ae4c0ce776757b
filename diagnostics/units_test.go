package diagnostics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/humanize"
)

// A finding writes sizes as the tiles and panels beside it do: one unit
// system (binary, "1.5 GiB"), from internal/humanize.
func TestFindingsWriteSizesAsThePagesDo(t *testing.T) {
	const retained = 3 << 29 // 1.5 GiB
	th := diagnostics.DefaultThresholds()
	th.SlotRetentionBytes = 1 << 30
	r := diagnostics.Round{Slots: []diagnostics.Slot{{SlotName: "cdc", Active: true, RetainedBytes: retained}}}
	var title string
	for _, f := range findings.Evaluate(r, th) {
		if f.Code == findings.CodeSlotRetention {
			title = f.Title
		}
	}
	require.NotEmpty(t, title, "a slot over its threshold is a finding")
	require.Equal(t, "1.5 GiB", humanize.Bytes(retained), "what the tile shows")
	require.True(t, strings.Contains(title, humanize.Bytes(retained)), "the finding says %q", title)
}

// A finding writes durations as the tiles and panels beside it do
// ("2m05s"), from internal/humanize, never Go's "2m5.4s".
func TestFindingsWriteDurationsAsThePagesDo(t *testing.T) {
	const wait = 125.4
	r := diagnostics.Round{Blocking: []diagnostics.BlockingNode{
		{Kind: diagnostics.NodeBackend, PID: 10, IsRoot: true, BlockedCount: 1, MaxWaitSeconds: wait, XactAgeSeconds: wait, State: "active"},
		{Kind: diagnostics.NodeBackend, PID: 11, Depth: 1, RootPID: 10, WaitSeconds: wait, State: "active"},
	}}
	var evidence string
	for _, f := range findings.Evaluate(r, diagnostics.DefaultThresholds()) {
		if f.Code == findings.CodeRootBlocker {
			evidence = f.Evidence
		}
	}
	require.NotEmpty(t, evidence, "a root blocking for two minutes is a finding")
	require.Equal(t, "2m05s", humanize.Seconds(wait), "what the tile shows")
	require.Contains(t, evidence, "the longest has waited "+humanize.Seconds(wait), "the finding says %q", evidence)
	require.NotContains(t, evidence, "2m5.4s")
}

// The dead-letters finding never says `top error class "" with 0`: it names
// the class most dead jobs share, says they have none, or that the groups
// have not counted them yet.
func TestDeadLettersFindingNamesItsTopClassHonestly(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.DeadLetters = 5
	q := diagnostics.QueueStat{Queue: "emails", DeadRecent: 20, Dead: 40}
	evidence := func(groups []diagnostics.DeadLetterGroup) string {
		for _, f := range findings.Evaluate(diagnostics.Round{Queues: []diagnostics.QueueStat{q}, DeadLetters: groups}, th) {
			if f.Code == findings.CodeDeadLetters {
				return f.Evidence
			}
		}
		t.Fatal("no dead-letters finding")
		return ""
	}
	for name, tc := range map[string]struct {
		groups []diagnostics.DeadLetterGroup
		says   string
	}{
		"NoGroups":   {nil, "not known yet"},
		"NoClass":    {[]diagnostics.DeadLetterGroup{{Queue: "emails", DeadRecent: 18}}, "most (18) died without an error class"},
		"TopClass":   {[]diagnostics.DeadLetterGroup{{Queue: "emails", ErrorClass: "smtp", DeadRecent: 3}, {Queue: "emails", ErrorClass: "dns", DeadRecent: 17}}, `top error class "dns" with 17`},
		"OtherQueue": {[]diagnostics.DeadLetterGroup{{Queue: "sms", ErrorClass: "x", DeadRecent: 9}}, "not known yet"},
	} {
		t.Run(name, func(t *testing.T) {
			e := evidence(tc.groups)
			require.Contains(t, e, tc.says)
			require.NotContains(t, e, `""`)
			require.NotContains(t, e, "with 0")
		})
	}
}
