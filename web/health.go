package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/migrations"
)

// healthz answers while the process is up, whatever the database does.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "version": s.cfg.Version})
}

// readyz answers 200 only when the database is reachable and its schema is
// the one this binary expects.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	conn, err := s.cfg.Pool.Acquire(ctx)
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "unreachable: " + err.Error()})
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, sqlText("ready")); err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": err.Error()})
	}
	st, err := migrations.Check(ctx, conn.Conn())
	if err != nil {
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "reachable",
			"schema": err.Error(), "schema_version": st.Current, "expected_version": st.Latest})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ok", "database": "reachable", "schema_version": st.Current})
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
