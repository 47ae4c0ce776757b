package diagnostics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
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
	for _, f := range diagnostics.Evaluate(r, th) {
		if f.Code == diagnostics.CodeSlotRetention {
			title = f.Title
		}
	}
	require.NotEmpty(t, title, "a slot over its threshold is a finding")
	require.Equal(t, "1.5 GiB", humanize.Bytes(retained), "what the tile shows")
	require.True(t, strings.Contains(title, humanize.Bytes(retained)), "the finding says %q", title)
}
