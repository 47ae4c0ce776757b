package findings

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
)

// The rules of this file watch the server's long-term health (wraparound,
// checkpoints, standby conflicts) and the engine's (stuck idempotency keys,
// jobs running far past their kind's usual time, engine errors reported in
// the workers' heartbeats).

// wraparoundFindings: a database whose oldest unfrozen transaction ID or
// multixact has gone Wraparound of the way to WraparoundLimit, where
// PostgreSQL stops assigning them and writes stop; critical from half way.
// The evidence says whether autovacuum's anti-wraparound vacuum is overdue
// (the age is past autovacuum_freeze_max_age) and, for the console's own
// database, names its oldest tables.
func wraparoundFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if t.Wraparound <= 0 {
		return nil
	}
	var out []Finding
	for _, w := range r.Wraparound {
		frac := w.Fraction()
		if w.Kind != "database" || frac < t.Wraparound {
			continue
		}
		tables, oldest := []string{}, []string{}
		for _, tb := range r.Wraparound {
			if tb.Kind == "table" && tb.Database == w.Name {
				tables = append(tables, tb.Name)
				oldest = append(oldest, fmt.Sprintf("%s (xid age %d, mxid age %d)", tb.Name, tb.XIDAge, tb.MXIDAge))
			}
		}
		which, age, freeze := "transaction ID", w.XIDAge, w.FreezeMaxAge
		if w.MXIDAge > w.XIDAge {
			which, age, freeze = "multixact", w.MXIDAge, w.MultixactFreezeMaxAge
		}
		vacuum := "not due yet"
		if age > freeze {
			vacuum = fmt.Sprintf("overdue by %d: it has not finished (look for xmin horizon holders and a canceled or blocked autovacuum)", age-freeze)
		}
		sev := SeverityWarning
		if frac >= 0.5 {
			sev = SeverityCritical
		}
		out = append(out, Finding{Severity: sev,
			Title: fmt.Sprintf("Database %s is %.0f%% of the way to %s wraparound", w.Name, frac*100, which),
			Subject: map[string]any{"database": w.Name, "xid_age": w.XIDAge, "mxid_age": w.MXIDAge, "fraction": round3(frac),
				"freeze_max_age": freeze, "oldest_tables": tables},
			Evidence: fmt.Sprintf("%s: %s has %s age %d, %.1f%% of the %d at which PostgreSQL stops assigning them; autovacuum_freeze_max_age %d: the anti-wraparound vacuum is %s; oldest tables: %s",
				diagnostics.CheckWraparound, w.Name, which, age, frac*100, int64(diagnostics.WraparoundLimit), freeze, vacuum, nonEmpty(strings.Join(oldest, ", "), "in another database (point the console at it to name them)"))})
	}
	return out
}

// idempotencyStuckFindings: keys claimed IdempotencyStuck ago and never
// completed (the round reads only those); the subject names the oldest.
func idempotencyStuckFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if len(r.Idempotency) == 0 {
		return nil
	}
	k := r.Idempotency[0]
	return []Finding{{Severity: SeverityWarning,
		Title:   fmt.Sprintf("%d idempotency %s stuck in processing, the oldest for %s", k.Total, plural(int(k.Total), "key", "keys"), seconds(k.AgeSeconds)),
		Subject: map[string]any{"count": k.Total, "scope": k.Scope, "key": k.Key, "age_seconds": round1(k.AgeSeconds)},
		Evidence: fmt.Sprintf("%s: %d keys claimed more than %s ago and never completed; the oldest, %q in scope %q, was claimed at %s (claim locked until %s): the request that claimed it died or lost its commit, and a retry with the key waits or is refused",
			diagnostics.CheckIdempotencyStuck, k.Total, t.IdempotencyStuck, k.Key, k.Scope, k.CreatedAt.UTC().Format(time.RFC3339), timeText(k.LockedUntil))}}
}

