package web

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgconsole/console/internal/auth"
)

// Session and API token lookups: every request of a signed-in browser reads
// its session, and every request of an API client its token, so a database
// that stalls would hang every page and every API call (or, with a plain
// timeout, sign everyone out). The lookup has its own short timeout, and
// what it found is kept in memory, keyed by a digest of the session or
// token secret (the secret itself is never kept):
//   - for sessionFresh the entry is used without asking the database, so a
//     session or token revoked, expired or disabled elsewhere (the command
//     line, another console) is refused within that time; signing out
//     through this console drops the entry at once;
//   - after that the database is asked again; when it does not answer within
//     sessionLookupTimeout, an entry it confirmed within sessionStaleLimit is
//     still used, so pages keep their frame and last data through a stall,
//     while every write needs the database anyway.
const (
	sessionLookupTimeout = time.Second
	sessionFresh         = 30 * time.Second
	sessionStaleLimit    = 10 * time.Minute
)

// sessionCache holds the sessions (or the API tokens) the database
// confirmed recently. It is safe for concurrent use.
type sessionCache struct {
	lookupFunc func(ctx context.Context, db auth.DBTX, secret string) (auth.Principal, error)

	mu      sync.Mutex
	entries map[[sha256.Size]byte]sessionEntry
}

type sessionEntry struct {
	p  auth.Principal
	at time.Time // when the database last confirmed it
}

// newSessionCache caches what lookup (auth.SessionLookup or
// auth.TokenLookup) answers.
func newSessionCache(lookup func(ctx context.Context, db auth.DBTX, secret string) (auth.Principal, error)) *sessionCache {
	return &sessionCache{lookupFunc: lookup, entries: map[[sha256.Size]byte]sessionEntry{}}
}

// lookup returns the principal behind secret: from the cache while fresh,
// else from the database (bounded by sessionLookupTimeout), else from a
// stale entry when the database did not answer. auth.ErrNoSession means the
// session or token is gone; any other error that the database could not say.
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
	p, err := sc.lookupFunc(lctx, db, secret)
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

// tokenUseEvery is how long after a token's use its last use is written:
// one statement then for every token used since, off the requests' path.
const tokenUseEvery = 30 * time.Second

// tokenUses batches the last use of API tokens (auth.TokenUsage); at most
// one write is scheduled at a time.
type tokenUses struct {
	usage     *auth.TokenUsage
	every     time.Duration // tokenUseEvery; a test shortens it
	scheduled atomic.Bool
}

// noteTokenUse records that the token id was used now and schedules the
// batch's write when none is scheduled.
func (s *Server) noteTokenUse(id int64) {
	s.tokenUses.usage.Note(id, time.Now())
	if s.tokenUses.scheduled.CompareAndSwap(false, true) {
		time.AfterFunc(s.tokenUses.every, s.flushTokenUses)
	}
}

// flushTokenUses writes the batch, best effort, within five seconds. On a
// standby the uses are dropped (nothing can be written there); a failed
// write keeps them for the batch the next token request schedules.
func (s *Server) flushTokenUses() {
	s.tokenUses.scheduled.Store(false)
	if s.readOnlyKnown() {
		s.tokenUses.usage.Discard()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.tokenUses.usage.Flush(ctx, s.cfg.Pool); err != nil {
		s.log.Warn("API tokens' last use not recorded; the next batch retries", "err", err)
	}
}
