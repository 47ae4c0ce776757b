package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
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
	newServer := func(proxies []string, configure ...func(*Config)) *Server {
		cfg := Config{Pool: pool, Diagnostics: diag, Actions: runner, Version: "test",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TrustedProxies: proxies,
			ProxyRoles: map[string]string{"sso-alice": "operator", "group:sre": "admin", "group:support": "viewer"}}
		for _, f := range configure {
			f(&cfg)
		}
		s, err := New(cfg)
		require.NoError(t, err)
		// whoami answers with the principal authentication settled on.
		s.e.GET("/test/whoami", func(c echo.Context) error {
			p, _ := c.Get(principalKey).(auth.Principal)
			return c.JSON(http.StatusOK, p)
		})
		return s
	}
	get := func(s *Server, remote string, headers map[string][]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/test/whoami", nil)
		req.RemoteAddr = remote
		req.Header.Set("Accept", "application/json")
		for k, vs := range headers {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	h := func(kv ...string) map[string][]string {
		out := map[string][]string{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = append(out[kv[i]], kv[i+1])
		}
		return out
	}
	role := func(rec *httptest.ResponseRecorder) string {
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var who auth.Principal
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &who), rec.Body.String())
		return who.Role
	}

	trusting := newServer([]string{"10.1.2.3", "192.168.0.0/16"})
	require.Equal(t, "operator", role(get(trusting, "10.1.2.3:5555", h("X-Forwarded-User", "sso-alice"))), "mapped by user")
	require.Equal(t, "admin", role(get(trusting, "10.1.2.3:5555", h("X-Forwarded-User", "sso-alice", "X-Forwarded-Groups", "support, sre"))),
		"the highest of the user's and its groups' roles")
	require.Equal(t, "operator", role(get(trusting, "10.1.2.3:5555", h("X-Forwarded-User", "sso-alice", "X-Forwarded-Role", "admin"))),
		"the role header is ignored without the opt-in")
	rec := get(trusting, "192.168.7.7:1", h("X-Forwarded-User", "sso-bob"))
	require.Equal(t, http.StatusForbidden, rec.Code, "a user with no mapped role is refused")
	require.Contains(t, rec.Body.String(), "proxy role mapping")
	require.Empty(t, role(get(trusting, "10.9.9.9:5555", h("X-Forwarded-User", "mallory", "X-Forwarded-Groups", "sre"))),
		"the header from an unlisted address is ignored: anonymous")
	for _, dup := range []map[string][]string{
		h("X-Forwarded-User", "mallory", "X-Forwarded-User", "sso-alice"),
		h("X-Forwarded-User", "sso-alice", "X-Forwarded-Groups", "sre", "X-Forwarded-Groups", "support"),
		h("X-Forwarded-User", "sso-alice", "X-Forwarded-Role", "admin", "X-Forwarded-Role", "viewer"),
	} {
		rec = get(trusting, "10.1.2.3:5555", dup)
		require.Equal(t, http.StatusBadRequest, rec.Code, "a repeated identity header is refused: %v", dup)
		require.Contains(t, rec.Body.String(), "the proxy must remove")
	}

	// A user name the mapping could mistake for a group, or one no
	// proxy sends on purpose, is refused with what is accepted.
	roleHeader := newServer([]string{"10.1.2.3"}, func(c *Config) { c.ProxyTrustRoleHeader = true })
	for _, odd := range []string{"group:sre", "Group:sre", " sso-alice", "sso-alice ", "sso\x01alice", "sso\u0085alice",
		"\xff\xfe", strings.Repeat("a", auth.MaxProxyUserLength+1)} {
		for _, s := range []*Server{trusting, roleHeader} {
			rec = get(s, "10.1.2.3:5555", h("X-Forwarded-User", odd, "X-Forwarded-Role", "viewer"))
			require.Equal(t, http.StatusForbidden, rec.Code, "proxy user %q: %s", odd, rec.Body.String())
			require.Contains(t, rec.Body.String(), "a proxy user name is 1 to 128 bytes", "proxy user %q", odd)
		}
	}
	require.Equal(t, "admin", role(get(trusting, "10.1.2.3:5555", h("X-Forwarded-User", "sso-carol", "X-Forwarded-Groups", "sre"))),
		"a plain user still takes its group's role")

	require.Equal(t, "admin", role(get(roleHeader, "10.1.2.3:5555", h("X-Forwarded-User", "sso-bob", "X-Forwarded-Role", "admin"))),
		"opted in, the role header decides")
	require.Equal(t, "viewer", role(get(roleHeader, "10.1.2.3:5555", h("X-Forwarded-User", "sso-bob"))), "viewer when absent")
	rec = get(roleHeader, "10.1.2.3:5555", h("X-Forwarded-User", "sso-alice", "X-Forwarded-Role", "root"))
	require.Equal(t, http.StatusForbidden, rec.Code, "an unknown role is refused")

	require.Empty(t, role(get(newServer(nil), "10.1.2.3:5555", h("X-Forwarded-User", "sso-alice"))),
		"no proxies configured: no proxy authentication")

	_, err = New(Config{Pool: pool, Diagnostics: diag, Actions: runner, ProxyRoles: map[string]string{"bob": "root"}})
	require.ErrorContains(t, err, "proxy role mapping bob=root")
	_, err = New(Config{Pool: pool, Diagnostics: diag, Actions: runner, TrustedProxies: []string{"not-an-ip"}})
	require.ErrorContains(t, err, "not an IP address or CIDR")
}
