package diagnostics

import (
	"maps"
	"sync"
	"time"
)

// CheckCost is what the console has asked of the database for one check
// since it started: statements sent and the wall time they took.
type CheckCost struct {
	Statements int64
	Seconds    float64
}

// costLedger counts, by check, every statement the diagnostics connections
// send (findings rounds, panels, the sampler, the lock watcher's polls), so
// operators can see on /metrics what the console itself costs their
// database.
type costLedger struct {
	mu sync.Mutex
	by map[string]CheckCost
}

// add counts one statement of check that took took.
func (l *costLedger) add(check string, took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[string]CheckCost{}
	}
	c := l.by[check]
	c.Statements++
	c.Seconds += took.Seconds()
	l.by[check] = c
}

// Cost returns what the console's diagnostics have cost the database so
// far, by check ("lock_watcher" for the lock watcher's polls).
func (d *Diagnostics) Cost() map[string]CheckCost {
	d.cost.mu.Lock()
	defer d.cost.mu.Unlock()
	return maps.Clone(d.cost.by)
}

// lockWatcherCost is the ledger's name for the lock watcher's polls.
const lockWatcherCost = "lock_watcher"
