package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// badRequest is an input error the operator can fix: it becomes a 400 with
// the message on the page.
type badRequest struct{ msg string }

func (e badRequest) Error() string { return e.msg }

// errBadRequest builds a badRequest with a formatted message.
func errBadRequest(format string, args ...any) error {
	return badRequest{msg: fmt.Sprintf(format, args...)}
}

// errNotFound is returned by handlers for a missing page or object.
var errNotFound = errors.New("not found")

// statusOf decides the HTTP status of an error, in one place. Domain packages
// export sentinel errors; they are mapped here as they are added.
func statusOf(err error) (int, string) {
	var he *echo.HTTPError
	var br badRequest
	var ro readOnlyRefusal
	switch {
	case errors.As(err, &ro):
		return http.StatusConflict, ro.msg
	case isReadOnlyError(err):
		return http.StatusConflict, readOnlySentence("")
	case errors.As(err, &he):
		return he.Code, fmt.Sprint(he.Message)
	case errors.As(err, &br):
		return http.StatusBadRequest, br.msg
	case errors.Is(err, errNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, auth.ErrNoSession):
		return http.StatusUnauthorized, "sign in first"
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, actions.ErrForbidden):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, actions.ErrReasonRequired), errors.Is(err, actions.ErrInvalid):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.Is(err, actions.ErrGuard):
		return http.StatusConflict, err.Error()
	case errors.Is(err, actions.ErrNotFound), errors.Is(err, queues.ErrNotFound), errors.Is(err, audit.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, audit.ErrInvalid):
		return http.StatusUnprocessableEntity, err.Error()
	case errors.Is(err, errDatabaseNotAnswering):
		return http.StatusServiceUnavailable, "the database is not answering; nothing was changed. Try again once it answers"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "the database did not answer in time; the page's panels load separately, try them again"
	}
	return http.StatusInternalServerError, "internal error"
}

// handleError is echo's error handler: 5xx are logged with the request id;
// 4xx are shown to the user (observe logs the refusals among them). HTML,
// htmx fragment or JSON, as the request asks.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := ""
	if isReadOnlyError(err) {
		// A write that raced a demotion says where the primary is too.
		code = readOnlyCode
		if msg := s.readOnly(c.Request().Context()); msg != "" {
			err = readOnlyRefusal{msg: msg}
		}
	}
	status, msg := statusOf(err)
	reqID := requestIDOf(c)
	if status >= 500 {
		s.log.Error("request failed", "request_id", reqID, "method", clip(c.Request().Method, maxLoggedMethod),
			"path", clip(c.Request().URL.Path, maxLoggedPath), "err", err)
	} else if refusedStatus(status) {
		setRefusal(c, msg) // observe logs the refusal with the status the client gets
	}

	// Anonymous browsers go to the sign-in page instead of seeing a 401.
	if status == http.StatusUnauthorized && c.Request().Method == http.MethodGet && !wantsJSON(c) && !isHTMX(c) &&
		c.Request().Header.Get(echo.HeaderAuthorization) == "" {
		_ = c.Redirect(http.StatusSeeOther, "/login?next="+safeNext(c.Request().URL.RequestURI()))
		return
	}
	if status == http.StatusUnauthorized && isHTMX(c) {
		c.Response().Header().Set("HX-Redirect", "/login")
	}
	if wantsJSON(c) || strings.HasPrefix(c.Path(), "/api/") || c.Request().Method == http.MethodHead {
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		body := map[string]any{"error": msg, "status": status, "request_id": reqID}
		if code != "" {
			body["code"] = code
		}
		_ = c.JSON(status, body)
		return
	}
	body := views.ErrorPage{Status: status, Title: http.StatusText(status), Message: msg, Hint: hintFor(status)}
	if status >= 500 {
		body.RequestID = reqID
	}
	var rerr error
	if _, ok := principalFrom(c); ok {
		rerr = s.render(c, page{Title: body.Title, Model: body, Body: views.ErrorBody(body), Status: status})
	} else {
		rerr = s.renderBare(c, status, body.Title, views.ErrorBody(body))
	}
	if rerr != nil {
		s.log.Error("render error page", "request_id", reqID, "err", rerr)
		_ = c.String(status, msg)
	}
}

func hintFor(status int) string {
	switch status {
	case http.StatusNotFound:
		return "Check the address, or go back to the overview."
	case http.StatusForbidden:
		return "Your role does not allow this. Ask an admin, or use an account with the operator role."
	case http.StatusBadRequest:
		return "Correct the input and try again; nothing was changed."
	case http.StatusTooManyRequests:
		return "Wait a minute before trying again."
	}
	if status >= 500 {
		return "Nothing was changed by this request. Try again; if it keeps failing, the console's log has the cause."
	}
	return ""
}
