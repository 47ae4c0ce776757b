package web

import (
	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/views"
)

func (s *Server) overview(c echo.Context) error {
	info := s.databaseInfo(c.Request().Context())
	m := views.Overview{Server: info.server, Role: info.role, Database: s.cfg.Database}
	return s.render(c, page{Title: "Overview", Nav: "overview", Model: m, Body: views.OverviewBody(m)})
}
