package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	"github.com/pgconsole/console/internal/auth"
)

// Session lookups: every request of a signed-in browser reads its session,
// so a database that stalls would hang every page (or, with a plain
// timeout, sign everyone out). The lookup has its own short timeout, and
// what it found is kept in memory, keyed by a digest of the session secret
// (the secret itself is never kept):
//   - for sessionFresh the entry is used without asking the database, so a
//     session revoked, expired or disabled elsewhere (the command line,
//     another console) is refused within that time; signing out through this
//     console drops the entry at once;
//   - after that the database is asked again; when it does not answer within
//     sessionLookupTimeout, an entry it confirmed within sessionStaleLimit is
//     still used, so pages keep their frame and last data through a stall,
//     while every write needs the database anyway.
const (
	sessionLookupTimeout = time.Second
	sessionFresh         = 30 * time.Second
	sessionStaleLimit    = 10 * time.Minute
)

// sessionCache holds the sessions the database confirmed recently. It is
// safe for concurrent use.
type sessionCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]sessionEntry
}

type sessionEntry struct {
	p  auth.Principal
	at time.Time // when the database last confirmed it
}

func newSessionCache() *sessionCache {
	return &sessionCache{entries: map[[sha256.Size]byte]sessionEntry{}}
}

// lookup returns the operator behind secret: from the cache while fresh,
// else from the database (bounded by sessionLookupTimeout), else from a
// stale entry when the database did not answer. auth.ErrNoSession means the
// session is gone; any other error that the database could not say.
//
// dbDown says the database is already known not to answer: a stale entry
// is then used without waiting for the lookup to time out again.
func (sc *sessionCache) lookup(ctx context.Context, db auth.DBTX, secret string, now time.Time, dbDown bool) (auth.Principal, error) {
	key := sha256.Sum256([]byte(secret))
	sc.mu.Lock()
	e, ok := sc.entries[key]
	if ok && now.Sub(e.at) >= sessionStaleLimit {
		delete(sc.entries, key)
		ok = false
	}
	sc.mu.Unlock()
	if ok && (dbDown || now.Sub(e.at) < sessionFresh) {
		return e.p, nil
	}
	lctx, cancel := context.WithTimeout(ctx, sessionLookupTimeout)
	defer cancel()
	p, err := auth.SessionLookup(lctx, db, secret)
	switch {
	case err == nil:
		sc.mu.Lock()
		sc.entries[key] = sessionEntry{p: p, at: now}
		sc.sweep(now)
		sc.mu.Unlock()
		return p, nil
	case errors.Is(err, auth.ErrNoSession):
		sc.forget(secret)
		return auth.Principal{}, err
	case ok && ctx.Err() == nil:
		return e.p, nil
	}
	return auth.Principal{}, err
}

// forget drops secret's entry: at sign-out, and when a sign-in replaces
// the session a browser carried.
func (sc *sessionCache) forget(secret string) {
	key := sha256.Sum256([]byte(secret))
	sc.mu.Lock()
	delete(sc.entries, key)
	sc.mu.Unlock()
}

// sweep drops entries past sessionStaleLimit once the cache has grown, so
// it never holds more than the sessions of the last few minutes. The
// caller holds sc.mu.
func (sc *sessionCache) sweep(now time.Time) {
	if len(sc.entries) < 1024 {
		return
	}
	for k, e := range sc.entries {
		if now.Sub(e.at) >= sessionStaleLimit {
			delete(sc.entries, k)
		}
	}
}
