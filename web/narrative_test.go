package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/testdb"
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
	require.Contains(t, body, `<section class="alert warning story" data-testid="narrative">`)
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

// TestClosedIncidentKeepsTheNarrativeItOpenedWith: once an incident is
// closed, its page and its export open with the paragraph the flight
// recorder's findings told when it opened, said to be recorded and with no
// action, instead of losing it (what the console sees now is another
// story).
func TestClosedIncidentKeepsTheNarrativeItOpenedWith(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th})
	withRecorder(t, e, 500*time.Millisecond)
	newLockChain(t, e.url)

	// Open the incident once a recorded sample tells the chain.
	recorded := func(at time.Time) (string, time.Time) {
		doc, entry, err := recorder.HistoryDocAt(ctx, e.srv.cfg.Pool, at)
		if err != nil {
			return "", time.Time{}
		}
		return findings.NewNarrative(doc.Findings, entry.At, recordedNarrativeOpts).Text, entry.At
	}
	testdb.Eventually(t, 20*time.Second, "a recorded sample whose narrative tells a lock chain", func() bool {
		text, _ := recorded(time.Now())
		return strings.Contains(text, "holds the locks")
	})
	op := e.signedIn(t, "operator")
	op.get("/incidents")
	resp, body := op.post("/incidents", url.Values{"_csrf": {op.csrf}, "title": {"orders stuck"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	incident := resp.Header.Get("Location")
	var open views.IncidentPage
	require.NoError(t, json.Unmarshal([]byte(op.page(incident, "Accept", "application/json")), &open))
	require.NotContains(t, open.Story.Text, "When it opened", "an open incident's paragraph is the live one")

	resp, body = op.post(incident+"/close", url.Values{"_csrf": {op.csrf}, "summary": {"root cancelled"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
	id, err := strconv.ParseInt(strings.TrimPrefix(incident, "/incidents/"), 10, 64)
	require.NoError(t, err)
	inc, err := audit.IncidentGet(ctx, e.srv.cfg.Pool, id)
	require.NoError(t, err)
	text, at := recorded(inc.OpenedAt)
	require.Contains(t, text, "holds the locks", "the sample before the opening told the chain")
	// The root the paragraph names may be another test's on the shared
	// server, so its action may be a cancel or a terminate.
	require.Contains(t, text, "The action that fitted then: ", "the recorded action is told as the one of that moment")
	require.False(t, at.After(inc.OpenedAt), "the sample is the opening's, not a later one")
	// A later sample exists before the page is read: the page must still
	// tell the opening's.
	testdb.Eventually(t, 20*time.Second, "a sample recorded after the incident opened", func() bool {
		_, newest := recorded(time.Now())
		return newest.After(inc.OpenedAt)
	})

	var closed views.IncidentPage
	require.NoError(t, json.Unmarshal([]byte(op.page(incident, "Accept", "application/json")), &closed))
	require.Equal(t, "When it opened (recorded "+clock(at)+" UTC): "+text, closed.Story.Text)
	require.Nil(t, closed.Story.Action, "no action on the past")
	require.Contains(t, op.page(incident), `<section class="alert info story" data-testid="narrative">`, "drawn as information, not as a warning")

	resp, md := op.get(incident + "/export.md")
	require.Equal(t, http.StatusOK, resp.StatusCode, md)
	paragraphs := strings.SplitN(md, "\n\n", 3)
	require.Len(t, paragraphs, 3)
	require.Equal(t, "As the console recorded it when the incident opened, at "+at.UTC().Format(time.RFC3339)+": "+text, paragraphs[1])
}
