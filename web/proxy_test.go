package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// TestTrustedProxyHeader: the user header is believed only from a
// configured proxy address, with its role; from anywhere else it is
// ignored and the request is anonymous.
func TestTrustedProxyHeader(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	diag, err := diagnostics.Open(context.Background(), url, diagnostics.Config{})
	require.NoError(t, err)
	t.Cleanup(diag.Close)
	runner, err := actions.NewRunner(pool, actions.RunnerConfig{Diagnostics: diag})
	require.NoError(t, err)
	newServer := func(proxies []string) *Server {
		s, err := New(Config{Pool: pool, Diagnostics: diag, Actions: runner, Version: "test",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TrustedProxies: proxies})
		require.NoError(t, err)
		return s
	}
	get := func(s *Server, remote string, headers map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		req.Header.Set("Accept", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}

	trusting := newServer([]string{"10.1.2.3", "192.168.0.0/16"})
	rec := get(trusting, "10.1.2.3:5555", map[string]string{"X-Forwarded-User": "sso-alice", "X-Forwarded-Role": "operator"})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = get(trusting, "192.168.7.7:1", map[string]string{"X-Forwarded-User": "sso-bob"})
	require.Equal(t, http.StatusOK, rec.Code, "a role defaults to viewer")
	rec = get(trusting, "10.9.9.9:5555", map[string]string{"X-Forwarded-User": "mallory", "X-Forwarded-Role": "admin"})
	require.Equal(t, http.StatusUnauthorized, rec.Code, "the header from an unlisted address is ignored")
	rec = get(trusting, "10.1.2.3:5555", map[string]string{"X-Forwarded-User": "sso-alice", "X-Forwarded-Role": "root"})
	require.Equal(t, http.StatusForbidden, rec.Code, "an unknown role is refused")

	rec = get(newServer(nil), "10.1.2.3:5555", map[string]string{"X-Forwarded-User": "sso-alice"})
	require.Equal(t, http.StatusUnauthorized, rec.Code, "no proxies configured: no proxy authentication")

	_, err = New(Config{Pool: pool, Diagnostics: diag, Actions: runner, TrustedProxies: []string{"not-an-ip"}})
	require.ErrorContains(t, err, "not an IP address or CIDR")
}
