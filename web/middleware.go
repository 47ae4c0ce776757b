package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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

// setSecurityHeaders sets the headers every answer carries, the starting
// page's included; HSTS when the request came over TLS.
func setSecurityHeaders(h http.Header, overTLS bool) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer browsers send
	// "Origin: null" on the console's own form posts, which the origin
	// check could not tell from a sandboxed attacker's.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
	if overTLS {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// securityHeaders sets the headers every answer carries. HSTS is sent when
// the request came over TLS, directly or through a trusted proxy.
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		setSecurityHeaders(c.Response().Header(), s.overTLS(c.Request()))
		if !strings.HasPrefix(c.Request().URL.Path, "/static/") {
			c.Response().Header().Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// Body limits: a form (sign-in, an action's fields, an incident) fits in
// formBodyLimit; the JSON API gets apiBodyLimit. A larger body is refused
// with 413 before anything reads it, so nothing large is buffered in memory
// or spooled to disk.
const (
	formBodyLimit = 64 << 10
	apiBodyLimit  = 1 << 20
)

func bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		limit := int64(formBodyLimit)
		if strings.HasPrefix(r.URL.Path, "/api/") {
			limit = apiBodyLimit
		}
		if r.ContentLength > limit {
			return errBodyTooLarge(limit)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
		return next(c)
	}
}

func errBodyTooLarge(limit int64) error {
	return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
		fmt.Sprintf("request refused: its body is larger than %d KB; shorten the text fields and submit again", limit>>10))
}

// parseForm reads a form body within the body limit: a body over the limit
// is 413, a malformed one 400.
func parseForm(c echo.Context) error {
	r := c.Request()
	var err error
	if strings.HasPrefix(r.Header.Get(echo.HeaderContentType), echo.MIMEMultipartForm) {
		err = r.ParseMultipartForm(formBodyLimit)
	} else {
		err = r.ParseForm()
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return errBodyTooLarge(tooLarge.Limit)
	case err != nil && !errors.Is(err, http.ErrNotMultipart):
		return errBadRequest("the form could not be read: %v", err)
	}
	return nil
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
// probes, the pages' database status polls and static assets.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := s.routeLabel(c.Path())
		status := c.Response().Status
		took := time.Since(start)
		s.metrics.requests.WithLabelValues(route, methodLabel(c.Request().Method), statusLabel(status)).Inc()
		s.metrics.duration.WithLabelValues(route).Observe(took.Seconds())
		attrs := []any{"request_id", requestIDOf(c),
			"method", clip(c.Request().Method, maxLoggedMethod), "path", clip(c.Request().URL.Path, maxLoggedPath), "route", route,
			"status", status, "ms", took.Milliseconds(), "actor", actorName(c)}
		switch {
		case refusedStatus(status):
			attrs = append(attrs, "client", c.RealIP())
			if r, ok := c.Get(refusalKey).(refusal); ok {
				attrs = append(append(attrs, "reason", r.reason), r.attrs...)
			}
			s.log.Warn("request refused", attrs...)
		case route != "/healthz" && route != "/readyz" && route != "/status/database" && !strings.HasPrefix(route, "/static"):
			s.log.Info("request", attrs...)
		}
		return nil
	}
}

// The request metrics' labels are bounded whatever clients send: the route
// is a registered pattern (never the raw path), the method one of the
// standard ones or "other", the status a three-digit code. The log line
// clips the method and path the client chose.
const (
	maxLoggedMethod = 16
	maxLoggedPath   = 512
)

// standardMethods are the methods of RFC 9110 (and PATCH) that the request
// metrics name; any other is counted as "other".
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodOptions: true, http.MethodConnect: true, http.MethodTrace: true,
}

func methodLabel(method string) string {
	if standardMethods[method] {
		return method
	}
	return "other"
}

func statusLabel(status int) string {
	if status < 100 || status > 999 {
		return "other"
	}
	return strconv.Itoa(status)
}

// routeLabel is the route pattern echo matched when it is one the console
// registered, otherwise "unmatched".
func (s *Server) routeLabel(pattern string) string {
	if s.routePatterns[pattern] {
		return pattern
	}
	return "unmatched"
}

