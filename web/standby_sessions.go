package web

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/pgconsole/console/internal/auth"
)

// standbySessions are sign-ins made while the console is attached to a
// standby, which cannot store a session row. They live in this process
// only: each names its operator and ends at its expiry, at sign-out or when
// the process stops, and is checked against the operator's row (a read)
// like any cached session, so disabling the operator on the primary ends
// it within the session cache's lifetime. At most maxStandbySessions are
// held; the oldest goes first.
type standbySessions struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]standbySession
}

type standbySession struct {
	name    string
	expires time.Time
}

// maxStandbySessions bounds the sign-ins a standby's console holds.
const maxStandbySessions = 1000

// add records a sign-in of name under secret until expires.
func (ss *standbySessions) add(secret, name string, expires time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.entries == nil {
		ss.entries = map[[sha256.Size]byte]standbySession{}
	}
	if len(ss.entries) >= maxStandbySessions {
		var oldest [sha256.Size]byte
		first := true
		for k, e := range ss.entries {
			if first || e.expires.Before(ss.entries[oldest].expires) {
				oldest, first = k, false
			}
		}
		delete(ss.entries, oldest)
	}
	ss.entries[sha256.Sum256([]byte(secret))] = standbySession{name: name, expires: expires}
}

// name returns the operator a live standby sign-in names.
func (ss *standbySessions) name(secret string, now time.Time) (string, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	key := sha256.Sum256([]byte(secret))
	e, ok := ss.entries[key]
	if ok && !now.Before(e.expires) {
		delete(ss.entries, key)
		return "", false
	}
	return e.name, ok
}

// forget ends a standby sign-in (sign-out).
func (ss *standbySessions) forget(secret string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.entries, sha256.Sum256([]byte(secret)))
}

// lookupSession is the session cache's lookup: a sign-in made on a standby
// is checked against its operator's row; any other against its session
// row.
func (s *Server) lookupSession(ctx context.Context, db auth.DBTX, secret string) (auth.Principal, error) {
	if name, ok := s.standbySessions.name(secret, time.Now()); ok {
		return auth.OperatorActive(ctx, db, name)
	}
	return auth.SessionLookup(ctx, db, secret)
}
