package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
)

// dbProbeTimeout is how long the database has to answer a ping before the
// console calls it not answering; dbProbeFresh is how long one ping's answer
// is shared, so every tab's polling costs one ping a second at most.
const (
	dbProbeTimeout = time.Second
	dbProbeFresh   = time.Second
)

// errDatabaseNotAnswering is returned by requests that need the database
// while it does not answer a ping: they fail at once, with a message that
// says nothing was changed, rather than hang.
var errDatabaseNotAnswering = errors.New("the database is not answering")

// dbWatch knows whether the console's database answers: one shared ping
// (at most one a second, each bounded by dbProbeTimeout), and since when it
// has not answered. Pages read it without waiting to show the banner and to
// skip lookups that would only wait; panels, writes and the status endpoint
// ask for a fresh answer.
type dbWatch struct {
	pings *diagnostics.Cache[struct{}]

	mu        sync.Mutex
	downSince time.Time // start of the first failed ping of this outage; zero while the database answers
	checked   time.Time // when the last ping ended
}

// dbDownTrusted is how long down believes the last failed ping: pages poll
// the database status every few seconds while it is down, so an older
// answer means nobody has asked since, and the database may be back.
const dbDownTrusted = 10 * time.Second

func newDBWatch(pool *pgxpool.Pool) *dbWatch {
	w := &dbWatch{}
	w.pings = diagnostics.NewCache(func(ctx context.Context) (struct{}, error) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctx, dbProbeTimeout)
		defer cancel()
		err := pool.Ping(ctx)
		w.record(start, err)
		return struct{}{}, err
	}, diagnostics.CacheConfig{MaxAge: dbProbeFresh, ErrorMaxAge: dbProbeFresh})
	return w
}

// record notes a ping's outcome: a success ends the outage, the first
// failure starts it at the time that ping was sent.
func (w *dbWatch) record(start time.Time, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checked = time.Now()
	switch {
	case err == nil:
		w.downSince = time.Time{}
	case w.downSince.IsZero():
		w.downSince = start
	}
}

// check returns nil when the database answered a ping within the last
// dbProbeFresh, pinging it when no answer is that fresh; otherwise
// errDatabaseNotAnswering, within dbProbeTimeout and a little. A caller that
// gives up on a ping still in flight starts the outage then.
func (w *dbWatch) check(ctx context.Context) error {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, dbProbeTimeout+100*time.Millisecond)
	defer cancel()
	if _, err := w.pings.Get(wctx, 0); err != nil {
		if ctx.Err() == nil {
			w.record(start, err)
		}
		return fmt.Errorf("%w: %w", errDatabaseNotAnswering, err)
	}
	return nil
}

// down reports, without waiting, since when the database has not answered,
// as far as a ping of the last dbDownTrusted knows.
func (w *dbWatch) down() (since time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.downSince.IsZero() || time.Since(w.checked) > dbDownTrusted {
		return time.Time{}, false
	}
	return w.downSince, true
}

// notAnsweringFor says how long the database has not answered: "for 12 s",
// or nothing before the first second.
func notAnsweringFor(since, now time.Time) string {
	d := now.Sub(since)
	if d < time.Second {
		return ""
	}
	return " for " + humanize.Seconds(d.Truncate(time.Second).Seconds())
}

// dbStatus is the answer of GET /status/database.
type dbStatus struct {
	Answering bool   `json:"answering"`
	Since     string `json:"since,omitempty"` // RFC 3339, when it stopped answering
	Seconds   int64  `json:"seconds,omitempty"`
	Message   string `json:"message,omitempty"`
}

// databaseStatus serves GET /status/database, which the pages poll to show
// or clear the "database not answering" banner: one shared ping, answered
// within a second and a little whatever the database does.
func (s *Server) databaseStatus(c echo.Context) error {
	err := s.db.check(c.Request().Context())
	since, down := s.db.down()
	if err == nil || !down {
		return c.JSON(http.StatusOK, dbStatus{Answering: true})
	}
	now := time.Now()
	return c.JSON(http.StatusOK, dbStatus{Since: since.UTC().Format(time.RFC3339), Seconds: int64(now.Sub(since).Seconds()),
		Message: "Database not answering" + notAnsweringFor(since, now)})
}

// needsDatabase fails a request that cannot be served without the database
// at once while it does not answer, instead of letting it wait: every write
// (sign-in and sign-out included: they read and change sessions) and the
// pages that read the database, with a 503 that says so. The overview, the
// runbook, the panels and the status endpoint are exempt: they show the
// frame and say what is missing themselves. A write while the database is
// a standby is refused with 409 (refuseOnStandby).
func (s *Server) needsDatabase(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if read {
			switch c.Path() {
			case "/", "/runbook", "/runbook/:slug", "/panels/:name", "/status/database":
				return next(c)
			}
		}
		if err := s.db.check(r.Context()); err != nil {
			return echo.NewHTTPError(http.StatusServiceUnavailable, s.notAnsweringMessage(!read)).SetInternal(err)
		}
		if err := s.refuseOnStandby(c); err != nil {
			return err
		}
		return next(c)
	}
}

// notAnsweringMessage is what a request refused by needsDatabase tells the
// operator.
func (s *Server) notAnsweringMessage(write bool) string {
	how := ""
	if since, down := s.db.down(); down {
		how = notAnsweringFor(since, time.Now())
	}
	if write {
		return "The database is not answering" + how + ", so nothing was changed. Try again once it answers; the banner at the top of the page goes away when it does."
	}
	return "The database is not answering" + how + ", and this page reads from it. The overview and runbook keep their last data and retry; reload this page once the banner at the top goes away."
}