// requestIDPattern is what a request id taken from a trusted proxy must
// look like: short, and nothing a log reader could mistake for another
// field or line.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID gives every request its id, in the response's X-Request-Id
// header and every log line about it. An X-Request-Id sent by a trusted
// proxy is kept when it matches requestIDPattern, so its logs and the
// console's join up; one sent by any other client is replaced, so nobody
// can pose as another request in the logs or choose an id the console
// itself might generate.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		id := r.Header.Get(echo.HeaderXRequestID)
		if !s.proxies.contains(r.RemoteAddr) || !requestIDPattern.MatchString(id) {
			id = auth.NewSecret()[:16]
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// requestIDOf is the id requestID gave the request (it is in the response's
// X-Request-Id header and every log line about the request).
func requestIDOf(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

// CSRF: every form (_csrf field) and every htmx request (X-CSRF-Token
// header, set once on <body>) echoes a token that is an HMAC, under a key
// that never leaves the process, of the session's secret, or of a random
// pre-session value in its own cookie before sign-in. A token is therefore
// worthless in another session, and it changes at sign-in and sign-out
// (the session secret is new, the pre-session cookie is replaced). State
// changes must also come from this site: Sec-Fetch-Site, when the browser
// sends it, must be same-origin, and Origin, when sent, must name this host.
// Requests authenticated by an API token carry no cookies and are exempt.
const (
	csrfKey          = "csrf"
	sessionSecretKey = "session_secret"
)

// Cookie names. Over TLS (directly or through a trusted proxy that says
// https) the cookies are Secure and carry the __Host- prefix, which also
// pins them to this host and path /; over plain http (the local default)
// browsers would drop a Secure cookie, so the plain names are used.
func sessionCookieName(secure bool) string { return cookieName("console_session", secure) }
func csrfCookieName(secure bool) string    { return cookieName("console_csrf", secure) }

func cookieName(name string, secure bool) string {
	if secure {
		return "__Host-" + name
	}
	return name
}

// setCookie sets a console cookie: HttpOnly, SameSite=Strict, path /, and
// Secure when the request came over TLS. maxAge < 0 deletes it.
func (s *Server) setCookie(c echo.Context, name, value string, maxAge int) {
	secure := s.secureCookies(c.Request())
	c.SetCookie(&http.Cookie{Name: cookieName(name, secure), Value: value, Path: "/", HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteStrictMode, MaxAge: maxAge})
}

// rotatePreSession replaces the pre-session cookie, so no token issued
// before a sign-in or sign-out is accepted after it.
func (s *Server) rotatePreSession(c echo.Context) {
	s.setCookie(c, "console_csrf", auth.NewSecret(), 0)
}

func (s *Server) csrfFor(binding string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(binding))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		binding := ""
		if secret, ok := c.Get(sessionSecretKey).(string); ok {
			binding = "session\x00" + secret
		} else {
			pre := ""
			if ck, err := c.Cookie(csrfCookieName(s.secureCookies(c.Request()))); err == nil && len(ck.Value) >= 32 && len(ck.Value) <= 64 {
				pre = ck.Value
			} else {
				pre = auth.NewSecret()
				s.setCookie(c, "console_csrf", pre, 0)
			}
			binding = "pre-session\x00" + pre
		}
		token := s.csrfFor(binding)
		c.Set(csrfKey, token)
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if bearer(c) != "" {
			return next(c)
		}
		if err := s.sameOrigin(c.Request()); err != nil {
			setRefusal(c, err.Error())
			return echo.NewHTTPError(http.StatusForbidden, err.Error())
		}
		sent := c.Request().Header.Get("X-CSRF-Token")
		if sent == "" {
			if err := parseForm(c); err != nil {
				return err
			}
			sent = c.FormValue("_csrf")
		}
		if sent == "" || !csrfMatches(sent, token) {
			return echo.NewHTTPError(http.StatusForbidden,
				"request refused: its CSRF token is missing or stale; reload the page and submit again")
		}
		return next(c)
	}
}

// csrfToken is the request's CSRF token as a page carries it: masked with
// fresh random bytes on every call, so compressed pages (which also echo
// what a visitor typed) never repeat the secret a compression-length attack
// could guess byte by byte.
func csrfToken(c echo.Context) string {
	return maskCSRF(rawCSRF(c))
}

// rawCSRF is the request's CSRF token itself, for the seals derived from it.
func rawCSRF(c echo.Context) string {
	t, _ := c.Get(csrfKey).(string)
	return t
}

// maskCSRF returns base64(r || r XOR token) for a random r of the token's
// length.
func maskCSRF(token string) string {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || token == "" {
		return token
	}
	out := make([]byte, 2*len(raw))
	if _, err := rand.Read(out[:len(raw)]); err != nil {
		return token
	}
	for i, b := range raw {
		out[len(raw)+i] = out[i] ^ b
	}
	return base64.RawURLEncoding.EncodeToString(out)
}

