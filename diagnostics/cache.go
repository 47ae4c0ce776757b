package diagnostics

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// CacheConfig configures NewCache. Zero values are defaults.
type CacheConfig struct {
	// MaxAge is how old a result may be and still be served; default 3s.
	MaxAge time.Duration
	// ErrorMaxAge is how long a failed load is served before the next Get
	// loads again; default a second, and never more than MaxAge, so an
	// outage's error clears soon after the database answers again.
	ErrorMaxAge time.Duration
	// NowFunc is the clock ages are measured with; nil means time.Now.
	// Tests inject one to age results without sleeping.
	NowFunc func() time.Time
}

func (c CacheConfig) withDefaults() CacheConfig {
	orDefault(&c.MaxAge, 3*time.Second)
	orDefault(&c.ErrorMaxAge, time.Second)
	c.ErrorMaxAge = min(c.ErrorMaxAge, c.MaxAge)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	return c
}

// Cache shares one read among every caller that wants it within a few
// seconds, so a page that each on-call engineer keeps open (and htmx polls)
// costs one read per MaxAge, not one per tab: at most one load runs at a
// time, callers that arrive while it runs wait for it, and its result is
// served until it is older than MaxAge (ErrorMaxAge when the load failed).
// Diagnostics caches its findings rounds (LatestRound) and ServerInfo with
// it; the web layer caches lookups that every page makes.
//
// A Cache is safe for concurrent use.
type Cache[T any] struct {
	load func(context.Context) (T, error)
	cfg  CacheConfig

	mu      sync.Mutex
	gen     uint64     // bumped by Invalidate
	last    *flight[T] // newest finished load of generation gen; nil when none
	good    *flight[T] // newest of those that succeeded; nil when none
	running *flight[T] // the load in progress; nil when none
}

// flight is one load: its result is set before done is closed.
type flight[T any] struct {
	done chan struct{}
	gen  uint64
	at   time.Time // when the load started: the result's age counts from here
	val  T
	err  error
}

// NewCache returns a Cache whose results come from load. load runs detached
// from the callers' contexts (a caller that gives up must not cancel the
// read the others wait for), so it must bound itself with a timeout.
func NewCache[T any](load func(context.Context) (T, error), cfg CacheConfig) *Cache[T] {
	return &Cache[T]{load: load, cfg: cfg.withDefaults()}
}

// Get returns what the newest load returned, value and error alike, when it
// is younger than maxAge (zero means CacheConfig.MaxAge; a failed load is
// younger than ErrorMaxAge too), and otherwise loads again. A caller that
// finds a load running waits for it and takes its result.
//
// ctx bounds only the wait: when it ends first, Get returns ctx.Err() and
// the load goes on, filling the cache for the next caller.
func (c *Cache[T]) Get(ctx context.Context, maxAge time.Duration) (T, error) {
	if maxAge <= 0 {
		maxAge = c.cfg.MaxAge
	}
	c.mu.Lock()
	for {
		if f := c.last; f != nil && c.fresh(f, maxAge) {
			c.mu.Unlock()
			return f.val, f.err
		}
		f := c.running
		if f == nil {
			f = c.start(ctx)
		}
		// A load that started before Invalidate is not served to callers
		// that came after it: they wait for it to end and load anew.
		join := f.gen == c.gen
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
		if join {
			return f.val, f.err
		}
		c.mu.Lock()
	}
}

// fresh reports whether f may be served to a caller accepting maxAge. The
// caller holds c.mu.
func (c *Cache[T]) fresh(f *flight[T], maxAge time.Duration) bool {
	if f.err != nil {
		maxAge = min(maxAge, c.cfg.ErrorMaxAge)
	}
	return c.cfg.NowFunc().Sub(f.at) < maxAge
}

// start begins a load in its own goroutine. The caller holds c.mu.
func (c *Cache[T]) start(ctx context.Context) *flight[T] {
	f := &flight[T]{done: make(chan struct{}), gen: c.gen, at: c.cfg.NowFunc()}
	c.running = f
	go func() {
		val, err := c.run(context.WithoutCancel(ctx))
		c.mu.Lock()
		f.val, f.err = val, err
		if c.running == f {
			c.running = nil
		}
		if f.gen == c.gen {
			c.last = f
			if err == nil {
				c.good = f
			}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// run calls load, turning a panic into the load's error: the load runs in
// a goroutine of its own, where a panic would end the process.
func (c *Cache[T]) run(ctx context.Context) (val T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cached load panicked: %v", r)
		}
	}()
	return c.load(ctx)
}

// Stale returns what the newest load returned, whatever its age, and when
// that is older than maxAge (zero means CacheConfig.MaxAge) starts a new
// load in the background for the next caller, unless one runs. Only when
// nothing was ever loaded does it wait, as Get does: for reads too costly
// to make a caller wait for each time (the catalog-wide checks).
func (c *Cache[T]) Stale(ctx context.Context, maxAge time.Duration) (T, error) {
	if maxAge <= 0 {
		maxAge = c.cfg.MaxAge
	}
	c.mu.Lock()
	f := c.last
	if f == nil {
		c.mu.Unlock()
		return c.Get(ctx, maxAge)
	}
	if !c.fresh(f, maxAge) && c.running == nil {
		c.start(ctx)
	}
	c.mu.Unlock()
	return f.val, f.err
}

// Last returns the newest value a load returned without error, whatever its
// age, and whether there is one. It never loads or waits, for callers that
// only need a hint (the server version that picks a query's text).
func (c *Cache[T]) Last() (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.good == nil {
		var zero T
		return zero, false
	}
	return c.good.val, true
}

// Invalidate drops the cached result, so the next Get loads again: call it
// after a change the cached read must show at once (an operator who opened
// an incident sees it on the next page). Last has nothing until the next
// load succeeds. A load already running is not served to callers that
// arrive after Invalidate.
func (c *Cache[T]) Invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.last, c.good = nil, nil
}
