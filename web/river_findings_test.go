package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// A River discard burst links its queue's dead letters, where the class
// is looked at and retried.
func TestRiverDiscardBurstLinksItsDeadLetters(t *testing.T) {
	now := time.Now()
	r := diagnostics.Round{At: now, River: &diagnostics.RiverEvidence{Discards: []river.DiscardGroup{
		{Queue: "mail", Kind: "send", ErrorClass: "smtp ?", Count: 50, FirstSeen: now, LastSeen: now}}}}
	rows := findingRows(findings.Evaluate(r, diagnostics.DefaultThresholds()), "operator")
	require.Len(t, rows, 1)
	require.Equal(t, findings.CodeRiverDiscardBurst, rows[0].Code)
	require.NotNil(t, rows[0].EvidenceLink)
	require.Equal(t, "/deadletters?queue=mail", rows[0].EvidenceLink.Href)
	require.Contains(t, rows[0].EvidenceLink.Label, "queue mail")
}

// On a River database the overview's queue tiles count River's jobs, in
// the state of River's findings: a discard burst warns on the discarded
// tile; the console's engine's (empty) counts are not shown beside it.
func TestOverviewTilesCountRiversJobs(t *testing.T) {
	now := time.Now()
	r := diagnostics.Round{At: now, River: &diagnostics.RiverEvidence{
		Queues: []river.QueueStat{{Queue: "mail", Available: 3, Running: 2, Discarded: 7, OldestAvailableSeconds: 12},
			{Queue: "billing", Available: 1, Discarded: 1}},
		Discards: []river.DiscardGroup{{Queue: "mail", Kind: "send", ErrorClass: "smtp ?", Count: 7, FirstSeen: now, LastSeen: now}}}}
	th := diagnostics.DefaultThresholds()
	th.DeadLetters = 5
	tiles := overviewTiles(r, findings.Evaluate(r, th), th)
	byID := map[string]views.Tile{}
	for _, tl := range tiles {
		byID[tl.ID] = tl
	}
	require.NotContains(t, byID, "queue-dead", "the console's engine holds no job here")
	require.Equal(t, "4", byID["river-available"].Value)
	require.Contains(t, byID["river-available"].Meta, "12")
	require.Equal(t, "2", byID["river-running"].Value)
	require.Equal(t, "8", byID["river-discarded"].Value)
	require.Equal(t, "warning", byID["river-discarded"].State, "the discard burst is the tile's state")
	require.Equal(t, "ok", byID["river-running"].State)
}
