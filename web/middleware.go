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

// httpMetrics counts requests by route pattern (bounded), method and status,
// and the idempotent API requests by outcome.
type httpMetrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	idempotency *prometheus.CounterVec
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
		idempotency: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "console_idempotency_requests_total",
			Help: "API requests that carried an Idempotency-Key, by outcome (new, replayed, mismatch, in_progress, error).",
		}, []string{"outcome"}),
	}
	// Every outcome is exposed from the start, so a rate over them needs
	// no traffic first.
	for _, o := range idempotencyOutcomes {
		m.idempotency.WithLabelValues(o)
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.idempotency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	return m, nil
}

// refusalKey holds the refusal of a request on its context, for its log
// line.
const refusalKey = "refusal"

// refusal is why a request was refused, with the fields its log line adds
// (a sign-in's attempted name).
type refusal struct {
	reason string
	attrs  []any
}

// setRefusal records why the request is being refused; observe logs it.
func setRefusal(c echo.Context, reason string, attrs ...any) {
	c.Set(refusalKey, refusal{reason: reason, attrs: attrs})
}

// refusedStatus reports whether a status means the console refused the
// request (who asked, or the state of what they asked for), rather than
// failing it or not finding it.
func refusedStatus(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusConflict,
		http.StatusUnprocessableEntity, http.StatusTooManyRequests:
		return true
	}
	return false
}

// observe logs each request and records its metrics. It sits inside the
// error handling so the logged status is the one the client got. A refused
// request (401, 403, 409, 422, 429) is logged at warn as "request refused"
// with the reason, whatever the route; other requests at info, except the
// probes and static assets.
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
		attrs := []any{"request_id", requestIDOf(c),
			"method", c.Request().Method, "path", c.Request().URL.Path, "route", route,
			"status", status, "ms", took.Milliseconds(), "actor", actorName(c)}
		switch {
		case refusedStatus(status):
			attrs = append(attrs, "client", c.RealIP())
			if r, ok := c.Get(refusalKey).(refusal); ok {
				attrs = append(append(attrs, "reason", r.reason), r.attrs...)
			}
			s.log.Warn("request refused", attrs...)
		case route != "/healthz" && route != "/readyz" && !strings.HasPrefix(route, "/static"):
			s.log.Info("request", attrs...)
		}
		return nil
	}
}

func requestID() echo.MiddlewareFunc {
	return middleware.RequestIDWithConfig(middleware.RequestIDConfig{Generator: func() string { return auth.NewSecret()[:16] }})
}

// requestIDOf is the id requestID gave the request (it is in the response's
// X-Request-Id header and every log line about the request).
func requestIDOf(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
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
			if !auth.RoleAtLeast(p.Role, role) {
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

// principalScope namespaces a client's Idempotency-Keys by who sent them
// ("console:token:ci", "console:operator:alice"), so two clients' keys never
// collide; the prefix keeps them apart from an application's own keys in the
// same table. It is the scope to give the outbox page's key lookup.
func principalScope(c echo.Context) string {
	p, _ := principalFrom(c)
	return "console:" + p.Kind + ":" + p.Name
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
