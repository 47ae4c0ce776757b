package web

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/views"
)

// Jargon explains itself where it renders: a lock mode or target in a
// table cell, "xmin age" in running text and a runbook step's "safe" come
// out as terms carrying their sentence (on hover and on focus); a word
// that only contains one stays text. A finding leads with its words: the
// check's name and the code come after, small.
func TestJargonIsExplainedWhereItRenders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	html := func(parts ...string) string { return strings.Join(parts, "") }
	var b bytes.Buffer
	require.NoError(t, views.CellView(views.Cell{Text: "ShareLock on transactionid"}, views.Column{Label: "waits"}).Render(ctx, &b))
	cell := b.String()
	require.Equal(t, 2, strings.Count(cell, `data-testid="term"`), cell)
	require.Contains(t, cell, html(`title="`, views.Explain("ShareLock")))
	require.Contains(t, cell, `tabindex="0"`, "keyboard and touch reach the explanation")
	require.Contains(t, cell, html(`data-explain="`, strings.ReplaceAll(views.Explain("transactionid"), `"`, "&#34;")))

	for s, terms := range map[string][]string{
		"xmin age is 3h":                 {"xmin age"},
		"relations and tuples":           nil,
		"RowExclusiveLock, then tuple":   {"RowExclusiveLock", "tuple"},
		"AccessExclusiveLock":            {"AccessExclusiveLock"},
		"not a ShareLockish word":        nil,
		"lease generation 4 on relation": {"lease generation", "relation"},
	} {
		var got []string
		for _, p := range views.Terms(s) {
			if p.Explain != "" {
				got = append(got, p.Text)
			}
		}
		require.Equal(t, terms, got, s)
		var whole strings.Builder
		for _, p := range views.Terms(s) {
			whole.WriteString(p.Text)
		}
		require.Equal(t, s, whole.String(), "the parts make up the text")
	}

	b.Reset()
	row := views.FindingRow{Code: "queue.dead_letters", Severity: "warning", Title: "Queue emails: 20 jobs died",
		Evidence: "dead_letters: 20 dead in emails within 15m; top error class \"dns\" with 17"}
	require.NoError(t, views.FindingList([]views.FindingRow{row}).Render(ctx, &b))
	page := b.String()
	title, evidence, code := strings.Index(page, row.Title), strings.Index(page, "20 dead in emails"), strings.Index(page, `data-testid="finding-code"`)
	require.True(t, title >= 0 && evidence > title && code > evidence, "title, then the evidence in words, then the code:\n%s", page)
	require.NotContains(t, page, `data-testid="finding-evidence">dead_letters:`, "the check's name does not lead the evidence")
	require.Contains(t, page, `measured by <span class="mono">dead_letters</span>`)
}
