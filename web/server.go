package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// Config is what the server needs; cmd/console builds it from flags.
type Config struct {
	// Pool is the console's own pool for reads and actions. Required.
	Pool *pgxpool.Pool
	// Diagnostics runs the runbook's read-only queries on its own pool.
	// Required. Its ServerInfo also says whether the database is a
	// standby: the console is read-only while it is, and follows a
	// promotion within its ServerInfoMaxAge.
	Diagnostics *diagnostics.Diagnostics
	// Sampler keeps the recent samples behind the sparklines; nil shows
	// numbers without trends.
	Sampler *sampler.Sampler
	// Recorder is the flight recorder; its Status tells the history page
	// whether history is recorded. Nil means this console records nothing
	// (history recorded by another console is still shown).
	Recorder *recorder.Recorder
	// Episodes is the lock-episode recorder; its Status tells the lock
	// episodes page whether they are recorded. Nil means this console
	// records none (episodes recorded by another console are still shown).
	Episodes *episodes.Recorder
	// Actions runs every operator mutation. Required.
	Actions *actions.Runner
	// JobRetention is how long this console's scheduler keeps done jobs
	// when it leads (zero: all of them); /schedules says so beside the
	// retention's recorded runs.
	JobRetention time.Duration
	// Database is the redacted connection target shown in the top bar.
	Database string
	// Version is the console's version string.
	Version string
	// Gatherer serves /metrics; Registerer takes the web layer's own metrics.
	// Both default to a fresh registry.
	Gatherer   prometheus.Gatherer
	Registerer prometheus.Registerer
	// MetricsAccess is "open" (default), "token" (any API token) or "off".
	MetricsAccess string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// SecureCookies marks cookies Secure (and names them __Host-) on every
	// request. Without it they are Secure when the request came over TLS,
	// directly or through a trusted proxy that sends X-Forwarded-Proto:
	// https; set it when a proxy terminates TLS but does not say so.
	SecureCookies bool
	// CSRFKey is the HMAC key CSRF tokens are derived with. Nil means a
	// random key per process (tokens in open pages stop working at a
	// restart; a reload fixes that). Replicas behind one load balancer
	// without sticky sessions need a shared key.
	CSRFKey []byte
	// SessionTTL is how long a sign-in lasts; default 12h.
	SessionTTL time.Duration
	// TrustedProxies are peer addresses (IPs or CIDRs) whose ProxyUserHeader,
	// X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host are believed;
	// empty disables proxy authentication, and the client address is always
	// the socket's peer.
	TrustedProxies []string
	// ProxyUserHeader, ProxyGroupsHeader and ProxyRoleHeader name the
	// headers a trusted proxy sets; defaults X-Forwarded-User,
	// X-Forwarded-Groups (a comma list) and X-Forwarded-Role. A request
	// carrying any of them more than once is refused.
	ProxyUserHeader   string
	ProxyGroupsHeader string
	ProxyRoleHeader   string
	// ProxyRoles maps a proxy user ("alice") or group ("group:sre") to a
	// role; a user gets the highest role of its name and groups, and a
	// user with none is refused. The role header is ignored unless
	// ProxyTrustRoleHeader is set, in which case it decides (viewer when
	// absent) and ProxyRoles is not used.
	ProxyRoles           map[string]string
	ProxyTrustRoleHeader bool
	// LoginNotice is shown on the sign-in page (the embedded default prints
	// where the one-time admin password is).
	LoginNotice string
	// QueueSource is the engine /queues, /jobs and /deadletters read when
	// it is not the console's own (River's); nil keeps those pages on the
	// console's engine, read directly.
	QueueSource queues.Source
}

// Server is the console's HTTP handler.
type Server struct {
	cfg     Config
	e       *echo.Echo
	log     *slog.Logger
	limiter *auth.LoginLimiter
	// limiterNow is the sign-in limiter's clock (time.Now; a test holds
	// it still so slow sign-ins on a loaded machine do not refill slots).
	limiterNow func() time.Time
	proxies    *proxyList
	metrics    *httpMetrics
	// routePatterns are the registered route patterns, the only values
	// of the request metrics' route label besides "unmatched".
	routePatterns map[string]bool
	csrfKey       []byte
	ready         readiness

	// db knows whether the database answers; sessions caches session
	// lookups so a stalled database neither hangs pages nor signs
	// everyone out.
	db       *dbWatch
	sessions *sessionCache
	// tokens caches API token verdicts as sessions does sessions, and
	// tokenUses records their last use in batches, so a token request
	// costs no write and works on a standby.
	tokens    *sessionCache
	tokenUses tokenUses
	// standbySessions are the sign-ins made while attached to a standby,
	// held by this process since the database cannot store them.
	standbySessions standbySessions
	// readOnlyState is whether the database is a standby (readOnly).
	readOnlyState readOnlyState

	// openIncidents caches openIncident's lookup, which every panel
	// refresh makes; the handlers that open or close an incident
	// invalidate it.
	openIncidents *diagnostics.Cache[*audit.Incident]
	// refusals shares the offers' guard answers among requests.
	refusals *refusalCache
}

