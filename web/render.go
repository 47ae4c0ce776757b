package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/static"
	"github.com/pgconsole/console/views"
)

// page is what a handler hands to render: the view model (also the JSON
// answer) and the component that shows it.
type page struct {
	Title  string
	Nav    string // the navigation entry to highlight
	Model  any
	Body   templ.Component
	Status int // default 200
	// Travel, when set, shows the time picker: the page honours ?at=,
	// ?window= and ?from=&to=.
	Travel *travel
}

// render is the one way a page reaches the client. For `Accept:
// application/json` it writes the view model as JSON; for an htmx request it
// writes only the body fragment; otherwise the full page with the layout.
// Output is buffered, so a failed render becomes a clean error response
// instead of half a page.
func (s *Server) render(c echo.Context, p page) error {
	status := p.Status
	if status == 0 {
		status = http.StatusOK
	}
	if wantsJSON(c) {
		return c.JSON(status, p.Model)
	}
	var comp templ.Component
	if isHTMX(c) {
		comp = p.Body
	} else {
		ch := s.chrome(c, p.Title, p.Nav)
		if p.Travel != nil {
			bar := timeBar(c.Request().URL.Path, *p.Travel)
			ch.Time = &bar
		}
		comp = views.Page(ch, p.Body)
	}
	return s.writeComponent(c, status, comp)
}

// renderBare renders a page without navigation (sign-in).
func (s *Server) renderBare(c echo.Context, status int, title string, body templ.Component) error {
	return s.writeComponent(c, status, views.Bare(s.chrome(c, title, ""), body))
}

func (s *Server) writeComponent(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

func wantsJSON(c echo.Context) bool {
	accept := c.Request().Header.Get(echo.HeaderAccept)
	return strings.Contains(accept, echo.MIMEApplicationJSON) && !strings.Contains(accept, echo.MIMETextHTML)
}

func isHTMX(c echo.Context) bool {
	h := c.Request().Header
	return h.Get("HX-Request") == "true" && h.Get("HX-Boosted") != "true" && h.Get("HX-History-Restore-Request") != "true"
}

// chrome fills the frame every page shares.
func (s *Server) chrome(c echo.Context, title, active string) views.Chrome {
	ch := views.Chrome{
		Title:    title,
		Database: s.cfg.Database,
		Version:  s.cfg.Version,
		Now:      time.Now().UTC().Format(time.RFC3339),
		CSRF:     csrfToken(c),
		CSS:      static.Path("app.css"),
		JS:       static.Path("app.js"),
		HTMX:     static.Path(static.HTMX),
		Favicon:  static.Path("favicon.svg"),
		Theme:    themeFrom(c.Request()),
	}
	if p, ok := principalFrom(c); ok {
		ch.User, ch.UserRole = p.Name, p.Role
		ch.Nav = navFor(active, p.Role)
		// While the database does not answer, the frame is drawn from
		// what is known, with the banner, instead of waiting for it.
		if since, down := s.db.down(); down {
			ch.DBDown = "Database not answering" + notAnsweringFor(since, time.Now())
			ch.DBDownSince = since.UTC().Format(time.RFC3339)
		} else {
			info := s.databaseInfo(c.Request().Context())
			ch.DBServer, ch.DBRole = info.server, info.role
			if ch.ReadOnly = s.readOnly(c.Request().Context()); ch.ReadOnly != "" {
				ch.DBRole = "standby, read-only"
			}
			ch.Incident = s.incidentPill(c.Request().Context())
		}
	}
	return ch
}

// incidentPillWait bounds how long a page waits for the open-incident
// lookup (cached for openIncidentMaxAge); a database that does not answer
// in time costs the page the pill, never its load.
const incidentPillWait = 300 * time.Millisecond

// incidentPill is the top bar's link to the open incident, or nil when
// there is none or the database cannot say.
func (s *Server) incidentPill(ctx context.Context) *views.IncidentPill {
	ctx, cancel := context.WithTimeout(ctx, incidentPillWait)
	defer cancel()
	inc := s.openIncident(ctx)
	if inc == nil {
		return nil
	}
	return incidentPillView(*inc, time.Now())
}

// incidentPillView maps an open incident to its pill: number and title,
// and how long ago its window started.
func incidentPillView(inc audit.Incident, now time.Time) *views.IncidentPill {
	return &views.IncidentPill{
		Title:  fmt.Sprintf("Incident #%d: %s", inc.ID, inc.Title),
		Href:   fmt.Sprintf("/incidents/%d", inc.ID),
		Opened: age(inc.WindowStart, now),
	}
}