// longRunningJobFindings: a running job that has run LongRunningJobFactor
// times its kind's usual run time and at least LongRunningJob (the round
// reads only those). Its worker renews the lease, so the expired-lease
// check does not see it.
func longRunningJobFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, j := range r.LongJobs {
		times := j.RunningSeconds / max(j.UsualSeconds, 0.001)
		out = append(out, Finding{Severity: SeverityWarning,
			Title: fmt.Sprintf("Job %d (%s) has run %s, %.0f times its kind's usual %s", j.JobID, j.Kind, seconds(j.RunningSeconds), times, seconds(j.UsualSeconds)),
			Subject: map[string]any{"job_id": j.JobID, "queue": j.Queue, "kind": j.Kind, "lease_owner": j.LeaseOwner,
				"running_seconds": round1(j.RunningSeconds), "usual_seconds": round1(j.UsualSeconds)},
			Evidence: fmt.Sprintf("%s: job %d of kind %s in queue %s (attempt %d, leased by %s) started at %s and has run %s; the kind's latest %d done jobs ran at most %s (95th percentile); its lease is renewed, so queue.expired_leases does not report it",
				diagnostics.CheckLongRunningJobs, j.JobID, j.Kind, j.Queue, j.Attempts, nonEmpty(j.LeaseOwner, "?"), j.StartedAt.UTC().Format(time.RFC3339),
				seconds(j.RunningSeconds), j.Samples, seconds(j.UsualSeconds))})
	}
	return out
}

// checkpointFindings: CheckpointRequested of the checkpoints of the last
// window (at least two) were requested rather than timed: WAL fills
// max_wal_size before checkpoint_timeout, or something runs CHECKPOINT.
func checkpointFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	w := r.Checkpoints
	if w == nil || t.CheckpointRequested <= 0 {
		return nil
	}
	req, timed := w.Requested(), w.Timed()
	if req < 2 || float64(req) < t.CheckpointRequested*float64(req+timed) {
		return nil
	}
	span := w.To.Sub(w.From).Round(time.Second)
	write := (w.End.WriteTimeMS - w.Start.WriteTimeMS) / 1000
	sync := (w.End.SyncTimeMS - w.Start.SyncTimeMS) / 1000
	return []Finding{{Severity: SeverityWarning,
		Title: fmt.Sprintf("%d of %d checkpoints in the last %s were requested, not timed", req, req+timed, span),
		Subject: map[string]any{"requested": req, "timed": timed, "fraction": round3(float64(req) / float64(req+timed)),
			"window_seconds": span.Seconds(), "write_seconds": round1(write), "sync_seconds": round1(sync), "max_wal_size": w.End.MaxWALSize},
		Evidence: fmt.Sprintf("%s: %d requested and %d timed checkpoints between %s and %s, writing for %s and syncing for %s; max_wal_size %s, checkpoint_timeout %s: WAL reaches max_wal_size before the timeout (or CHECKPOINT is run), and after each checkpoint the first change to every page writes a full-page image",
			diagnostics.CheckCheckpointer, req, timed, w.From.UTC().Format(time.RFC3339), w.To.UTC().Format(time.RFC3339), seconds(write), seconds(sync),
			humanize.Bytes(float64(w.End.MaxWALSize)), seconds(w.End.CheckpointTimeout))}}
}

// standbyConflictFindings: replay canceled StandbyConflicts queries on a
// standby within the window.
func standbyConflictFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, w := range r.StandbyConflicts {
		c := w.Canceled
		if t.StandbyConflicts <= 0 || c.Total < t.StandbyConflicts {
			continue
		}
		var dbs []string
		for _, row := range w.Rows {
			if row.Total > 0 {
				dbs = append(dbs, fmt.Sprintf("%s %d", row.Database, row.Total))
			}
		}
		span := w.To.Sub(w.From).Round(time.Second)
		out = append(out, Finding{Severity: SeverityWarning,
			Title: fmt.Sprintf("Replay canceled %d %s on standby %s in the last %s", c.Total, plural(int(c.Total), "query", "queries"), w.Standby, span),
			Subject: map[string]any{"standby": w.Standby, "canceled": c.Total, "snapshot": c.Snapshot, "lock": c.Lock,
				"bufferpin": c.Bufferpin, "deadlock": c.Deadlock, "tablespace": c.Tablespace, "window_seconds": span.Seconds()},
			Evidence: fmt.Sprintf("%s on %s: %d queries canceled between %s and %s (snapshot %d, lock %d, bufferpin %d, deadlock %d, tablespace %d, other %d); since the standby's statistics reset: %s. Snapshot conflicts: VACUUM on the primary removed rows those queries needed (hot_standby_feedback, max_standby_streaming_delay); lock conflicts: DDL, TRUNCATE or a VACUUM truncation on the primary",
				diagnostics.CheckStandbyConflicts, w.Standby, c.Total, w.From.UTC().Format(time.RFC3339), w.To.UTC().Format(time.RFC3339), c.Snapshot, c.Lock, c.Bufferpin,
				c.Deadlock, c.Tablespace, c.Total-c.Snapshot-c.Lock-c.Bufferpin-c.Deadlock-c.Tablespace, nonEmpty(strings.Join(dbs, ", "), "none"))})
	}
	return out
}

