package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// A real lock chain: the overview opens with the narrative, naming the
// root and offering its action to an operator (not to a viewer); an open
// incident's page and its Markdown export open with the same paragraph.
func TestOverviewAndIncidentLeadWithTheNarrative(t *testing.T) {
	t.Parallel()
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th})
	lc := newLockChain(t, e.url)

	op := e.signedIn(t, "operator")
	var m views.Overview
	// The narrative names the server's worst root: until it is this
	// test's, it may be a chain of a test beside it, in a database whose
	// backends the console is refused.
	root := fmt.Sprintf("pid %d ", lc.rootPID)
	require.Eventually(t, func() bool {
		body := op.page("/", "Accept", "application/json")
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return strings.Contains(m.Story.Text, "holds the locks") && strings.Contains(m.Story.Text, root)
	}, 20*time.Second, 200*time.Millisecond, "no narrative naming the chain's root (%s): %q", root, m.Story.Text)
	require.Contains(t, m.Story.Text, "Why: pid ")
	require.Contains(t, m.Story.Text, "The action that fits: ")
	require.NotNil(t, m.Story.Action, "an operator gets the action's button")
	require.Contains(t, m.Story.Action.Href, "pid=")
	body := op.page("/")
	require.Contains(t, body, `data-testid="narrative"`)
	require.Less(t, strings.Index(body, `data-testid="narrative"`), strings.Index(body, `data-testid="findings"`), "the paragraph comes first")

	viewer := e.signedIn(t, "viewer")
	_, vbody := viewer.get("/", "Accept", "application/json")
	var vm views.Overview
	require.NoError(t, json.Unmarshal([]byte(vbody), &vm))
	require.Nil(t, vm.Story.Action, "a viewer gets no action button")

	op.get("/incidents")
	resp, body := op.post("/incidents", url.Values{"_csrf": {op.csrf}, "title": {"orders stuck"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	incident := resp.Header.Get("Location")
	body = op.page(incident)
	require.Contains(t, body, `data-testid="narrative"`)
	resp, md := op.get(incident + "/export.md")
	require.Equal(t, http.StatusOK, resp.StatusCode, md)
	paragraphs := strings.SplitN(md, "\n\n", 3)
	require.Len(t, paragraphs, 3)
	require.True(t, strings.HasPrefix(paragraphs[0], "# Incident "), md)
	require.True(t, strings.HasPrefix(paragraphs[1], "As the console saw it at "), "the narrative is the export's first paragraph:\n%s", md)
	require.Contains(t, paragraphs[1], `holds the locks`)
	require.True(t, strings.HasPrefix(paragraphs[2], "## Summary"), md)
}
