package web

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/static"
)

// TestPagesAndAssetsAreCompressed: a client that accepts gzip gets pages,
// and the minified assets, gzipped; one that does not gets them as they are.
func TestPagesAndAssetsAreCompressed(t *testing.T) {
	e := setup(t)
	viewer := e.signedIn(t, auth.RoleViewer)
	plain := viewer.page("/")
	for _, path := range []string{"/", static.Path("app.css"), static.Path("app.js")} {
		req, err := http.NewRequest(http.MethodGet, viewer.base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "gzip") // set by hand, so the transport leaves the body compressed
		resp, err := viewer.hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), "%s is compressed", path)
		zr, err := gzip.NewReader(resp.Body)
		require.NoError(t, err, path)
		body, err := io.ReadAll(zr)
		require.NoError(t, err, path)
		if path == "/" {
			require.Contains(t, string(body), "<html", "the overview unzips to a page")
			require.Contains(t, plain, "<html")
			continue
		}
		want, err := static.Content(strings.TrimPrefix(path[strings.LastIndex(path, "/"):], "/"))
		require.NoError(t, err)
		require.Equal(t, string(want), string(body), "%s unzips to the served asset", path)
	}

	req, err := http.NewRequest(http.MethodGet, viewer.base+"/", nil)
	require.NoError(t, err)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := viewer.hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Empty(t, resp.Header.Get("Content-Encoding"), "a client that takes no gzip gets the page as it is")
}

// TestCSRFTokenIsMaskedPerResponse: two pages of one session carry
// different tokens (a compressed page never repeats the secret), each is
// accepted, and a token with one byte changed is refused.
func TestCSRFTokenIsMaskedPerResponse(t *testing.T) {
	e := setup(t)
	op := e.signedIn(t, auth.RoleOperator)
	op.page("/incidents")
	first := op.csrf
	op.page("/incidents")
	second := op.csrf
	require.NotEqual(t, first, second, "each response masks the token afresh")

	for i, token := range []string{first, second} {
		resp, body := op.post("/incidents", url.Values{"_csrf": {token}, "title": {"masked " + string(rune('a'+i))}})
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, "a masked token is accepted: %s", body)
	}
	tampered := []byte(first)
	tampered[len(tampered)-3] ^= 1
	resp, _ := op.post("/incidents", url.Values{"_csrf": {string(tampered)}, "title": {"tampered"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a changed token is refused")
}