// engineErrorFindings: workers reported, in their heartbeats, engine errors
// (failed claims, acks, renewals...) from the last EngineErrorWindow; one
// finding per SQLSTATE across the workers. Critical for the classes that
// stop every write or connection: 53 (insufficient resources: 53100 disk
// full), 58 (system and I/O errors) and 08 (connection failures).
func engineErrorFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	type group struct {
		n       int
		ops     map[string]int
		workers []string
		last    diagnostics.Worker
		lastIdx int
	}
	groups := map[string]*group{}
	since := r.At.Add(-t.EngineErrorWindow)
	for _, w := range r.Workers {
		counted := map[string]bool{}
		for i, e := range w.RecentErrors {
			if e.At.Before(since) {
				continue
			}
			g := groups[e.SQLState]
			if g == nil {
				g = &group{ops: map[string]int{}, lastIdx: -1}
				groups[e.SQLState] = g
			}
			g.n++
			g.ops[e.Op]++
			if !counted[e.SQLState] {
				counted[e.SQLState] = true
				g.workers = append(g.workers, w.ID)
			}
			if g.lastIdx < 0 || e.At.After(g.last.RecentErrors[g.lastIdx].At) {
				g.last, g.lastIdx = w, i
			}
		}
	}
	states := make([]string, 0, len(groups))
	for s := range groups {
		states = append(states, s)
	}
	sort.Strings(states)
	var out []Finding
	for _, state := range states {
		g := groups[state]
		sort.Strings(g.workers)
		last := g.last.RecentErrors[g.lastIdx]
		ops := make([]string, 0, len(g.ops))
		for op, n := range g.ops {
			ops = append(ops, fmt.Sprintf("%s %d", op, n))
		}
		sort.Strings(ops)
		sev := SeverityWarning
		if class := state[:min(2, len(state))]; class == "53" || class == "58" || class == "08" {
			sev = SeverityCritical
		}
		hint := ""
		if state == "53100" {
			hint = "; the database's disk is full: free space (WAL, data, temporary files) before anything else"
		}
		out = append(out, Finding{Severity: sev,
			Title: fmt.Sprintf("The engine is failing: %s", short(last.String())),
			Subject: map[string]any{"sqlstate": state, "count": g.n, "workers": g.workers, "ops": g.ops,
				"last_error": last.Error, "last_at": last.At.UTC()},
			Evidence: fmt.Sprintf("%s: %d engine %s with SQLSTATE %s within %s from %d %s (%s): %s; the latest at %s from %s: %s%s",
				diagnostics.CheckWorkers, g.n, plural(g.n, "error", "errors"), nonEmpty(state, "none"), t.EngineErrorWindow, len(g.workers), plural(len(g.workers), "worker", "workers"),
				strings.Join(g.workers, ", "), strings.Join(ops, ", "), last.At.UTC().Format(time.RFC3339), g.last.ID, short(last.Error), hint)})
	}
	return out
}

// walDirFindings: pg_wal takes WALDirFactor times what the server keeps
// there by its settings; critical from twice that. SQL cannot see free
// disk space, so this is the WAL disk's early warning: the evidence names
// what may hold the WAL (the slot retaining most, the archiver's backlog).
// Nothing is reported when the role may not list pg_wal.
func walDirFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	w := r.WALDir
	if w == nil || w.Bytes == nil || t.WALDirFactor <= 0 || w.Expected() <= 0 {
		return nil
	}
	times := float64(*w.Bytes) / float64(w.Expected())
	if times < float64(t.WALDirFactor) {
		return nil
	}
	sev := SeverityWarning
	if times >= 2*float64(t.WALDirFactor) {
		sev = SeverityCritical
	}
	holders := []string{}
	var top *diagnostics.Slot
	for i, s := range r.Slots {
		if top == nil || s.RetainedBytes > top.RetainedBytes {
			top = &r.Slots[i]
		}
	}
	subj := map[string]any{"wal_bytes": *w.Bytes, "max_wal_size": w.MaxWALSize, "wal_keep_size": w.WALKeepSize, "times": round1(times)}
	if top != nil && top.RetainedBytes > 0 {
		holders = append(holders, fmt.Sprintf("slot %s (%s) retains %s", top.SlotName, activeText(top.Active), humanize.Bytes(float64(top.RetainedBytes))))
		subj["slot_name"] = top.SlotName
	}
	if a := r.Archiver; a != nil && a.Backlog() > 0 {
		holders = append(holders, fmt.Sprintf("%d segments wait to be archived", a.Backlog()))
	}
	return []Finding{{Severity: sev,
		Title:   fmt.Sprintf("pg_wal takes %s, %.1f times max_wal_size", humanize.Bytes(float64(*w.Bytes)), times),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: pg_wal holds %s in %s segments; max_wal_size %s, wal_keep_size %s; what may hold it: %s. When the WAL disk fills the server stops; the free space itself is not visible from SQL",
			diagnostics.CheckWALDir, humanize.Bytes(float64(*w.Bytes)), countText(w.Segments), humanize.Bytes(float64(w.MaxWALSize)), humanize.Bytes(float64(w.WALKeepSize)),
			nonEmpty(strings.Join(holders, "; "), "no slot or archive backlog: look at checkpoints (checkpointer panel)"))}}
}

