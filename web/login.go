package web

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

func (s *Server) loginForm(c echo.Context) error {
	if _, ok := principalFrom(c); ok {
		return c.Redirect(http.StatusSeeOther, cleanNext(c.QueryParam("next")))
	}
	return s.renderBare(c, http.StatusOK, "Sign in", views.LoginBody(views.LoginPage{
		Next: cleanNext(c.QueryParam("next")), CSRF: csrfToken(c), Notice: s.cfg.LoginNotice,
	}))
}

func (s *Server) login(c echo.Context) error {
	name, password := c.FormValue("name"), c.FormValue("password")
	next := cleanNext(c.FormValue("next"))
	form := views.LoginPage{Next: next, Name: name, CSRF: csrfToken(c), Notice: s.cfg.LoginNotice}
	key := c.RealIP() + "|" + name
	now := time.Now()
	if ok, wait := s.limiter.Allow(key, now); !ok {
		setRefusal(c, "too many failed sign-ins", "name", name)
		form.Error = fmt.Sprintf("Too many failed attempts. Wait %s and try again.", wait.Round(time.Second))
		return s.renderBare(c, http.StatusTooManyRequests, "Sign in", views.LoginBody(form))
	}
	p, err := auth.Authenticate(c.Request().Context(), s.cfg.Pool, name, password)
	if errors.Is(err, auth.ErrBadCredentials) {
		s.limiter.Fail(key, now)
		setRefusal(c, "wrong name or password", "name", name)
		form.Error = "Wrong name or password."
		return s.renderBare(c, http.StatusUnauthorized, "Sign in", views.LoginBody(form))
	}
	if err != nil {
		return err
	}
	s.limiter.Succeed(key)
	secret, err := auth.SessionCreate(c.Request().Context(), s.cfg.Pool, p.ID, s.cfg.SessionTTL)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: secret, Path: "/", HttpOnly: true,
		Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode, MaxAge: int(s.cfg.SessionTTL.Seconds())})
	s.log.Info("login", "actor", p.Name, "role", p.Role, "client", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) logout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if err := auth.SessionDelete(c.Request().Context(), s.cfg.Pool, ck.Value); err != nil {
			return err
		}
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, "/login")
}
