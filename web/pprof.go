package web

import (
	"net/http"
	"net/http/pprof"

	"github.com/labstack/echo/v4"
)

// pprofPage serves net/http/pprof under /debug/pprof (admins only, see
// routes): the index, cmdline, profile, symbol, trace and every named
// profile (heap, goroutine, block, mutex, allocs, threadcreate).
func (s *Server) pprofPage(c echo.Context) error {
	if c.Request().URL.Path == "/debug/pprof" {
		// The index links to its profiles relatively.
		return c.Redirect(http.StatusFound, "/debug/pprof/")
	}
	switch c.Param("*") {
	case "cmdline":
		return echo.WrapHandler(http.HandlerFunc(pprof.Cmdline))(c)
	case "profile":
		return echo.WrapHandler(http.HandlerFunc(pprof.Profile))(c)
	case "symbol":
		return echo.WrapHandler(http.HandlerFunc(pprof.Symbol))(c)
	case "trace":
		return echo.WrapHandler(http.HandlerFunc(pprof.Trace))(c)
	default:
		return echo.WrapHandler(http.HandlerFunc(pprof.Index))(c)
	}
}

// pprofIndexPath keeps the trailing slash of /debug/pprof/, whose index
// page links to its profiles relatively.
func pprofIndexPath(c echo.Context) bool { return c.Request().URL.Path == "/debug/pprof/" }