// walBudget is how large pg_wal may grow: WALDirBudget when set (the WAL
// disk), else WALDirFactor times what the server keeps there (where
// wal.dir_size fires); zero when neither is known. text says which.
func walBudget(r diagnostics.Round, t diagnostics.Thresholds) (budget int64, text string) {
	if t.WALDirBudget > 0 {
		return t.WALDirBudget, fmt.Sprintf("the WAL budget %s (threshold %s)", humanize.Bytes(float64(t.WALDirBudget)), CodeWALDir)
	}
	if r.WALDir == nil || t.WALDirFactor <= 0 || r.WALDir.Expected() <= 0 {
		return 0, ""
	}
	b := t.WALDirFactor * r.WALDir.Expected()
	return b, fmt.Sprintf("%s, %d times max_wal_size, where %s fires (set --threshold %s=<size of the WAL disk> to forecast to the disk itself)",
		humanize.Bytes(float64(b)), t.WALDirFactor, CodeWALDir, CodeWALDir)
}

// slotDiskForecastFinding: a slot that nothing caps (max_slot_wal_keep_size
// = -1, so it has no safe_wal_size to forecast against) keeps more WAL
// round after round, and at that rate pg_wal reaches its budget (walBudget)
// within SlotDiskForecast. The forecast counts from the size of pg_wal; a
// role that may not list pg_wal (pg_monitor) gets it from the slot's
// retained WAL alone, a lower bound, and the evidence says so.
func slotDiskForecastFinding(r diagnostics.Round, t diagnostics.Thresholds, s diagnostics.Slot) (Finding, bool) {
	if s.MaxSlotWALKeepBytes >= 0 || s.RetainedGrowth == nil || *s.RetainedGrowth <= 0 || t.SlotDiskForecast <= 0 {
		return Finding{}, false
	}
	budget, budgetText := walBudget(r, t)
	if budget <= 0 {
		return Finding{}, false
	}
	used := s.RetainedBytes
	usedText := fmt.Sprintf("pg_wal's size is not readable (the console's role needs pg_monitor, or superuser, for pg_ls_waldir()), so the forecast counts the slot's %s alone, a lower bound", humanize.Bytes(float64(used)))
	if s.PGWALBytes != nil {
		used = max(*s.PGWALBytes, s.RetainedBytes)
		usedText = "pg_wal is " + humanize.Bytes(float64(*s.PGWALBytes))
	}
	rate := *s.RetainedGrowth
	secs := max(float64(budget-used), 0) / rate
	if secs >= t.SlotDiskForecast.Seconds() {
		return Finding{}, false
	}
	subj := map[string]any{"slot_name": s.SlotName, "slot_type": s.SlotType, "active": s.Active, "retained_bytes": s.RetainedBytes,
		"growth_bytes_per_second": round1(rate), "budget_bytes": budget, "seconds_to_budget": round1(secs)}
	if s.PGWALBytes != nil {
		subj["pg_wal_bytes"] = *s.PGWALBytes
	}
	return Finding{Severity: SeverityCritical,
		Title:   fmt.Sprintf("Slot %s fills pg_wal to its budget in %s", s.SlotName, seconds(secs)),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %s (%s, %s) keeps %s of WAL, growing %s/s over the last %s; max_slot_wal_keep_size is unlimited, so nothing invalidates it before the WAL disk is full; %s, and at this rate it reaches %s in %s",
			diagnostics.CheckReplicationSlots, s.SlotName, s.SlotType, activeText(s.Active), humanize.Bytes(float64(s.RetainedBytes)), humanize.Bytes(rate), lagText(s.GrowthSeconds),
			usedText, budgetText, seconds(secs))}, true
}
