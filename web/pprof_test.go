package web

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
)

// pprof is for admins only: anonymous requests are sent to sign in, a
// viewer or an operator is refused, an admin gets the profiles.
func TestPprofNeedsAdmin(t *testing.T) {
	t.Parallel()
	e := setup(t)

	anon := e.client(t)
	resp, _ := anon.get("/debug/pprof/heap")
	require.NotEqual(t, http.StatusOK, resp.StatusCode)

	for _, role := range []string{auth.RoleViewer, auth.RoleOperator} {
		c := e.signedIn(t, role)
		resp, _ := c.get("/debug/pprof/")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, role)
		resp, _ = c.get("/debug/pprof/goroutine?debug=1")
		require.Equal(t, http.StatusForbidden, resp.StatusCode, role)
	}

	admin := e.signedIn(t, auth.RoleAdmin)
	body := admin.page("/debug/pprof/")
	require.Contains(t, body, "href='goroutine?debug=1'")
	resp, _ = admin.get("/debug/pprof")
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/debug/pprof/", resp.Header.Get("Location"))
	body = admin.page("/debug/pprof/goroutine?debug=1")
	require.Contains(t, body, "goroutine profile:")
	body = admin.page("/debug/pprof/cmdline")
	require.NotEmpty(t, body)
	resp, _ = admin.get("/debug/pprof/profile?seconds=1")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	resp, _ = admin.get("/debug/pprof/heap")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
