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

// loginReadOnly is what the sign-in page says on a standby: the standby
// cannot store a session, so a sign-in here lasts for this console process
// only; a session started on the primary (its row is replicated) and API
// tokens work as anywhere.
func loginReadOnly(sentence string) string {
	return sentence + ". A standby cannot store sessions: a sign-in here lasts until this console stops " +
		"(sessions started on the primary's console work here too)."
}

func (s *Server) login(c echo.Context) error {
	name, password := c.FormValue("name"), c.FormValue("password")
	// The name as shown, logged and counted: never longer than any real
	// account name (a longer one cannot match and is refused as wrong).
	shown := clip(name, auth.MaxNameLength)
	next := cleanNext(c.FormValue("next"))
	form := views.LoginPage{Next: next, Name: shown, CSRF: csrfToken(c), Notice: s.cfg.LoginNotice}
	ro := s.readOnly(c.Request().Context())
	standby := ro != ""
	if standby {
		form.Notice = loginReadOnly(ro)
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
	switch {
	case !possibleAccountName(name):
		err = auth.ErrBadCredentials
	case standby:
		p, err = auth.CheckPassword(c.Request().Context(), s.cfg.Pool, name, password)
	default:
		p, err = auth.Authenticate(c.Request().Context(), s.cfg.Pool, name, password)
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
	secret, err := s.startSession(c, p, standby)
	if err != nil {
		return err
	}
	s.setCookie(c, "console_session", secret, int(s.cfg.SessionTTL.Seconds()))
	s.rotatePreSession(c)
	s.log.Info("login", "actor", p.Name, "role", p.Role, "client", c.RealIP(), "standby", standby)
	return c.Redirect(http.StatusSeeOther, next)
}

// startSession starts p's session and returns its secret, ending the one
// the browser still carried, so a planted cookie cannot outlive the
// sign-in. On a standby the session lives in this process only
// (standbySessions): the database cannot store it.
func (s *Server) startSession(c echo.Context, p auth.Principal, standby bool) (string, error) {
	ctx := c.Request().Context()
	old := ""
	if ck, err := c.Cookie(sessionCookieName(s.secureCookies(c.Request()))); err == nil && len(ck.Value) <= 64 {
		old = ck.Value
	}
	if standby {
		secret := auth.NewSecret()
		s.standbySessions.add(secret, p.Name, time.Now().Add(s.cfg.SessionTTL))
		if old != "" {
			s.standbySessions.forget(old)
			s.sessions.forget(old)
		}
		return secret, nil
	}
	secret, err := auth.SessionCreate(ctx, s.cfg.Pool, p.ID, s.cfg.SessionTTL)
	if err != nil {
		return "", err
	}
	if old != "" {
		if err := auth.SessionDelete(ctx, s.cfg.Pool, old); err != nil {
			return "", err
		}
		s.standbySessions.forget(old)
		s.sessions.forget(old)
	}
	return secret, nil
}

// logout ends the session. On a standby a session row cannot be deleted:
// the browser's cookie is dropped, and a session started on the primary
// expires as it would (a sign-in made on the standby ends at once).
func (s *Server) logout(c echo.Context) error {
	if secret, ok := c.Get(sessionSecretKey).(string); ok {
		if s.readOnly(c.Request().Context()) == "" {
			if err := auth.SessionDelete(c.Request().Context(), s.cfg.Pool, secret); err != nil {
				return err
			}
		}
		s.standbySessions.forget(secret)
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
