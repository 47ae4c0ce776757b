package web

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// TestWideTablesAreCardsOnAPhone: the workers and the top statements are
// drawn as labelled cards on a phone (the class the phone's stylesheet
// turns into cards, a label on every cell); other panels without actions
// still scroll.
func TestWideTablesAreCardsOnAPhone(t *testing.T) {
	now := time.Now()
	row := [][]views.Cell{{{Text: "a"}, {Text: "b"}}}
	cols := []views.Column{{Label: "First"}, {Label: "Second"}}
	render := func(p views.Panel) string {
		p.Columns, p.Rows, p.Status = cols, row, "ok"
		var b bytes.Buffer
		require.NoError(t, views.PanelView(p).Render(context.Background(), &b))
		return b.String()
	}
	statements := panelView(diagnostics.Check{Name: diagnostics.CheckStatementsTop}, diagnostics.PanelResult{Name: diagnostics.CheckStatementsTop}, "viewer", now)
	require.True(t, statements.Cards, "the top statements are cards")
	require.Contains(t, render(statements), `class="table-wrap cards"`)
	require.Contains(t, render(statements), `data-label="Second"`)

	workers := workerPanel([]queues.Worker{}, "", now)
	require.True(t, workers.Cards, "the workers are cards")

	other := panelView(diagnostics.Check{Name: diagnostics.CheckBlockingTree}, diagnostics.PanelResult{Name: diagnostics.CheckBlockingTree}, "viewer", now)
	require.False(t, other.Cards)
	require.NotContains(t, render(other), "cards", "a panel without actions scrolls")
}
