package auth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// LoginLimit is one rule of a LoginLimiter: at most Burst attempts per key
// within Window.
type LoginLimit struct {
	Burst  int
	Window time.Duration
}

// LoginLimiter slows down password guessing. An attempt reserves a slot
// under every key it is tried under (the client address and the account)
// before the password is checked, so parallel attempts cannot all slip past
// a limit; a failed attempt keeps its slots until the window passes, a
// successful one gives them back. Keys are stored as SHA-256 digests, so a
// long key costs no more memory than a short one, and a timer forgets keys
// whose window has passed. At most MaxKeys keys are kept: when that many are
// live, new keys are refused until some expire (fail closed).
//
// It is per process, which is enough to make guessing impractical.
type LoginLimiter struct {
	// MaxKeys bounds memory; default 100000 (a few MB).
	MaxKeys int

	mu      sync.Mutex
	limits  map[string]LoginLimit
	entries map[[sha256.Size]byte]*limiterEntry
	timer   *time.Timer
}

type limiterEntry struct {
	window time.Duration
	burst  int
	// attempts are the times of the reserved attempts, oldest first.
	attempts []time.Time
}

// NewLoginLimiter returns a limiter with one rule per key kind ("addr",
// "account", ...). A key passed to Reserve names its kind.
func NewLoginLimiter(limits map[string]LoginLimit) *LoginLimiter {
	return &LoginLimiter{MaxKeys: 100000, limits: limits, entries: map[[sha256.Size]byte]*limiterEntry{}}
}

// LimiterKey is one key an attempt is counted under: its kind selects the
// rule, its value (an address, an account name) the counter.
type LimiterKey struct {
	Kind  string
	Value string
}

// Reservation is the slots one attempt took; give it back with Release when
// the attempt succeeded.
type Reservation struct {
	keys [][sha256.Size]byte
	at   time.Time
}

// Reserve takes one slot under every key for an attempt at now. When any
// key is at its limit nothing is taken, ok is false and wait is how long
// until the earliest slot of the fullest key frees up.
func (l *LoginLimiter) Reserve(now time.Time, keys ...LimiterKey) (r Reservation, ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	digests := make([][sha256.Size]byte, 0, len(keys))
	fresh := 0
	for _, k := range keys {
		rule, known := l.limits[k.Kind]
		if !known || rule.Burst <= 0 {
			continue
		}
		d := sha256.Sum256([]byte(k.Kind + "\x00" + k.Value))
		digests = append(digests, d)
		e := l.entries[d]
		if e == nil {
			fresh++
			continue
		}
		e.prune(now)
		if len(e.attempts) >= e.burst {
			if w := e.attempts[len(e.attempts)-e.burst].Add(e.window).Sub(now); w > wait {
				wait = w
			}
		}
	}
	if wait > 0 {
		return Reservation{}, false, wait
	}
	if fresh > 0 && len(l.entries)+fresh > l.MaxKeys {
		return Reservation{}, false, l.longestWindow()
	}
	for i, d := range digests {
		e := l.entries[d]
		if e == nil {
			rule := l.limits[keys[i].Kind]
			e = &limiterEntry{window: rule.Window, burst: rule.Burst}
			l.entries[d] = e
		}
		e.attempts = append(e.attempts, now)
	}
	l.armSweep()
	return Reservation{keys: digests, at: now}, true, 0
}

// Release gives back the slots of a successful attempt.
func (l *LoginLimiter) Release(r Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range r.keys {
		e := l.entries[d]
		if e == nil {
			continue
		}
		for i, at := range e.attempts {
			if at.Equal(r.at) {
				e.attempts = append(e.attempts[:i], e.attempts[i+1:]...)
				break
			}
		}
		if len(e.attempts) == 0 {
			delete(l.entries, d)
		}
	}
}

// Forget clears every slot of key (a successful sign-in clears its
// account's earlier failures).
func (l *LoginLimiter) Forget(key LimiterKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.entries, sha256.Sum256([]byte(key.Kind+"\x00"+key.Value)))
}

// Len is the number of keys held.
func (l *LoginLimiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Sweep forgets every key whose attempts are all older than its window. The
// limiter's own timer calls it; it is exported for tests and callers that
// want memory back at once.
func (l *LoginLimiter) Sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
}

func (l *LoginLimiter) sweep(now time.Time) {
	for d, e := range l.entries {
		e.prune(now)
		if len(e.attempts) == 0 {
			delete(l.entries, d)
		}
	}
}

// armSweep starts the sweep timer when keys are held and none is pending.
// The timer re-arms itself while keys remain, so an idle limiter holds no
// timer and no goroutine.
func (l *LoginLimiter) armSweep() {
	if l.timer != nil || len(l.entries) == 0 {
		return
	}
	l.timer = time.AfterFunc(l.shortestWindow(), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.timer = nil
		l.sweep(time.Now())
		l.armSweep()
	})
}

func (l *LoginLimiter) shortestWindow() time.Duration {
	var w time.Duration
	for _, r := range l.limits {
		if r.Window > 0 && (w == 0 || r.Window < w) {
			w = r.Window
		}
	}
	if w == 0 {
		w = time.Minute
	}
	return w
}

func (l *LoginLimiter) longestWindow() time.Duration {
	var w time.Duration
	for _, r := range l.limits {
		w = max(w, r.Window)
	}
	return w
}

func (e *limiterEntry) prune(now time.Time) {
	i := 0
	for i < len(e.attempts) && now.Sub(e.attempts[i]) >= e.window {
		i++
	}
	e.attempts = e.attempts[i:]
}
