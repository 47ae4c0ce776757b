package diagnostics

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// lockWatcher asks pg_blocking_pids who the statements of a pool's
// sessions wait for while they run, so a lock timeout can say "locked by
// pid N". One watcher serves every statement running at once: each poll is
// one statement for all of them, so ten panels stuck behind a migration's
// lock cost the server what one does, never more than the statements it
// watches.
//
// A statement is first asked about a quarter of the lock timeout after it
// started, then ever less often (the wait doubles up to maxWatchInterval).
// Asking a statement early costs nothing when a poll runs anyway (it is
// the same statement), so statements share polls: a new statement's first
// turn moves up to a poll already due in the second half of its first
// wait, a poll asks every statement whose turn is within half the wait
// before it (or watchSlack), and the statements asked together go on on
// one schedule, at the pace of the one asked most often. Statements that
// start apart (viewers refreshing at different moments, a busy machine
// spreading starts) so fall into step within a poll or two. No statement
// is asked later than its own schedule says. The watcher's goroutine runs
// only while something is watched.
type lockWatcher struct {
	pool *pgxpool.Pool
	cost *costLedger

	mu      sync.Mutex
	watched map[*watchedStatement]struct{}
	wake    chan struct{} // signalled when a statement is added
	running bool
}

// watchedStatement is one statement a lockWatcher watches.
type watchedStatement struct {
	pid      int32
	next     time.Time     // when it is asked about next
	wait     time.Duration // the wait that ends at next
	interval time.Duration // the wait after that
	last     []int32       // the last non-empty answer
}

// watchSlack is the least a poll may ask a statement ahead of its turn.
const watchSlack = 25 * time.Millisecond

func newLockWatcher(pool *pgxpool.Pool, cost *costLedger) *lockWatcher {
	return &lockWatcher{pool: pool, cost: cost, watched: map[*watchedStatement]struct{}{}, wake: make(chan struct{}, 1)}
}

// watch starts watching the statement backend pid runs now; pass what it
// returns to done when the statement ends. The first poll comes after
// delay (or the watched statements' next poll, when that comes after half
// of delay), then every interval, doubling.
func (w *lockWatcher) watch(pid uint32, delay, interval time.Duration) *watchedStatement {
	now := time.Now()
	s := &watchedStatement{pid: int32(pid), next: now.Add(delay), wait: delay, interval: interval}
	w.mu.Lock()
	for o := range w.watched {
		if o.next.Before(s.next) && o.next.Sub(now) >= delay/2 {
			s.next, s.wait = o.next, o.next.Sub(now)
		}
	}
	w.watched[s] = struct{}{}
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.loop()
	} else {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return s
}

// done stops watching s and returns the last non-empty answer about it
// (nil when none).
func (w *lockWatcher) done(s *watchedStatement) []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watched, s)
	return s.last
}

// loop polls while statements are watched, and ends when none is left.
func (w *lockWatcher) loop() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		w.mu.Lock()
		if len(w.watched) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		var first time.Time
		for s := range w.watched {
			if first.IsZero() || s.next.Before(first) {
				first = s.next
			}
		}
		w.mu.Unlock()
		if wait := time.Until(first); wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-w.wake:
				t.Stop() // nothing stale is received after Stop (Go 1.23 timers)
				continue
			}
		}
		w.poll()
	}
}

// poll asks, in one statement, who each statement whose turn has come or
// is near waits for, and schedules its next turn.
func (w *lockWatcher) poll() {
	now := time.Now()
	w.mu.Lock()
	var due []*watchedStatement
	var pids []int32
	for s := range w.watched {
		if s.next.Sub(now) <= max(watchSlack, s.wait/2) {
			due = append(due, s)
			pids = append(pids, s.pid)
		}
	}
	// The statements asked together go on together, at the pace of the
	// one asked most often: none is asked later than its own schedule.
	every := maxWatchInterval
	for _, s := range due {
		every = min(every, s.interval)
	}
	for _, s := range due {
		s.next, s.wait = now.Add(every), every
		s.interval = min(2*every, maxWatchInterval)
	}
	w.mu.Unlock()
	if len(due) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), watchQueryTimeout)
	defer cancel()
	start := time.Now()
	rows, err := w.pool.Query(ctx, "SELECT p, pg_blocking_pids(p) FROM unnest($1::int4[]) AS p", pids)
	answers := map[int32][]int32{}
	if err == nil {
		for rows.Next() {
			var pid int32
			var blockers []int32
			if rows.Scan(&pid, &blockers) == nil && len(blockers) > 0 {
				answers[pid] = blockers
			}
		}
		rows.Close()
	}
	w.cost.add(lockWatcherCost, time.Since(start))
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range due {
		if b, ok := answers[s.pid]; ok {
			s.last = b
		}
	}
}