// csrfMatches says whether sent is token, masked or as it is.
func csrfMatches(sent, token string) bool {
	if subtle.ConstantTimeCompare([]byte(sent), []byte(token)) == 1 {
		return true
	}
	masked, err := base64.RawURLEncoding.DecodeString(sent)
	raw, err2 := base64.RawURLEncoding.DecodeString(token)
	if err != nil || err2 != nil || len(raw) == 0 || len(masked) != 2*len(raw) {
		return false
	}
	n := len(raw)
	unmasked := make([]byte, n)
	for i := range n {
		unmasked[i] = masked[i] ^ masked[n+i]
	}
	return subtle.ConstantTimeCompare(unmasked, raw) == 1
}

// sameOrigin refuses a state change a browser says came from another site.
func (s *Server) sameOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("request refused: it came from another site (Sec-Fetch-Site: %s); use the console's own pages", clip(site, 32))
	}
	origin := r.Header.Get("Origin")
	if origin == "" || (origin == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin") {
		// No Origin (older clients, scripts), or the opaque one a page
		// served with an older no-referrer policy sends on its own posts.
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, s.requestHost(r)) {
		return fmt.Errorf("request refused: its Origin %q is not this console; use the console's own pages", clip(origin, 100))
	}
	return nil
}

// requestHost is the host the browser addressed: the Host header, or the
// X-Forwarded-Host a trusted proxy passes on.
func (s *Server) requestHost(r *http.Request) string {
	if h := r.Header.Get("X-Forwarded-Host"); h != "" && s.proxies.contains(r.RemoteAddr) {
		return strings.TrimSpace(strings.Split(h, ",")[0])
	}
	return r.Host
}

// overTLS reports whether the client's connection is TLS: directly, or to
// a trusted proxy that says so in X-Forwarded-Proto.
func (s *Server) overTLS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.proxies.contains(r.RemoteAddr) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// secureCookies reports whether cookies are Secure (and __Host-) for r:
// over TLS, or always when Config.SecureCookies says so.
func (s *Server) secureCookies(r *http.Request) bool {
	return s.cfg.SecureCookies || s.overTLS(r)
}

// clientIP is the address a request came from: the socket's peer, unless
// that peer is a trusted proxy, in which case it is the right-most address
// of X-Forwarded-For that is not itself a trusted proxy. A client can put
// anything in X-Forwarded-For, so nothing in it is believed unless a trusted
// proxy appended it. Echo's RealIP returns it (Server sets IPExtractor).
func (s *Server) clientIP(r *http.Request) string {
	peer, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		peer = r.RemoteAddr
	}
	if !s.proxies.contains(r.RemoteAddr) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(hops[i]))
		if ip == nil {
			break
		}
		if !s.proxies.containsIP(ip) {
			return ip.String()
		}
	}
	return peer
}

// clip shortens s to at most n bytes (on a rune boundary) for logs and
// keys, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Authentication: an API token (Authorization: Bearer), a trusted proxy's
// user header, or the session cookie, in that order.
const principalKey = "principal"

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
			_, down := s.db.down()
			p, err := s.tokens.lookup(ctx, s.cfg.Pool, tok, time.Now(), down)
			if err != nil {
				if errors.Is(err, auth.ErrNoSession) {
					return echo.NewHTTPError(http.StatusUnauthorized, "API token not recognised or revoked")
				}
				why := "the database did not answer within " + sessionLookupTimeout.String()
				if !errors.Is(err, context.DeadlineExceeded) {
					why = "the database refused the lookup (the console's log has the error)"
				}
				return echo.NewHTTPError(http.StatusServiceUnavailable,
					"the API token could not be checked: "+why+"; retry later").SetInternal(err)
			}
			s.noteTokenUse(p.ID)
			if p.Scope == auth.ScopeAlerts && !(c.Request().Method == http.MethodPost && c.Path() == alertsPath) {
				return fmt.Errorf("%w: token %s may only post Alertmanager notifications to %s (it was created with --scope alerts)", errForbidden, p.Name, alertsPath)
			}
			c.Set(principalKey, p)
			return next(c)
		}
		if user := c.Request().Header.Get(s.cfg.ProxyUserHeader); user != "" && s.proxies.contains(c.Request().RemoteAddr) {
			p, err := s.proxyPrincipal(c.Request().Header)
			if err != nil {
				return err
			}
			c.Set(principalKey, p)
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookieName(s.secureCookies(c.Request()))); err == nil && len(ck.Value) <= 64 {
			_, down := s.db.down()
			p, err := s.sessions.lookup(ctx, s.cfg.Pool, ck.Value, time.Now(), down)
			if err == nil {
				c.Set(principalKey, p)
				c.Set(sessionSecretKey, ck.Value)
			} else if !errors.Is(err, auth.ErrNoSession) {
				return echo.NewHTTPError(http.StatusServiceUnavailable,
					"Your sign-in could not be checked: the database did not answer within "+sessionLookupTimeout.String()+". Reload the page in a moment.").SetInternal(err)
			}
		}
		return next(c)
	}
}

