package diagnostics

import (
	"context"
	"sort"
	"time"
)

// DeadlockStat is one database's deadlock counter (deadlocks.sql).
type DeadlockStat struct {
	Database   string     `db:"database" json:"database"`
	Deadlocks  int64      `db:"deadlocks" json:"deadlocks"`
	StatsReset *time.Time `db:"stats_reset" json:"stats_reset"`
	// LogLockWaits and DeadlockTimeout are the server's settings: with
	// log_lock_waits on, a wait longer than deadlock_timeout is logged
	// before the deadlock is resolved.
	LogLockWaits    bool   `db:"log_lock_waits" json:"log_lock_waits"`
	DeadlockTimeout string `db:"deadlock_timeout" json:"deadlock_timeout"`
}

// Deadlocks reads each database's deadlock counter, most first
// (deadlocks.sql).
func Deadlocks(ctx context.Context, db DBTX) ([]DeadlockStat, error) {
	return collect[DeadlockStat](ctx, db, CheckDeadlocks, 0)
}

// Deadlocks runs deadlocks.sql as a panel.
func (d *Diagnostics) Deadlocks(ctx context.Context) Result[DeadlockStat] {
	return panel(ctx, d, CheckDeadlocks, many(Deadlocks))
}

// DeadlockWindow is the deadlocks counted between two rounds: From and To
// are the rounds' times, ByDatabase the increase of each database that
// counted any, most first.
type DeadlockWindow struct {
	From, To   time.Time
	Total      int64
	ByDatabase []DeadlockStat
	// LogLockWaits and DeadlockTimeout are the settings read at To.
	LogLockWaits    bool
	DeadlockTimeout string
}

// deadlockWindow records the counters read at now and returns what they
// counted since the start of the window, or nil on the first read and
// after a database's counter went back (a stats reset or a restart).
func (d *Diagnostics) deadlockWindow(now time.Time, rows []DeadlockStat, span time.Duration) *DeadlockWindow {
	cur := make(map[string]int64, len(rows))
	for _, r := range rows {
		cur[r.Database] = r.Deadlocks
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	from, ok := d.deadlocks.advance(now, cur, span, func(a, b map[string]int64) bool {
		for db, n := range b {
			if n < a[db] {
				return true
			}
		}
		return false
	})
	if !ok {
		return nil
	}
	w := &DeadlockWindow{From: from.at, To: now}
	for _, r := range rows {
		if n := r.Deadlocks - from.v[r.Database]; n > 0 {
			w.Total += n
			w.ByDatabase = append(w.ByDatabase, DeadlockStat{Database: r.Database, Deadlocks: n})
		}
	}
	sort.SliceStable(w.ByDatabase, func(i, j int) bool { return w.ByDatabase[i].Deadlocks > w.ByDatabase[j].Deadlocks })
	if len(rows) > 0 {
		w.LogLockWaits, w.DeadlockTimeout = rows[0].LogLockWaits, rows[0].DeadlockTimeout
	}
	return w
}
