package diagnostics

import (
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MetricChecks names the checks whose rows a metrics exporter serves (the
// catalog's metrics entries), in catalog order: when one fails in a round,
// KeepLastGood serves its last good rows.
func MetricChecks() []string {
	var out []string
	for _, c := range checks {
		if c.metrics {
			out = append(out, c.Name)
		}
	}
	return out
}

// KeepLastGood returns next with every section of a MetricChecks check that
// failed in next replaced by its value in prev, so a timed-out check serves
// its last good values.
func KeepLastGood(prev, next Round) Round {
	for _, c := range checks {
		if c.metrics && next.Failed(c.Name) {
			c.round.keep(prev, &next)
		}
	}
	if next.WALRate == nil {
		next.WALRate = prev.WALRate
	}
	return next
}

// Failed reports whether check could not run in r (or the whole round could
// not start).
func (r Round) Failed(check string) bool {
	for _, u := range r.Unavailable {
		name, _, _ := strings.Cut(u.Check, " ")
		if name == check || name == CheckServerInfo || name == "connect" {
			return true
		}
	}
	return false
}

// IsQueueTable reports whether table (in schema public) is a table of the
// queue engine: a fixed set, so labels and panels built from it stay
// bounded.
func IsQueueTable(table string) bool { return queueTables[table] }

// PoolStat reads the statistics of the diagnostics pool (no I/O), for a
// metrics exporter; the pool itself stays private, so every statement on it
// runs read-only and bounded.
func (d *Diagnostics) PoolStat() *pgxpool.Stat { return d.pool.Stat() }
