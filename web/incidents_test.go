package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
)

// withOpenIncidentMaxAge serves e's configuration from a second server
// whose open-incident lookup is cached for maxAge, set before it serves.
func withOpenIncidentMaxAge(t *testing.T, e *env, maxAge time.Duration) *env {
	t.Helper()
	cfg := e.srv.cfg
	cfg.Registerer, cfg.Gatherer = nil, nil
	s, err := New(cfg)
	require.NoError(t, err)
	s.openIncidents = s.newOpenIncidentCache(maxAge)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &env{srv: s, http: hs, url: e.url, superURL: e.superURL, owner: e.owner}
}

var captureFormRE = regexp.MustCompile(`action="/incidents/(\d+)/capture"`)

// TestOpenIncidentLookupIsCachedAndInvalidated: panel refreshes share the
// open-incident lookup (an incident opened behind the console's back shows
// only when the cache expires), but an operator who opens or closes an
// incident in the console sees it on the next page.
func TestOpenIncidentLookupIsCachedAndInvalidated(t *testing.T) {
	t.Parallel()
	e := withOpenIncidentMaxAge(t, setup(t), time.Hour)
	c := e.signedIn(t, "operator")
	captureInto := func() string {
		t.Helper()
		body := c.page("/panels/queue_health")
		if m := captureFormRE.FindStringSubmatch(body); m != nil {
			return m[1]
		}
		return ""
	}
	require.Empty(t, captureInto(), "no incident is open")

	_, err := audit.IncidentOpen(t.Context(), e.srv.cfg.Pool, audit.IncidentOpenParams{Title: "opened by the CLI", OpenedBy: "cli"})
	require.NoError(t, err)
	require.Empty(t, captureInto(), "the lookup is served from the cache")

	resp, _ := c.post("/incidents", url.Values{"_csrf": {c.csrf}, "title": {"queue backlog"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/incidents/2", resp.Header.Get("Location"))
	require.Equal(t, "2", captureInto(), "opening an incident drops the cached lookup")

	resp, _ = c.post("/incidents/2/close", url.Values{"_csrf": {c.csrf}, "summary": {"drained"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "1", captureInto(), "closing one drops it too: the CLI's incident is the open one")
}
