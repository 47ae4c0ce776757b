package web

import (
	"context"
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
	"github.com/pgconsole/console/internal/auth"
)

// Config is what the server needs; cmd/console builds it from flags.
type Config struct {
	// Pool is the console's own pool for reads and actions. Required.
	Pool *pgxpool.Pool
	// Diagnostics runs the runbook's read-only queries on its own pool.
	// Required.
	Diagnostics *diagnostics.Diagnostics
	// Sampler keeps the recent samples behind the sparklines; nil shows
	// numbers without trends.
	Sampler *diagnostics.Sampler
	// Recorder is the flight recorder; its Status tells the history page
	// whether history is recorded. Nil means this console records nothing
	// (history recorded by another console is still shown).
	Recorder *diagnostics.Recorder
	// Actions runs every operator mutation. Required.
	Actions *actions.Runner
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
	// SecureCookies marks cookies Secure; set it when served over TLS
	// (directly or behind a TLS-terminating proxy).
	SecureCookies bool
	// SessionTTL is how long a sign-in lasts; default 12h.
	SessionTTL time.Duration
	// TrustedProxies are client addresses (IPs or CIDRs) whose ProxyUserHeader
	// is believed; empty disables proxy authentication.
	TrustedProxies []string
	// ProxyUserHeader and ProxyRoleHeader name the headers a trusted proxy
	// sets; defaults X-Forwarded-User and X-Forwarded-Role (role defaults to
	// viewer when absent).
	ProxyUserHeader string
	ProxyRoleHeader string
	// LoginNotice is shown on the sign-in page (the embedded default prints
	// where the one-time admin password is).
	LoginNotice string
}

// Server is the console's HTTP handler.
type Server struct {
	cfg     Config
	e       *echo.Echo
	log     *slog.Logger
	limiter *auth.LoginLimiter
	proxies *proxyList
	metrics *httpMetrics

	// openIncidents caches openIncident's lookup, which every panel
	// refresh makes; the handlers that open or close an incident
	// invalidate it.
	openIncidents *diagnostics.Cache[*audit.Incident]
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
	proxies, err := parseProxyList(cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	m, err := newHTTPMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		e:       echo.New(),
		log:     cfg.Logger,
		limiter: auth.NewLoginLimiter(5, time.Minute),
		proxies: proxies,
		metrics: m,
	}
	s.openIncidents = s.newOpenIncidentCache(openIncidentMaxAge)
	s.e.HideBanner = true
	s.e.HidePort = true
	s.e.HTTPErrorHandler = s.handleError
	s.routes()
	return s, nil
}

// Handler returns the http.Handler to serve.
func (s *Server) Handler() http.Handler { return s.e }

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
