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
	b, ctype, err := assetContent(c.Param("name"))
	if err != nil {
		return errNotFound
	}
	if c.Param("hash") != "_" {
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	return c.Blob(http.StatusOK, ctype, b)
}

// assetContent returns the embedded file name and its content type; names
// with a folder or a leading dot are not found.
func assetContent(name string) ([]byte, string, error) {
	if strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
		return nil, "", fs.ErrNotExist
	}
	b, err := static.Content(name)
	if err != nil {
		return nil, "", err
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = http.DetectContentType(b)
	}
	return b, ctype, nil
}
