package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/internal/auth"
)

// contentSecurityPolicy allows nothing but the console's own assets: no
// inline script or style (htmx is configured not to inject styles), no
// framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		if c.Request().TLS != nil {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// httpMetrics counts requests by route pattern (bounded), method and status.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "console_http_requests_total",
			Help: "HTTP requests served by the console, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "console_http_request_duration_seconds",
			Help:    "Time to serve console HTTP requests, by route pattern.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	return m, nil
}

// observe logs each request and records its metrics. It sits inside the
// error handling so the logged status is the one the client got.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		took := time.Since(start)
		s.metrics.requests.WithLabelValues(route, c.Request().Method, fmt.Sprint(status)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(took.Seconds())
		if route != "/healthz" && route != "/readyz" && !strings.HasPrefix(route, "/static") {
			s.log.Info("request", "request_id", c.Response().Header().Get(echo.HeaderXRequestID),
				"method", c.Request().Method, "path", c.Request().URL.Path, "route", route,
				"status", status, "ms", took.Milliseconds(), "actor", actorName(c))
		}
		return nil
	}
}

func requestID() echo.MiddlewareFunc {
	return middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: func() string { return auth.NewSecret()[:16] }})
}

// CSRF: a random token in an HttpOnly, SameSite=Strict cookie, echoed by every
// form (_csrf field) and every htmx request (X-CSRF-Token header, set once on
// <body>). Requests authenticated by an API token carry no cookies and are
// exempt.
const (
	csrfCookie = "console_csrf"
	csrfKey    = "csrf"
)

func (s *Server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		token := ""
		if ck, err := c.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
			token = ck.Value
		} else {
			token = auth.NewSecret()
			c.SetCookie(&http.Cookie{Name: csrfCookie, Value: token, Path: "/", HttpOnly: true,
				Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
		}
		c.Set(csrfKey, token)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if bearer(c) != "" {
			return next(c)
		}
		sent := c.Request().Header.Get("X-CSRF-Token")
		if sent == "" {
			sent = c.FormValue("_csrf")
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return echo.NewHTTPError(http.StatusForbidden,
				"request refused: its CSRF token is missing or stale; reload the page and submit again")
		}
		return next(c)
	}
}

func csrfToken(c echo.Context) string {
	t, _ := c.Get(csrfKey).(string)
	return t
}

// Authentication: an API token (Authorization: Bearer), a trusted proxy's
// user header, or the session cookie, in that order.
const (
	sessionCookie = "console_session"
	principalKey  = "principal"
)

var errForbidden = errors.New("your role may not do this")

func bearer(c echo.Context) string {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if v, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// authenticate resolves the principal, if any, and stores it on the context.
// It never refuses: requireRole does.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if tok := bearer(c); tok != "" {
			p, err := auth.TokenLookup(ctx, s.cfg.Pool, tok)
			if err != nil {
				if errors.Is(err, auth.ErrNoSession) {
					return echo.NewHTTPError(http.StatusUnauthorized, "API token not recognised or revoked")
				}
				return err
			}
			c.Set(principalKey, p)
			return next(c)
		}
		if user := c.Request().Header.Get(s.cfg.ProxyUserHeader); user != "" && s.proxies.contains(c.Request().RemoteAddr) {
			role := c.Request().Header.Get(s.cfg.ProxyRoleHeader)
			if role == "" {
				role = auth.RoleViewer
			}
			if !auth.ValidRole(role) {
				return echo.NewHTTPError(http.StatusForbidden, "the proxy sent an unknown role "+fmt.Sprintf("%q", role))
			}
			c.Set(principalKey, auth.Principal{Name: user, Role: role, Kind: "proxy"})
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookie); err == nil {
			p, err := auth.SessionLookup(ctx, s.cfg.Pool, ck.Value)
			if err == nil {
				c.Set(principalKey, p)
			} else if !errors.Is(err, auth.ErrNoSession) {
				return err
			}
		}
		return next(c)
	}
}

// requireRole refuses anonymous requests (401, or a redirect to sign-in) and
// those whose role ranks below role (403).
func requireRole(role string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := principalFrom(c)
			if !ok {
				return auth.ErrNoSession
			}
			if auth.RoleRank(p.Role) < auth.RoleRank(role) {
				return fmt.Errorf("%w: this needs the %s role and %s has %s", errForbidden, role, p.Name, p.Role)
			}
			return next(c)
		}
	}
}

func principalFrom(c echo.Context) (auth.Principal, bool) {
	p, ok := c.Get(principalKey).(auth.Principal)
	return p, ok
}

func actorName(c echo.Context) string {
	if p, ok := principalFrom(c); ok {
		return p.Name
	}
	return ""
}

// proxyList holds the addresses whose identity headers are trusted.
type proxyList struct{ nets []*net.IPNet }

func parseProxyList(items []string) (*proxyList, error) {
	l := &proxyList{}
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		if !strings.Contains(it, "/") {
			if strings.Contains(it, ":") {
				it += "/128"
			} else {
				it += "/32"
			}
		}
		_, n, err := net.ParseCIDR(it)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR: %w", it, err)
		}
		l.nets = append(l.nets, n)
	}
	return l, nil
}

func (l *proxyList) contains(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	for _, n := range l.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// cleanNext keeps post-login redirects on this site: anything but a local
// path becomes "/".
func cleanNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") ||
		strings.HasPrefix(next, "/login") {
		return "/"
	}
	return next
}

func safeNext(next string) string { return url.QueryEscape(cleanNext(next)) }
