package auth

import (
	"sync"
	"time"
)

// LoginLimiter slows down password guessing: after Burst failures for the
// same key (client address and name) within Window, further attempts are
// refused until the window passes. It is per process, which is enough to make
// guessing impractical; a success clears the key.
type LoginLimiter struct {
	Burst  int
	Window time.Duration

	mu       sync.Mutex
	failures map[string][]time.Time
}

// NewLoginLimiter returns a limiter allowing burst failures per window.
func NewLoginLimiter(burst int, window time.Duration) *LoginLimiter {
	return &LoginLimiter{Burst: burst, Window: window, failures: map[string][]time.Time{}}
}

// Allow reports whether key may try now, and if not, how long to wait.
func (l *LoginLimiter) Allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	recent := l.prune(key, now)
	if len(recent) < l.Burst {
		return true, 0
	}
	return false, recent[0].Add(l.Window).Sub(now)
}

// Fail records a failed attempt.
func (l *LoginLimiter) Fail(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures[key] = append(l.prune(key, now), now)
	if len(l.failures) > 10000 { // bound memory under a spray of names
		for k := range l.failures {
			delete(l.failures, k)
			break
		}
	}
}

// Succeed clears the key.
func (l *LoginLimiter) Succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, key)
}

func (l *LoginLimiter) prune(key string, now time.Time) []time.Time {
	ts := l.failures[key]
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= l.Window {
		i++
	}
	ts = ts[i:]
	if len(ts) == 0 {
		delete(l.failures, key)
	} else {
		l.failures[key] = ts
	}
	return ts
}
