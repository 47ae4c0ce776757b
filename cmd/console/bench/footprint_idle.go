package bench

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/diagnostics"
)

// idleShare is one check's share of what an idle console costs the
// database.
type idleShare struct {
	Check string
	// MsPerSecond is the check's DB time per second: what it cost in the
	// window per second of window, or for a check on the slow clock, one
	// read's cost divided by the clock's interval.
	MsPerSecond float64
	// Slow says the check is on the slow clock.
	Slow bool
}

// idleCost is what an idle console costs the database per second on
// average: the fast work of the window (every statement of a check not on
// the slow clock, the lock watcher's polls included) per second of window,
// plus each slow-clock check's cost of one read (slowRead, by check)
// divided by the slow clock's interval. A slow-clock read that fell inside
// the window is left out of the window's sum, so each statement is counted
// once. window is the console's cost ledger over the window (the
// difference of two Diagnostics.Cost). The shares come costliest first.
func idleCost(window map[string]diagnostics.CheckCost, length time.Duration, slowRead map[string]time.Duration, interval time.Duration) (total float64, by []idleShare) {
	for name, c := range window {
		if _, slow := slowRead[name]; slow || c.Seconds <= 0 {
			continue
		}
		by = append(by, idleShare{Check: name, MsPerSecond: c.Seconds * 1000 / length.Seconds()})
	}
	for name, took := range slowRead {
		if took > 0 {
			by = append(by, idleShare{Check: name, MsPerSecond: ms(took) / interval.Seconds(), Slow: true})
		}
	}
	slices.SortFunc(by, func(a, b idleShare) int {
		return cmp.Or(cmp.Compare(b.MsPerSecond, a.MsPerSecond), cmp.Compare(a.Check, b.Check))
	})
	for _, s := range by {
		total += s.MsPerSecond
	}
	return total, by
}

// costDelta is the ledger's cost of each check between before and after
// (two Diagnostics.Cost); checks that sent nothing are left out.
func costDelta(before, after map[string]diagnostics.CheckCost) map[string]diagnostics.CheckCost {
	out := map[string]diagnostics.CheckCost{}
	for name, c := range after {
		d := diagnostics.CheckCost{Statements: c.Statements - before[name].Statements, Seconds: c.Seconds - before[name].Seconds}
		if d.Statements > 0 {
			out[name] = d
		}
	}
	return out
}

// statementTime is pg_stat_statements' account of one statement.
type statementTime struct {
	Query string
	Calls int64
	Ms    float64
}

// statementTimes reads pg_stat_statements' account of this database's
// statements, by queryid (its own reads of the view left out); false when
// the view cannot be read.
func statementTimes(ctx context.Context, pool *pgxpool.Pool) (map[int64]statementTime, bool) {
	rows, err := pool.Query(ctx, `SELECT queryid, query, calls, total_exec_time
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND queryid IS NOT NULL AND query NOT LIKE '%pg_stat_statements%'`)
	if err != nil {
		return nil, false
	}
	out := map[int64]statementTime{}
	for rows.Next() {
		var id int64
		var st statementTime
		if rows.Scan(&id, &st.Query, &st.Calls, &st.Ms) == nil {
			out[id] = st
		}
	}
	return out, rows.Err() == nil
}

// withStatementTimes runs window with pg_stat_statements readable in the
// database (creating the extension when the server loads it and the
// database lacks it: footprint's database is a scratch one, dropped at the
// end), and returns the server's account of each statement over the
// window; false when the server does not load it.
func withStatementTimes(ctx context.Context, pool *pgxpool.Pool, window func()) (map[int64]statementTime, bool) {
	var had bool
	_ = pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')").Scan(&had)
	if !had {
		if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			window()
			return nil, false
		}
	}
	before, ok := statementTimes(ctx, pool)
	window()
	after, ok2 := statementTimes(ctx, pool)
	if !ok || !ok2 {
		return nil, false
	}
	out := map[int64]statementTime{}
	for id, a := range after {
		b := before[id]
		if a.Calls > b.Calls {
			out[id] = statementTime{Query: a.Query, Calls: a.Calls - b.Calls, Ms: a.Ms - b.Ms}
		}
	}
	return out, true
}

// statementLabel names a statement by its file's header ("-- BlockingTree:
// ..." is BlockingTree), or by its first words.
func statementLabel(query string) string {
	q := strings.TrimSpace(query)
	if rest, ok := strings.CutPrefix(q, "-- "); ok {
		if name, _, ok := strings.Cut(rest, ":"); ok && !strings.ContainsAny(name, " \n") {
			return name
		}
	}
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 60 {
		q = q[:60] + "..."
	}
	return q
}

// serverShares groups the window's statements by label: the server's
// execution time in ms per second of window and the calls, costliest
// first.
func serverShares(spent map[int64]statementTime, window time.Duration) (total float64, by []serverShare) {
	m := map[string]*serverShare{}
	for _, st := range spent {
		l := statementLabel(st.Query)
		s := m[l]
		if s == nil {
			s = &serverShare{Label: l}
			m[l] = s
		}
		s.Calls += st.Calls
		s.MsPerSecond += st.Ms / window.Seconds()
		total += st.Ms / window.Seconds()
	}
	for _, s := range m {
		by = append(by, *s)
	}
	slices.SortFunc(by, func(a, b serverShare) int {
		return cmp.Or(cmp.Compare(b.MsPerSecond, a.MsPerSecond), cmp.Compare(a.Label, b.Label))
	})
	return total, by
}

// serverShare is one statement's share of the server's time.
type serverShare struct {
	Label       string
	Calls       int64
	MsPerSecond float64
}

// metricKey is label in snake case, for a Report key.
func metricKey(label string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(label) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}