// proxyPrincipal is who a trusted proxy says the request is from. A header
// sent more than once is refused: the proxy appended its value to one the
// client sent, which means it does not strip them. The role comes from
// Config.ProxyRoles (the highest of the user's and its groups'), or from the
// role header when Config.ProxyTrustRoleHeader opts in.
func (s *Server) proxyPrincipal(h http.Header) (auth.Principal, error) {
	for _, name := range []string{s.cfg.ProxyUserHeader, s.cfg.ProxyGroupsHeader, s.cfg.ProxyRoleHeader} {
		if n := len(h.Values(name)); n > 1 {
			return auth.Principal{}, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(
				"the request carries %d %s headers; the proxy must remove any the client sends before setting its own", n, name))
		}
	}
	user := h.Get(s.cfg.ProxyUserHeader)
	if err := auth.ValidProxyUser(user); err != nil {
		return auth.Principal{}, echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
			"request refused: %v. The console takes the user from the proxy's %s header; have the proxy send plain user names",
			err, s.cfg.ProxyUserHeader))
	}
	if s.cfg.ProxyTrustRoleHeader {
		role := h.Get(s.cfg.ProxyRoleHeader)
		if role == "" {
			role = auth.RoleViewer
		}
		if !auth.ValidRole(role) {
			return auth.Principal{}, echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf("the proxy sent an unknown role %q", role))
		}
		return auth.Principal{Name: user, Role: role, Kind: "proxy"}, nil
	}
	role := s.cfg.ProxyRoles[user]
	var groups []string
	for _, g := range strings.Split(h.Get(s.cfg.ProxyGroupsHeader), ",") {
		if g = strings.TrimSpace(g); g != "" {
			groups = append(groups, g)
			if r := s.cfg.ProxyRoles[auth.ProxyGroupPrefix+g]; auth.RoleRank(r) > auth.RoleRank(role) {
				role = r
			}
		}
	}
	if role == "" {
		return auth.Principal{}, echo.NewHTTPError(http.StatusForbidden, fmt.Sprintf(
			"proxy user %q (groups %q) has no role in the console's proxy role mapping; an administrator adds it with --proxy-roles",
			user, strings.Join(groups, ",")))
	}
	return auth.Principal{Name: user, Role: role, Kind: "proxy"}, nil
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
	return l.containsIP(net.ParseIP(host))
}

func (l *proxyList) containsIP(ip net.IP) bool {
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

// cleanNext keeps post-login redirects on this site. next is parsed as a
// URL and must be a plain local path: no scheme, no host, no user, exactly
// one leading slash, no backslash and no control character (browsers drop
// tabs and newlines and read a backslash as a slash, so "/<tab>/evil.example"
// or "/<backslash>evil.example" would leave the site), and not the sign-in page
// itself. The result is rebuilt from the parsed path and query; anything
// else becomes "/".
func cleanNext(next string) string {
	const home = "/"
	if next == "" || len(next) > 2048 || unsafeInPath(next) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return home
	}
	if !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") || unsafeInPath(u.Path) ||
		u.Path == "/login" || strings.HasPrefix(u.Path, "/login/") {
		return home
	}
	out := (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.Query().Encode()}).String()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") || unsafeInPath(out) {
		return home
	}
	return out
}

// unsafeInPath reports a control character or backslash.
func unsafeInPath(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}

func safeNext(next string) string { return url.QueryEscape(cleanNext(next)) }

// compress gzips what the console writes when the client accepts it: pages,
// fragments, JSON and the assets. /metrics negotiates its own encoding, and
// the profiles under /debug/pprof are gzipped already. Pages are safe to
// compress because they carry the CSRF token masked afresh (csrfToken).
var compress = middleware.GzipWithConfig(middleware.GzipConfig{
	Level:     5,
	MinLength: 1024,
	Skipper: func(c echo.Context) bool {
		p := c.Request().URL.Path
		return p == "/metrics" || strings.HasPrefix(p, "/debug/pprof")
	},
})
