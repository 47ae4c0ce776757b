package findings

import (
	"fmt"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
)

// deadlockFindings: Deadlocks or more deadlocks within the window. Each
// canceled one of its transactions (the application saw SQLSTATE 40P01),
// and only the server log names the statements, so the evidence says how
// to find them there.
func deadlockFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	w := r.Deadlocks
	if w == nil || t.Deadlocks <= 0 || w.Total < t.Deadlocks {
		return nil
	}
	span := w.To.Sub(w.From).Round(time.Second)
	var dbs []string
	byDB := map[string]int64{}
	for _, s := range w.ByDatabase {
		dbs = append(dbs, fmt.Sprintf("%s %d", s.Database, s.Deadlocks))
		byDB[s.Database] = s.Deadlocks
	}
	logging := fmt.Sprintf("log_lock_waits is on, so waits longer than deadlock_timeout (%s) are logged with the lock and both processes' statements", w.DeadlockTimeout)
	if !w.LogLockWaits {
		logging = fmt.Sprintf("log_lock_waits is off: turn it on (ALTER SYSTEM SET log_lock_waits = on; SELECT pg_reload_conf()) to log every wait longer than deadlock_timeout (%s) with the statements holding and waiting", w.DeadlockTimeout)
	}
	return []Finding{{Severity: SeverityWarning,
		Title: fmt.Sprintf("%d %s in the last %s", w.Total, plural(int(w.Total), "deadlock", "deadlocks"), span),
		Subject: map[string]any{"deadlocks": w.Total, "window_seconds": span.Seconds(), "databases": byDB,
			"log_lock_waits": w.LogLockWaits, "deadlock_timeout": w.DeadlockTimeout},
		Evidence: fmt.Sprintf("%s: pg_stat_database.deadlocks rose by %d between %s and %s (%s); each one canceled a transaction with SQLSTATE 40P01. The server log's \"deadlock detected\" entries name the two statements and the locks they waited for; %s",
			diagnostics.CheckDeadlocks, w.Total, w.From.UTC().Format(time.RFC3339), w.To.UTC().Format(time.RFC3339), strings.Join(dbs, ", "), logging)}}
}
