package web

import (
	"github.com/labstack/echo/v4/middleware"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// routes lists every route the console serves, with the role each needs.
// Nothing but /healthz, /readyz, /login and the static assets is served
// without signing in; /metrics follows Config.MetricsAccess.
func (s *Server) routes() {
	e := s.e
	e.Pre(middleware.RemoveTrailingSlash())
	e.Use(requestID(), s.observe, middleware.Recover(), securityHeaders, s.authenticate, s.csrf)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metricsEndpoint)
	e.GET("/static/:hash/:name", s.asset)
	e.GET("/login", s.loginForm)
	e.POST("/login", s.login)
	e.POST("/logout", s.logout)

	viewer := e.Group("", requireRole(auth.RoleViewer))
	viewer.GET("/", s.overview)
}

// navEntry is one link of the left navigation, with the role that may see it.
type navEntry struct {
	group, key, label, href, role string
}

// navigation is the left menu, grouped as DESIGN.md section 10 lays it out.
// Only pages that exist are listed.
var navigation = []navEntry{
	{"Overview", "overview", "Overview", "/", auth.RoleViewer},
}

func navFor(active, role string) []views.NavGroup {
	var groups []views.NavGroup
	for _, n := range navigation {
		if auth.RoleRank(role) < auth.RoleRank(n.role) {
			continue
		}
		if len(groups) == 0 || groups[len(groups)-1].Title != n.group {
			groups = append(groups, views.NavGroup{Title: n.group})
		}
		g := &groups[len(groups)-1]
		g.Items = append(g.Items, views.NavItem{Label: n.label, Href: n.href, Active: n.key == active})
	}
	return groups
}
