package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
)

// A recorded document that does not decode is named on the page; it never
// reads as an empty table, as if nothing had been recorded. A check the
// sample did not keep is no error.
func TestHistoryModelSaysWhatCouldNotBeRead(t *testing.T) {
	at := time.Date(2026, 12, 3, 3, 12, 40, 0, time.UTC)
	q := historyQuery{window: "1h", from: at.Add(-time.Hour), to: at, at: at}
	tree, err := json.Marshal([]diagnostics.BlockingNode{{PID: 4242, IsRoot: true, BlockedCount: 2}})
	require.NoError(t, err)
	ev := historyEvidence{
		Tree:     recorder.HistoryEntry{At: at, Data: tree},
		Activity: recorder.HistoryEntry{At: at, Data: json.RawMessage(`{"not":"a list"}`)},
		Findings: recorder.HistoryEntry{At: at, Data: json.RawMessage(`[{"code":"lock.root_blocker","severity":"critical","title":"t"}]`)},
	}
	m := historyModel(q, ev)
	require.Len(t, m.Tree, 1)
	require.Len(t, m.Findings, 1)
	require.Contains(t, m.Error, "the activity")
	require.NotContains(t, m.Error, "wait events", "a check the sample did not keep is no error")

	ev.Activity.Data = json.RawMessage(`[]`)
	require.Empty(t, historyModel(q, ev).Error)
}
