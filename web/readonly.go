package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
)

// Read-only mode: attached to a standby (on purpose, or because a DNS name
// followed a failover to the wrong side), the console serves every page and
// the standby-side evidence, and refuses what would write (actions,
// incidents, schedules, alert notifications) before it starts, with 409 and
// one sentence that says so; a password sign-in is held by this process
// (standbySessions). Whether the database is a
// standby comes from Diagnostics.ServerInfo, which serve re-reads every
// few seconds, so the console leaves read-only mode by itself once the
// standby is promoted.
type readOnlyState struct {
	mu        sync.Mutex
	on        bool
	primary   string    // where the primary is, "host:port"; empty when the standby does not say
	primaryAt time.Time // when primary was last looked up
}

// primaryRecheck is how long a standby that did not say where its primary
// is goes before the console asks again.
const primaryRecheck = 30 * time.Second

// readOnlyCode is the stable code of a read-only refusal in the JSON API's
// error answer ("code": "read_only").
const readOnlyCode = "read_only"

// readOnlyRefusal is a write refused because the database is a standby; its
// message is the sentence the banner shows.
type readOnlyRefusal struct{ msg string }

func (e readOnlyRefusal) Error() string { return e.msg }

// readOnlySentence is what the banner and every refusal say.
func readOnlySentence(primary string) string {
	if primary == "" {
		return "Read-only: connected to a standby; actions are off"
	}
	return "Read-only: connected to a standby of " + primary + "; actions are off"
}

// isReadOnlyError reports whether err says the database refused a write
// because it is read-only: a refusal of this package or the Runner's, or
// SQLSTATE 25006 from a write that raced a demotion.
func isReadOnlyError(err error) bool {
	var ro readOnlyRefusal
	var pgErr *pgconn.PgError
	return errors.As(err, &ro) || errors.Is(err, actions.ErrReadOnly) ||
		(errors.As(err, &pgErr) && pgErr.Code == "25006")
}

// readOnly returns the read-only sentence while the database is a standby,
// "" otherwise. It waits at most half a second for ServerInfo (cached); when
// that fails it keeps the last answer. Entering and leaving read-only mode
// is logged once each.
func (s *Server) readOnly(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	info, err := s.cfg.Diagnostics.ServerInfo(ctx)
	st := &s.readOnlyState
	st.mu.Lock()
	defer st.mu.Unlock()
	if err == nil && info.InRecovery != st.on {
		st.on = info.InRecovery
		if st.on {
			st.primary, st.primaryAt = s.primaryOf(ctx), time.Now()
			s.log.Info("read-only mode: the database is a standby; actions, incidents and schedule changes are off until it is promoted",
				"primary", st.primary)
		} else {
			st.primary = ""
			s.log.Info("read-only mode left: the database accepts writes (promoted); actions are on again")
		}
	}
	if !st.on {
		return ""
	}
	if st.primary == "" && time.Since(st.primaryAt) >= primaryRecheck {
		st.primary, st.primaryAt = s.primaryOf(ctx), time.Now()
	}
	return readOnlySentence(st.primary)
}

// readOnlyKnown is readOnly without asking: whether the last answer said
// standby.
func (s *Server) readOnlyKnown() bool {
	s.readOnlyState.mu.Lock()
	defer s.readOnlyState.mu.Unlock()
	return s.readOnlyState.on
}

// primaryOf says where a standby's primary is: the WAL receiver's sender
// (visible to a role with pg_read_all_stats), else the host of
// primary_conninfo (readable with pg_read_all_settings), else "".
func (s *Server) primaryOf(ctx context.Context) string {
	st, err := diagnostics.StandbyStatus(ctx, s.cfg.Pool)
	if err == nil && st.SenderHost != "" {
		return hostPort(st.SenderHost, fmt.Sprint(st.SenderPort))
	}
	var conninfo string
	if err := s.cfg.Pool.QueryRow(ctx, sqlText("primary_conninfo")).Scan(&conninfo); err != nil {
		return ""
	}
	return conninfoHost(conninfo)
}

// conninfoHost is "host:port" of a libpq connection string, keyword=value
// or URI; "" when it names no host.
func conninfoHost(conninfo string) string {
	conninfo = strings.TrimSpace(conninfo)
	if strings.HasPrefix(conninfo, "postgres://") || strings.HasPrefix(conninfo, "postgresql://") {
		u, err := url.Parse(conninfo)
		if err != nil {
			return ""
		}
		return u.Host
	}
	var host, port string
	for _, kv := range strings.Fields(conninfo) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "host", "hostaddr":
			if host == "" || k == "host" {
				host = v
			}
		case "port":
			port = v
		}
	}
	if host == "" {
		return ""
	}
	return hostPort(host, port)
}

func hostPort(host, port string) string {
	if port == "" || port == "0" {
		return host
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// readOnlyWrites are the writes served on a standby: a preview is a dry
// run, sign-in explains itself (loginReadOnly), and signing out only
// drops the cookie.
var readOnlyWrites = map[string]bool{
	"/login":                 true,
	"/logout":                true,
	"/actions/:name/preview": true,
}

// refuseOnStandby refuses, before it starts, a request that would write
// while the database is a standby: 409 with the read-only sentence.
func (s *Server) refuseOnStandby(c echo.Context) error {
	r := c.Request()
	if r.Method == http.MethodGet || r.Method == http.MethodHead || readOnlyWrites[c.Path()] {
		return nil
	}
	if msg := s.readOnly(r.Context()); msg != "" {
		return readOnlyRefusal{msg: msg}
	}
	return nil
}