// New builds the server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registerer == nil || cfg.Gatherer == nil {
		reg := prometheus.NewRegistry()
		cfg.Registerer, cfg.Gatherer = reg, reg
	}
	if cfg.MetricsAccess == "" {
		cfg.MetricsAccess = "open"
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.ProxyUserHeader == "" {
		cfg.ProxyUserHeader = "X-Forwarded-User"
	}
	if cfg.ProxyRoleHeader == "" {
		cfg.ProxyRoleHeader = "X-Forwarded-Role"
	}
	if cfg.ProxyGroupsHeader == "" {
		cfg.ProxyGroupsHeader = "X-Forwarded-Groups"
	}
	for who, role := range cfg.ProxyRoles {
		if !auth.ValidRole(role) {
			return nil, fmt.Errorf("proxy role mapping %s=%s: use viewer, operator or admin", who, role)
		}
	}
	proxies, err := parseProxyList(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	m, err := newHTTPMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	if err := registerAuditHead(cfg.Registerer, cfg.Pool); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        cfg,
		e:          echo.New(),
		log:        cfg.Logger,
		limiter:    auth.NewLoginLimiter(loginLimits),
		limiterNow: time.Now,
		proxies:    proxies,
		metrics:    m,
		csrfKey:    cfg.CSRFKey,
		db:         newDBWatch(cfg.Pool),
		tokens:     newSessionCache(auth.TokenLookup),
		refusals:   newRefusalCache(),
		tokenUses:  tokenUses{usage: auth.NewTokenUsage(), every: tokenUseEvery},
	}
	if len(s.csrfKey) == 0 {
		s.csrfKey = make([]byte, 32)
		if _, err := rand.Read(s.csrfKey); err != nil {
			return nil, fmt.Errorf("make the CSRF key: %w", err)
		}
	}
	s.sessions = newSessionCache(s.lookupSession)
	s.e.IPExtractor = s.clientIP
	s.openIncidents = s.newOpenIncidentCache(openIncidentMaxAge)
	s.e.HideBanner = true
	s.e.HidePort = true
	s.e.HTTPErrorHandler = s.handleError
	s.routes()
	s.routePatterns = map[string]bool{}
	for _, r := range s.e.Routes() {
		s.routePatterns[r.Path] = true
	}
	return s, nil
}

// Handler returns the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.e }

// HTTPTimeouts bound how long a client may hold a connection. Zero fields
// take the defaults of DefaultHTTPTimeouts.
type HTTPTimeouts struct {
	// ReadHeader bounds reading the request line and headers.
	ReadHeader time.Duration
	// Read bounds reading the whole request, body included.
	Read time.Duration
	// Write bounds writing the answer; it is long enough for a 30-second
	// CPU profile from /debug/pprof.
	Write time.Duration
	// Idle bounds a keep-alive connection between requests.
	Idle time.Duration
}

// DefaultHTTPTimeouts are the timeouts HTTPServer uses by default.
var DefaultHTTPTimeouts = HTTPTimeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 2 * time.Minute}

// maxHeaderBytes bounds the request line and headers.
const maxHeaderBytes = 64 << 10

// HTTPServer returns the http.Server to serve the console with: its
// handler, bounded headers, and read, write and idle timeouts, so a client
// that sends or reads slowly cannot hold a connection for ever. Its errors
// go to the server's logger.
func (s *Server) HTTPServer(t HTTPTimeouts) *http.Server {
	return NewHTTPServer(s.e, s.log, t)
}

// NewHTTPServer returns an http.Server for h with the console's timeouts
// (zero fields take DefaultHTTPTimeouts) and header limit, logging the
// server's own errors to log. A caller that must answer before the console
// exists serves Starting through it and hands over to Server.Handler.
func NewHTTPServer(h http.Handler, log *slog.Logger, t HTTPTimeouts) *http.Server {
	d := DefaultHTTPTimeouts
	if t.ReadHeader == 0 {
		t.ReadHeader = d.ReadHeader
	}
	if t.Read == 0 {
		t.Read = d.Read
	}
	if t.Write == 0 {
		t.Write = d.Write
	}
	if t.Idle == 0 {
		t.Idle = d.Idle
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelError)})
}

// dbInfo is what the top bar says about the database.
type dbInfo struct {
	server string
	role   string
}

// databaseInfo reads the top bar's version and role from diagnostics'
// ServerInfo, which re-reads them every 30 seconds, so pages do not pay for
// them and the role follows a failover. It is empty (and the top bar says
// nothing) when the server cannot be read within half a second.
func (s *Server) databaseInfo(ctx context.Context) dbInfo {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	info, err := s.cfg.Diagnostics.ServerInfo(ctx)
	if err != nil {
		return dbInfo{}
	}
	return topBarInfo(info)
}

// topBarInfo maps ServerInfo to the top bar: "PostgreSQL 15.13" and
// "primary" or "standby".
func topBarInfo(info diagnostics.Server) dbInfo {
	version, _, _ := strings.Cut(info.Version, " ")
	d := dbInfo{server: "PostgreSQL " + version, role: "primary"}
	if info.InRecovery {
		d.role = "standby"
	}
	return d
}
