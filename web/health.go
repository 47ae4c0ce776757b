package web

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/migrations"
)

// healthz answers while the process is up, whatever the database does.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "version": s.cfg.Version})
}

// readyTimeout is the longest /readyz takes to answer, whatever the
// database does.
const readyTimeout = time.Second

// readyFresh is how long one check's answer is reused, so a flood of
// probes costs the database one check at a time.
const readyFresh = 500 * time.Millisecond

// readiness shares one database check among concurrent /readyz requests.
type readiness struct {
	mu      sync.Mutex
	running chan struct{}
	last    readyResult
	at      time.Time
}

// readyResult is one check: ok, or what failed, for signed-in callers.
type readyResult struct {
	ok      bool
	details map[string]any
}

// readyz answers 200 only when the database is reachable and its schema is
// the one this binary expects, within readyTimeout. Anonymous callers learn
// ready or not; signed-in ones also get what failed.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	res := s.checkReady(ctx)
	status, word := http.StatusOK, "ok"
	if !res.ok {
		status, word = http.StatusServiceUnavailable, "unavailable"
	}
	body := map[string]any{"status": word}
	if _, ok := principalFrom(c); ok {
		for k, v := range res.details {
			body[k] = v
		}
	}
	return c.JSON(status, body)
}

// checkReady returns a fresh enough result, joins the check in flight, or
// starts one; it gives up when ctx ends, leaving the check to finish on its
// own deadline.
func (s *Server) checkReady(ctx context.Context) readyResult {
	r := &s.ready
	r.mu.Lock()
	if r.running == nil && !r.at.IsZero() && time.Since(r.at) < readyFresh {
		res := r.last
		r.mu.Unlock()
		return res
	}
	done := r.running
	if done == nil {
		done = make(chan struct{})
		r.running = done
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
			defer cancel()
			res := s.probeReady(cctx)
			r.mu.Lock()
			r.last, r.at, r.running = res, time.Now(), nil
			r.mu.Unlock()
			close(done)
		}()
	}
	r.mu.Unlock()
	select {
	case <-done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.last
	case <-ctx.Done():
		return readyResult{details: map[string]any{"database": "did not answer within " + readyTimeout.String()}}
	}
}

func (s *Server) probeReady(ctx context.Context) readyResult {
	conn, err := s.cfg.Pool.Acquire(ctx)
	if err != nil {
		return readyResult{details: map[string]any{"database": "unreachable: " + err.Error()}}
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, sqlText("ready")); err != nil {
		return readyResult{details: map[string]any{"database": err.Error()}}
	}
	st, err := migrations.Check(ctx, conn.Conn())
	if err != nil {
		return readyResult{details: map[string]any{"database": "reachable",
			"schema": err.Error(), "schema_version": st.Current, "expected_version": st.Latest}}
	}
	return readyResult{ok: true, details: map[string]any{"database": "reachable", "schema_version": st.Current}}
}

// metrics serves the Prometheus registry, as configured: open, behind any
// API token, or off.
func (s *Server) metricsEndpoint(c echo.Context) error {
	switch s.cfg.MetricsAccess {
	case "off":
		return echo.NewHTTPError(http.StatusNotFound, "metrics are turned off (--metrics off)")
	case "token":
		if _, ok := principalFrom(c); !ok || bearer(c) == "" {
			return echo.NewHTTPError(http.StatusUnauthorized, "metrics need an API token (Authorization: Bearer)")
		}
	}
	s.metricsHandler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// auditHeadCollector exposes the audit chain's head sequence, read at
// each scrape (one indexed row, within a second), so an outside system can
// record how far the trail went and notice when it moves backwards.
type auditHeadCollector struct {
	pool *pgxpool.Pool
	desc *prometheus.Desc
}

func registerAuditHead(reg prometheus.Registerer, pool *pgxpool.Pool) error {
	if pool == nil {
		return nil
	}
	return reg.Register(&auditHeadCollector{pool: pool, desc: prometheus.NewDesc("console_audit_head_seq",
		"Sequence number of the newest audit event (the audit chain's head).", nil, nil)})
}

func (a *auditHeadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

func (a *auditHeadCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h, err := audit.HeadGet(ctx, a.pool)
	if err != nil {
		// Left out rather than failing the whole scrape; the pool and
		// readiness metrics say the database is in trouble.
		return
	}
	ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, float64(h.Seq))
}
