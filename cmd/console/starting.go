package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/web"
)

// startGate answers HTTP requests from the moment serve listens: with the
// starting page (what serve waits on, and why) until open hands every
// request to the console itself.
type startGate struct {
	handler atomic.Pointer[http.Handler]
	mu      sync.Mutex
	state   web.StartingState
}

// newStartGate returns a gate that shows the starting page. The page is
// served to anyone who reaches the console before anyone can sign in, so
// it never names the database's address or user: the console's own output
// has those.
func newStartGate(version string) *startGate {
	g := &startGate{state: web.StartingState{Step: "starting"}}
	h := web.Starting(web.StartingConfig{Version: version, StateFunc: g.current})
	g.handler.Store(&h)
	return g
}

func (g *startGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*g.handler.Load()).ServeHTTP(w, r)
}

// open hands every request from now on to h.
func (g *startGate) open(h http.Handler) { g.handler.Store(&h) }

// step says what serve does now, and forgets the last refusal.
func (g *startGate) step(what string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state = web.StartingState{Step: what}
}

// refused records a failed try of the current step: why, what to do, and
// when the next try is (st's Reason, Hint, HintSQL and Next).
func (g *startGate) refused(st web.StartingState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state.Attempts == 0 {
		g.state.Since = time.Now()
	}
	g.state.Attempts++
	g.state.Reason, g.state.Hint, g.state.HintSQL, g.state.Next = st.Reason, st.Hint, st.HintSQL, st.Next
}

func (g *startGate) current() web.StartingState {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state
}

// connectWait bounds the waits between tries of connectPatiently: doubled
// after each refusal, from the first to the last.
var connectWait = [2]time.Duration{time.Second, 15 * time.Second}

// connectPatiently opens the console's pool, trying again for as long as ctx
// lasts while the database refuses for a reason that passes: every
// connection slot taken (the very incident "connections near max"
// describes), the server starting up or shutting down, or not reachable.
// A console started during such an incident comes up when the database
// lets it in, and meanwhile the gate's page says why it waits. A refusal
// that does not pass by itself (a wrong password, a missing database)
// fails at once. Each new reason is printed once to stdout.
func connectPatiently(ctx context.Context, raw, appName string, maxConns int32, own *ownpid.Set, pooler poolerConfig, gate *startGate, stdout io.Writer) (*pgxpool.Pool, error) {
	wait := connectWait[0]
	said := ""
	for {
		pool, err := openPool(ctx, raw, appName, maxConns, own, pooler)
		if err == nil || !refusalPasses(err) || ctx.Err() != nil {
			return pool, err
		}
		reason, hint, hintSQL := refusalWords(err)
		gate.refused(web.StartingState{Reason: reason, Hint: hint, HintSQL: hintSQL, Next: time.Now().Add(wait)})
		if reason != said {
			fmt.Fprintf(stdout, "waiting for the database: %s; trying again every %s at most (the console's page says so meanwhile)\n",
				err, connectWait[1])
			said = reason
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, connectWait[1])
	}
}

// refusalPasses reports whether a failed connect is worth trying again:
// the server is full, starting, stopping or unreachable; not a refused
// login, a missing database or a host name that does not resolve.
func refusalPasses(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "08000", "08001", "08003", "08006", // connection exceptions; not 08P01, a protocol the server refuses (a pooler's "unsupported startup parameter")
			"57P03", "57P01": // cannot connect now (starting up), admin shutdown
			return true
		}
		return pgErr.Code[:2] == "53" // insufficient resources: 53300 too many connections
	}
	var netErr net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// refusalWords says a refusal for the starting page, what to do about it,
// and a statement that helps.
func refusalWords(err error) (reason, hint, hintSQL string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53300" {
		return "The database refuses connections: " + pgErr.Message + " (SQLSTATE 53300).",
			"Every connection slot this role may use is taken. End the idle connections of the application that holds " +
				"most (a superuser can see them with the statement below), or give the console's role reserved slots " +
				"(PostgreSQL 16 and later: set reserved_connections; `console roles sql` grants pg_use_reserved_connections). " +
				"Once in, the console keeps its diagnostics connections open, so a later storm does not lock it out.",
			"SELECT application_name, client_addr, state, count(*)\nFROM pg_stat_activity\nGROUP BY 1, 2, 3\nORDER BY 4 DESC;"
	}
	if errors.As(err, &pgErr) && pgErr.Code == "57P03" {
		return "The database does not accept connections yet: " + pgErr.Message + ".",
			"The console connects as soon as the server accepts connections.", ""
	}
	return "The database does not answer (the connection was refused, reset or timed out); the console's output says where it tries.",
		"The console connects as soon as the database answers; check that PostgreSQL runs there " +
			"and that the network lets the console through.", ""
}
