package web

import (
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/static"
)

// asset serves /static/{hash}/{name}. The hash in the path changes with the
// content, so responses are immutable and cached for a year.
func (s *Server) asset(c echo.Context) error {
	name := c.Param("name")
	if strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return errNotFound
	}
	b, err := fs.ReadFile(static.FS(), name)
	if err != nil {
		return errNotFound
	}
	h := c.Response().Header()
	if c.Param("hash") != "_" {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = http.DetectContentType(b)
	}
	return c.Blob(http.StatusOK, ctype, b)
}
