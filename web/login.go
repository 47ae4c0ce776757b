package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// Sign-in limits: failed attempts per client address and per account. An
// attempt holds its slot while its password is checked, so parallel
// attempts count too; a success gives its slot back and clears the
// account's failures.
var loginLimits = map[string]auth.LoginLimit{
	"addr":    {Burst: 10, Window: time.Minute},
	"account": {Burst: 5, Window: time.Minute},
}

func (s *Server) loginForm(c echo.Context) error {
	if _, ok := principalFrom(c); ok {
		return c.Redirect(http.StatusSeeOther, cleanNext(c.QueryParam("next")))
	}
	notice := s.cfg.LoginNotice
	if ro := s.readOnly(c.Request().Context()); ro != "" {
		notice = loginReadOnly(ro)
	}
	return s.renderBare(c, http.StatusOK, "Sign in", views.LoginBody(views.LoginPage{
		Next: cleanNext(c.QueryParam("next")), CSRF: csrfToken(c), Notice: notice,
	}))
}

// loginReadOnly is what the sign-in page says on a standby: a password
// sign-in stores a session, which a standby cannot, so it is refused; a
// session started on the primary (its row is replicated) and API tokens
// keep working.
func loginReadOnly(sentence string) string {
	return sentence + ". Signing in stores a session, which a standby cannot: sign in on a console attached to the primary " +
		"(sessions started there work here too), or use an API token."
}

func (s *Server) login(c echo.Context) error {
	name, password := c.FormValue("name"), c.FormValue("password")
	// The name as shown, logged and counted: never longer than any real
	// account name (a longer one cannot match and is refused as wrong).
	shown := clip(name, auth.MaxNameLength)
	next := cleanNext(c.FormValue("next"))
	form := views.LoginPage{Next: next, Name: shown, CSRF: csrfToken(c), Notice: s.cfg.LoginNotice}
	if ro := s.readOnly(c.Request().Context()); ro != "" {
		setRefusal(c, "sign-in on a standby", "name", shown)
		form.Error = loginReadOnly(ro)
		return s.renderBare(c, http.StatusConflict, "Sign in", views.LoginBody(form))
	}
	account := auth.LimiterKey{Kind: "account", Value: shown}
	res, ok, wait := s.limiter.Reserve(s.limiterNow(), auth.LimiterKey{Kind: "addr", Value: c.RealIP()}, account)
	if !ok {
		setRefusal(c, "too many failed sign-ins", "name", shown)
		form.Error = fmt.Sprintf("Too many failed attempts. Wait %s and try again.", wait.Round(time.Second))
		return s.renderBare(c, http.StatusTooManyRequests, "Sign in", views.LoginBody(form))
	}
	var p auth.Principal
	var err error
	if possibleAccountName(name) {
		p, err = auth.Authenticate(c.Request().Context(), s.cfg.Pool, name, password)
	} else {
		err = auth.ErrBadCredentials
	}
	if errors.Is(err, auth.ErrBadCredentials) {
		setRefusal(c, "wrong name or password", "name", shown)
		form.Error = "Wrong name or password."
		return s.renderBare(c, http.StatusUnauthorized, "Sign in", views.LoginBody(form))
	}
	s.limiter.Release(res)
	if err != nil {
		return err
	}
	s.limiter.Forget(account)
	secret, err := auth.SessionCreate(c.Request().Context(), s.cfg.Pool, p.ID, s.cfg.SessionTTL)
	if err != nil {
		return err
	}
	if ck, err := c.Cookie(sessionCookieName(s.secureCookies(c.Request()))); err == nil && len(ck.Value) <= 64 {
		// A session the browser still carried ends here, so a planted
		// cookie cannot outlive the sign-in.
		if err := auth.SessionDelete(c.Request().Context(), s.cfg.Pool, ck.Value); err != nil {
			return err
		}
		s.sessions.forget(ck.Value)
	}
	s.setCookie(c, "console_session", secret, int(s.cfg.SessionTTL.Seconds()))
	s.rotatePreSession(c)
	s.log.Info("login", "actor", p.Name, "role", p.Role, "client", c.RealIP())
	return c.Redirect(http.StatusSeeOther, next)
}

// logout ends the session. On a standby its row cannot be deleted: the
// browser's cookie is dropped, and the session expires as it would.
func (s *Server) logout(c echo.Context) error {
	if secret, ok := c.Get(sessionSecretKey).(string); ok {
		if s.readOnly(c.Request().Context()) == "" {
			if err := auth.SessionDelete(c.Request().Context(), s.cfg.Pool, secret); err != nil {
				return err
			}
		}
		s.sessions.forget(secret)
	}
	s.setCookie(c, "console_session", "", -1)
	s.rotatePreSession(c)
	return c.Redirect(http.StatusSeeOther, "/login")
}

// possibleAccountName reports whether some account could have name: the
// database keeps names as text, which holds neither NUL nor invalid UTF-8,
// so such a name is wrong without asking it (asking would fail).
func possibleAccountName(name string) bool {
	return utf8.ValidString(name) && !strings.ContainsRune(name, 0)
}
