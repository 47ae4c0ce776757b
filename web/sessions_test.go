package web

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// The session cache answers from memory while an entry is fresh, asks the
// database after that, and falls back on a confirmed entry only when the
// database cannot say (here: a closed pool), for at most sessionStaleLimit.
func TestSessionCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	id, err := auth.OperatorAdd(ctx, pool, "alice", auth.RoleOperator, testPassword)
	require.NoError(t, err)
	secret, err := auth.SessionCreate(ctx, pool, id, time.Hour)
	require.NoError(t, err)
	down := testdb.Pool(t, url)
	down.Close() // a real pool whose every query fails

	sc := newSessionCache(auth.SessionLookup)
	now := time.Now()
	p, err := sc.lookup(ctx, pool, secret, now, false)
	require.NoError(t, err)
	require.Equal(t, "alice", p.Name)

	t.Run("FreshEntryNeedsNoDatabase", func(t *testing.T) {
		p, err := sc.lookup(ctx, down, secret, now.Add(sessionFresh-time.Second), false)
		require.NoError(t, err)
		require.Equal(t, "alice", p.Name)
	})
	t.Run("StaleEntryWhileTheDatabaseFails", func(t *testing.T) {
		p, err := sc.lookup(ctx, down, secret, now.Add(sessionFresh+time.Second), false)
		require.NoError(t, err, "a session the database confirmed a minute ago survives a stall")
		require.Equal(t, "alice", p.Name)
		p, err = sc.lookup(ctx, down, secret, now.Add(2*sessionFresh), true)
		require.NoError(t, err, "known down: the entry is used without waiting")
		require.Equal(t, "alice", p.Name)
	})
	t.Run("TooOldEntryIsNotTrusted", func(t *testing.T) {
		_, err := sc.lookup(ctx, down, secret, now.Add(sessionStaleLimit+time.Second), true)
		require.Error(t, err)
		require.NotErrorIs(t, err, auth.ErrNoSession, "the database could not say; the session is not known to be gone")
	})
	t.Run("UnknownSessionWhileTheDatabaseFails", func(t *testing.T) {
		_, err := sc.lookup(ctx, down, auth.NewSecret(), now, false)
		require.Error(t, err)
		require.NotErrorIs(t, err, auth.ErrNoSession)
	})
	t.Run("DeletedSessionIsRefusedOnceStale", func(t *testing.T) {
		sc := newSessionCache(auth.SessionLookup)
		secret, err := auth.SessionCreate(ctx, pool, id, time.Hour)
		require.NoError(t, err)
		_, err = sc.lookup(ctx, pool, secret, now, false)
		require.NoError(t, err)
		require.NoError(t, auth.SessionDelete(ctx, pool, secret))
		_, err = sc.lookup(ctx, pool, secret, now.Add(sessionFresh+time.Second), false)
		require.ErrorIs(t, err, auth.ErrNoSession, "after the fresh window the database decides")
		_, err = sc.lookup(ctx, down, secret, now.Add(sessionFresh+2*time.Second), true)
		require.Error(t, err, "the refusal dropped the entry: a stall does not bring it back")
	})
}

// Signing out ends the session at once, although session lookups are
// cached: the old cookie is refused on the very next request.
func TestLogoutDropsCachedSession(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, auth.RoleOperator)
	resp, _ := c.get("/runbook")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	base, err := url.Parse(e.http.URL)
	require.NoError(t, err)
	old := c.hc.Jar.Cookies(base)

	resp, _ = c.post("/logout", url.Values{"_csrf": {c.csrf}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	c.hc.Jar.SetCookies(base, old) // a copy of the cookie kept from before

	resp, _ = c.get("/runbook")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "the signed-out session must not be served from the cache")
	require.Contains(t, resp.Header.Get("Location"), "/login")
}

// The watch says since when the database has not answered, and forgets it
// at the first answer.
func TestDBWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	closed := testdb.Pool(t, url)
	closed.Close()

	w := newDBWatch(closed)
	before := time.Now()
	require.ErrorIs(t, w.check(ctx), errDatabaseNotAnswering)
	since, down := w.down()
	require.True(t, down)
	require.False(t, since.Before(before.Add(-time.Second)))
	require.ErrorIs(t, w.check(ctx), errDatabaseNotAnswering)
	again, _ := w.down()
	require.Equal(t, since, again, "the outage keeps the time it started")

	ok := newDBWatch(testdb.Pool(t, url))
	ok.record(before, closed.Ping(ctx)) // an outage, then the database answers
	_, down = ok.down()
	require.True(t, down)
	require.NoError(t, ok.check(ctx))
	_, down = ok.down()
	require.False(t, down)
}
