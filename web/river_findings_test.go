package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues/river"
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
