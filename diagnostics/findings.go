package diagnostics

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Severities of a Finding, worst first.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Finding is one statement about the database, with the evidence it rests
// on, the runbook page that explains it and the actions that fit.
type Finding struct {
	// Code is the finding's kind, e.g. "lock.root_blocker" (DESIGN.md
	// section 6); diagnostics.unavailable when a check could not run.
	Code string `json:"code"`
	// Severity is critical, warning or info.
	Severity string `json:"severity"`
	Title    string `json:"title"`
	// Subject identifies what the finding is about (pid, queue, slot_name,
	// ...), with the measured values.
	Subject map[string]any `json:"subject"`
	// Evidence says, in one line, what was measured and by which check.
	Evidence string `json:"evidence"`
	// Runbook is the page that explains it: "/runbook/<step>" or
	// "/runbook/rb-<letter>".
	Runbook string `json:"runbook"`
	// Actions are the names of the actions that fit, e.g. "backend.cancel";
	// never nil.
	Actions []string `json:"actions"`
}

// Report is the answer of GET /api/v1/findings and `console findings --json`.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	Findings    []Finding `json:"findings"`
}

// Finding codes (DESIGN.md section 6).
const (
	CodeRootBlocker       = "lock.root_blocker"
	CodeIdleInTransaction = "tx.idle_in_transaction"
	CodeLongRunning       = "tx.long_running"
	CodeQueueBacklog      = "queue.backlog"
	CodeExpiredLeases     = "queue.expired_leases"
	CodeDeadLetters       = "queue.dead_letters"
	CodeQueuePaused       = "queue.paused"
	CodeOutboxBacklog     = "outbox.backlog"
	CodeOutboxDead        = "outbox.dead"
	CodeReplicationLag    = "replication.lag"
	CodeSlotRetention     = "replication.slot_retention"
	CodeSlotInactive      = "replication.slot_inactive"
	CodeWALRateHigh       = "wal.rate_high"
	CodeArchiverFailing   = "archiver.failing"
	CodePreparedXactOld   = "prepared_xact.old"
	CodeXminHorizon       = "vacuum.xmin_horizon"
	CodeDeadTuples        = "table.dead_tuples"
	CodeIndexInvalid      = "index.invalid"
	CodeNotifyQueueUsage  = "notify.queue_usage"
	CodeWorkersNoneAlive  = "workers.none_alive"
	CodeUnavailable       = "diagnostics.unavailable"
)

// Round is the evidence of one Findings round: what each check returned.
// Nil or empty fields mean the check returned nothing or could not run
// (then Unavailable says why).
type Round struct {
	At          time.Time
	Blocking    []BlockingNode
	Activity    []Backend
	IdleTx      []IdleTx
	WALRate     *float64
	Replication []Standby
	Standbys    []StandbyState
	Slots       []Slot
	Archiver    *ArchiverStat
	Prepared    []PreparedXact
	Xmin        []XminHolder
	Tables      []TableStat
	Invalid     []InvalidIndex
	Notify      *NotifyUsage
	Queues      []QueueStat
	DeadLetters []DeadLetterGroup
	Outbox      *OutboxStat
	Workers     []Worker
	Unavailable []Unavailable
	// Timings is how long each check took, by check name.
	Timings map[string]time.Duration
	// Took is the wall time of the round.
	Took time.Duration
}

// Unavailable is a check that failed or timed out in a round.
type Unavailable struct {
	Check    string
	Status   string
	TimedOut bool
	LockedBy []int32
	Err      error
}

// Findings runs a round of its own and evaluates it against the current
// thresholds (pages share LatestRound's instead). It returns an error only
// when ctx is already done; a database that cannot be reached, or a check
// that times out, is itself a finding.
func (d *Diagnostics) Findings(ctx context.Context) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	r := d.Round(ctx)
	return Report{GeneratedAt: r.At, Findings: Evaluate(r, d.Thresholds())}, nil
}

// LatestRound returns a findings round no older than maxAge (zero means
// Config.RoundMaxAge), shared by every caller: the overview of each open
// tab, GET /api/v1/findings and the Prometheus Collector take the same
// round, at most one round runs at a time, and callers that arrive while it
// runs wait for it. Round.At says when the round started. A round that could
// not run at all (the database unreachable) is served for at most a second.
//
// ctx bounds only the wait: the error is ctx's when it ended before a round
// was available, and the round then goes on for the next caller, within
// Config.Budget. A round that failed is not an error: its Unavailable says
// what failed.
func (d *Diagnostics) LatestRound(ctx context.Context, maxAge time.Duration) (Round, error) {
	r, err := d.rounds.Get(ctx, maxAge)
	if errors.Is(err, errRoundFailed) {
		return r, nil
	}
	return r, err
}

// errRoundFailed marks, in the round cache, a round that could not start, so
// it expires as a failed read does.
var errRoundFailed = errors.New("diagnostics round failed")

// sharedRound runs a round for LatestRound's cache.
func (d *Diagnostics) sharedRound(ctx context.Context) (Round, error) {
	d.roundsRun.Add(1)
	r := d.Round(ctx)
	for _, u := range r.Unavailable {
		if name, _, _ := strings.Cut(u.Check, " "); name == "server_info" || name == "connect" {
			return r, fmt.Errorf("%w: %s: %s", errRoundFailed, name, u.Status)
		}
	}
	return r, nil
}

// roundCheck is one check of a round: a query name and what to do with the
// session.
type roundCheck struct {
	name string
	fn   func(context.Context, DBTX) error
}

// Round runs every check of a Findings round in one REPEATABLE READ, READ
// ONLY transaction (one savepoint per check), within Config.Budget, then
// reads each standby. A check that fails is listed in Unavailable.
func (d *Diagnostics) Round(ctx context.Context) Round {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
	defer cancel()
	r := Round{At: start.UTC(), Timings: map[string]time.Duration{}}
	t := d.Thresholds()
	info, err := d.ServerInfo(ctx)
	if err != nil {
		r.Unavailable = append(r.Unavailable, unavailable("server_info", probeOf(err)))
		r.Took = time.Since(start)
		return r
	}
	v := info.VersionNum
	s, err := d.begin(ctx, d.pool, pgx.RepeatableRead)
	if err != nil {
		r.Unavailable = append(r.Unavailable, unavailable("connect", probeOf(err)))
		r.Took = time.Since(start)
		return r
	}
	defer s.end()

	// Counts stop at the cap; it must not hide a configured threshold.
	qp := QueueParams{DeadWindow: t.DeadLetterWindow, CountCap: max(DefaultCountCap, t.QueueBacklogReady, t.DeadLetters)}
	var walFrom WALPoint
	haveFrom := false
	checks := []roundCheck{
		{"wal_position", func(ctx context.Context, db DBTX) (err error) {
			walFrom, err = WALPosition(ctx, db)
			haveFrom = err == nil
			return err
		}},
		{"blocking_tree", func(ctx context.Context, db DBTX) (err error) { r.Blocking, err = BlockingTree(ctx, db); return }},
		{"activity", func(ctx context.Context, db DBTX) (err error) { r.Activity, err = Activity(ctx, db); return }},
		{"idle_in_transaction", func(ctx context.Context, db DBTX) (err error) { r.IdleTx, err = IdleInTransaction(ctx, db); return }},
		{"queue_health", func(ctx context.Context, db DBTX) (err error) {
			r.Queues, err = QueueHealth(ctx, db, qp)
			return
		}},
		{"dead_letters", func(ctx context.Context, db DBTX) (err error) {
			r.DeadLetters, err = DeadLetters(ctx, db, qp)
			return
		}},
		{"workers", func(ctx context.Context, db DBTX) (err error) {
			r.Workers, err = Workers(ctx, db, t.WorkerHeartbeat)
			return
		}},
		{"outbox_health", func(ctx context.Context, db DBTX) error {
			o, err := OutboxHealth(ctx, db, max(DefaultCountCap, t.OutboxBacklogPending, t.OutboxDead))
			if err == nil {
				r.Outbox = &o
			}
			return err
		}},
		{"replication", func(ctx context.Context, db DBTX) (err error) { r.Replication, err = Replication(ctx, db); return }},
		{"replication_slots", func(ctx context.Context, db DBTX) (err error) { r.Slots, err = ReplicationSlots(ctx, db, v); return }},
		{"archiver", func(ctx context.Context, db DBTX) error {
			a, err := Archiver(ctx, db)
			if err == nil {
				r.Archiver = &a
			}
			return err
		}},
		{"prepared_xacts", func(ctx context.Context, db DBTX) (err error) { r.Prepared, err = PreparedXacts(ctx, db); return }},
		{"xmin_horizon", func(ctx context.Context, db DBTX) (err error) { r.Xmin, err = XminHorizon(ctx, db); return }},
		{"table_vacuum", func(ctx context.Context, db DBTX) (err error) { r.Tables, err = TableVacuum(ctx, db); return }},
		{"invalid_indexes", func(ctx context.Context, db DBTX) (err error) { r.Invalid, err = InvalidIndexes(ctx, db); return }},
		{"notify_queue", func(ctx context.Context, db DBTX) error {
			n, err := NotifyQueue(ctx, db)
			if err == nil {
				r.Notify = &n
			}
			return err
		}},
	}
	for _, c := range checks {
		if ctx.Err() != nil {
			r.Unavailable = append(r.Unavailable, Unavailable{Check: c.name, Status: "skipped: findings budget exhausted", TimedOut: true, Err: ctx.Err()})
			continue
		}
		p := s.run(ctx, tablesOf(c.name), c.fn)
		r.Timings[c.name] = p.Took
		if p.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(c.name, p))
		}
	}

	// The WAL rate: the sampler's, or the previous round's position, or a
	// second position WALSampleWindow after the first.
	if haveFrom {
		rate, ok := d.rateSince(walFrom)
		if !ok && ctx.Err() == nil {
			wait := time.Until(walFrom.SampledAt.Add(d.cfg.WALSampleWindow))
			if dl, has := ctx.Deadline(); has && time.Until(dl) < wait+d.cfg.StatementTimeout/4 {
				wait = time.Until(dl) - d.cfg.StatementTimeout/4
			}
			if wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-timer.C:
				}
				timer.Stop()
			}
			var walTo WALPoint
			p := s.run(ctx, nil, func(ctx context.Context, db DBTX) (err error) { walTo, err = WALPosition(ctx, db); return })
			if p.Err == nil {
				rate, ok = WALRate(walFrom, walTo), walTo.SampledAt.After(walFrom.SampledAt)
				d.rememberWAL(walTo, rate, ok)
			}
		}
		if ok {
			r.WALRate = &rate
		}
	}
	for i := range r.Slots {
		if r.WALRate != nil {
			r.Slots[i].SecondsToExhaustion = SlotExhaustion(r.Slots[i].SafeWALSize, *r.WALRate)
		}
	}
	for _, sp := range d.standbys {
		if ctx.Err() != nil {
			r.Unavailable = append(r.Unavailable, Unavailable{Check: "standby_status " + sp.name, Status: "skipped: findings budget exhausted", TimedOut: true, Err: ctx.Err()})
			continue
		}
		res := d.standbyStatus(ctx, sp)
		r.Timings[res.Name] = res.Took
		if res.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(res.Name, probe{Err: res.Err, TimedOut: res.TimedOut, LockedBy: res.LockedBy}))
			continue
		}
		r.Standbys = append(r.Standbys, res.Rows...)
	}
	r.Took = time.Since(start)
	return r
}

// rateSince returns a WAL rate ending at p: the sampler's when it is fresh,
// else from the last remembered position if it is between half a sample
// window and five minutes old (then p is remembered), else the last rate if
// the remembered position is younger than half a window.
func (d *Diagnostics) rateSince(p WALPoint) (float64, bool) {
	d.mu.Lock()
	sampler, last, lastRate := d.sampler, d.lastWAL, d.lastRate
	d.mu.Unlock()
	if sampler != nil {
		if rate, ok := sampler.freshWALRate(); ok {
			return rate, true
		}
	}
	if last != nil && p.LSNBytes >= last.LSNBytes {
		age := p.SampledAt.Sub(last.SampledAt)
		switch {
		case age >= d.cfg.WALSampleWindow/2 && age <= 5*time.Minute:
			rate := WALRate(*last, p)
			d.rememberWAL(p, rate, true)
			return rate, true
		case age < d.cfg.WALSampleWindow/2 && lastRate != nil:
			// Rounds in quick succession: keep the older anchor so the next
			// window is long enough, and reuse the last rate.
			return *lastRate, true
		}
	}
	return 0, false
}

// rememberWAL keeps the latest WAL position and rate for the next round and
// for panels (slot time-to-exhaustion).
func (d *Diagnostics) rememberWAL(p WALPoint, rate float64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastWAL = &p
	if ok {
		d.lastRate = &rate
	}
}

// knownWALRate is the most recent WAL rate known to this Diagnostics (the
// sampler's, else the last round's), or 0.
func (d *Diagnostics) knownWALRate() float64 {
	d.mu.Lock()
	sampler, rate := d.sampler, d.lastRate
	d.mu.Unlock()
	if sampler != nil {
		if r, ok := sampler.freshWALRate(); ok {
			return r
		}
	}
	if rate != nil {
		return *rate
	}
	return 0
}

func probeOf(err error) probe {
	p := probe{Err: err}
	classify(&p)
	return p
}

func unavailable(check string, p probe) Unavailable {
	return Unavailable{Check: check, Status: statusText(p.Err, p.TimedOut, p.LockedBy), TimedOut: p.TimedOut, LockedBy: p.LockedBy, Err: p.Err}
}

// stepOf is the runbook step of a check, for diagnostics.unavailable.
func stepOf(check string) string {
	name, _, _ := strings.Cut(check, " ")
	for _, c := range catalog {
		if c.Name == name {
			return c.Step
		}
	}
	return "activity"
}

// Evaluate turns a round into findings, worst first. It is pure: the same
// round and thresholds give the same findings.
func Evaluate(r Round, t Thresholds) []Finding {
	var out []Finding
	add := func(f Finding) {
		if f.Actions == nil {
			f.Actions = []string{}
		}
		if f.Subject == nil {
			f.Subject = map[string]any{}
		}
		out = append(out, f)
	}

	for _, u := range r.Unavailable {
		subj := map[string]any{"check": u.Check, "status": u.Status, "timed_out": u.TimedOut}
		if len(u.LockedBy) > 0 {
			subj["locked_by"] = u.LockedBy
		}
		ev := fmt.Sprintf("%s: %s", u.Check, u.Status)
		if u.Err != nil && !strings.Contains(u.Status, u.Err.Error()) {
			ev += " (" + u.Err.Error() + ")"
		}
		add(Finding{Code: CodeUnavailable, Severity: SeverityWarning,
			Title:   fmt.Sprintf("Check %s could not run", u.Check),
			Subject: subj, Evidence: ev, Runbook: "/runbook/" + stepOf(u.Check)})
	}

	// Locks and transactions.
	for _, n := range r.Blocking {
		if !n.IsRoot || n.BlockedCount == 0 || n.MaxWaitSeconds < t.RootBlockerWait.Seconds() {
			continue
		}
		subj := map[string]any{"pid": n.PID, "blocked_count": n.BlockedCount, "wait_seconds": round1(n.MaxWaitSeconds),
			"state": n.State, "application_name": n.ApplicationName, "xact_age_seconds": round1(n.XactAgeSeconds)}
		if n.JobID != nil {
			subj["job_id"] = *n.JobID
		}
		actions := []string{"backend.cancel", "backend.terminate"}
		if strings.HasPrefix(n.State, "idle in transaction") {
			actions = []string{"backend.terminate", "backend.cancel"}
		}
		add(Finding{Code: CodeRootBlocker, Severity: SeverityCritical,
			Title:   fmt.Sprintf("pid %d blocks %d %s", n.PID, n.BlockedCount, plural(n.BlockedCount, "backend", "backends")),
			Subject: subj,
			Evidence: fmt.Sprintf("blocking_tree: root pid %d (%s, application %q, transaction %s old) blocks %d; the longest has waited %s; query: %s",
				n.PID, n.State, n.ApplicationName, seconds(n.XactAgeSeconds), n.BlockedCount, seconds(n.MaxWaitSeconds), short(n.Query)),
			Runbook: "/runbook/blocking", Actions: actions})
	}
	idle := map[int32]bool{}
	for _, it := range r.IdleTx {
		if it.IdleSeconds < t.IdleInTransaction.Seconds() {
			continue
		}
		idle[it.PID] = true
		add(Finding{Code: CodeIdleInTransaction, Severity: SeverityWarning,
			Title:   fmt.Sprintf("pid %d idle in transaction for %s", it.PID, seconds(it.IdleSeconds)),
			Subject: map[string]any{"pid": it.PID, "seconds": round1(it.IdleSeconds), "application_name": it.ApplicationName, "xact_age_seconds": round1(it.XactAgeSeconds)},
			Evidence: fmt.Sprintf("idle_in_transaction: pid %d (%s, application %q) idle %s in a transaction %s old; last query: %s",
				it.PID, it.State, it.ApplicationName, seconds(it.IdleSeconds), seconds(it.XactAgeSeconds), short(it.LastQuery)),
			Runbook: "/runbook/rb-a", Actions: []string{"backend.terminate"}})
	}
	for _, b := range r.Activity {
		if b.BackendType != "client backend" || b.XactStart == nil || idle[b.PID] ||
			strings.HasPrefix(b.State, "idle in transaction") || b.XactAgeSeconds < t.LongRunningTx.Seconds() {
			continue
		}
		add(Finding{Code: CodeLongRunning, Severity: SeverityWarning,
			Title:   fmt.Sprintf("pid %d has a transaction open for %s", b.PID, seconds(b.XactAgeSeconds)),
			Subject: map[string]any{"pid": b.PID, "seconds": round1(b.XactAgeSeconds), "state": b.State, "application_name": b.ApplicationName},
			Evidence: fmt.Sprintf("activity: pid %d (%s, application %q, wait %s) transaction %s old, statement %s old: %s",
				b.PID, b.State, b.ApplicationName, nonEmpty(b.WaitEvent, "none"), seconds(b.XactAgeSeconds), seconds(b.QueryAgeSeconds), short(b.Query)),
			Runbook: "/runbook/activity", Actions: []string{"backend.cancel", "backend.terminate"}})
	}

	// Queues and outbox.
	alive := map[string]bool{}
	for _, q := range r.Queues {
		for _, w := range r.Workers {
			if w.Alive && w.Serves(q.Queue) {
				alive[q.Queue] = true
			}
		}
	}
	topClass := map[string]DeadLetterGroup{}
	for _, g := range r.DeadLetters {
		if cur, ok := topClass[g.Queue]; !ok || g.DeadRecent > cur.DeadRecent {
			topClass[g.Queue] = g
		}
	}
	for _, q := range r.Queues {
		if q.Paused {
			add(Finding{Code: CodeQueuePaused, Severity: SeverityInfo,
				Title:   fmt.Sprintf("Queue %s is paused", q.Queue),
				Subject: map[string]any{"queue": q.Queue, "ready": q.Ready, "updated_by": q.SettingsUpdatedBy},
				Evidence: fmt.Sprintf("queue_health: queue_settings.paused for %s (by %q); %d ready jobs wait",
					q.Queue, q.SettingsUpdatedBy, q.Ready),
				Runbook: "/runbook/queues", Actions: []string{"queue.resume"}})
		}
		if q.Ready > 0 && (q.OldestReadySeconds >= t.QueueBacklogAge.Seconds() || (t.QueueBacklogReady > 0 && q.Ready >= t.QueueBacklogReady)) {
			actions := []string{"queue.throttle"}
			if q.Paused {
				actions = []string{"queue.resume"}
			}
			add(Finding{Code: CodeQueueBacklog, Severity: SeverityWarning,
				Title:   fmt.Sprintf("Queue %s: %d ready, oldest waiting %s", q.Queue, q.Ready, seconds(q.OldestReadySeconds)),
				Subject: map[string]any{"queue": q.Queue, "ready": q.Ready, "oldest_ready_seconds": round1(q.OldestReadySeconds)},
				Evidence: fmt.Sprintf("queue_health: %d ready jobs in %s, the oldest available for %s; %d running",
					q.Ready, q.Queue, seconds(q.OldestReadySeconds), q.Running),
				Runbook: "/runbook/queues", Actions: actions})
		}
		if t.ExpiredLeases > 0 && q.ExpiredLeases >= t.ExpiredLeases {
			add(Finding{Code: CodeExpiredLeases, Severity: SeverityWarning,
				Title:   fmt.Sprintf("Queue %s: %d running jobs with expired leases", q.Queue, q.ExpiredLeases),
				Subject: map[string]any{"queue": q.Queue, "count": q.ExpiredLeases},
				Evidence: fmt.Sprintf("queue_health: %d of %d running jobs in %s have lease_until in the past (oldest %s); their workers crashed, stalled or cannot renew",
					q.ExpiredLeases, q.Running, q.Queue, timeText(q.OldestExpiredLease)),
				Runbook: "/runbook/rb-f", Actions: []string{"lease.expire"}})
		}
		if t.DeadLetters > 0 && q.DeadRecent >= t.DeadLetters {
			top := topClass[q.Queue]
			add(Finding{Code: CodeDeadLetters, Severity: SeverityWarning,
				Title:   fmt.Sprintf("Queue %s: %d jobs died in the last %s", q.Queue, q.DeadRecent, t.DeadLetterWindow),
				Subject: map[string]any{"queue": q.Queue, "count": q.DeadRecent, "error_class": top.ErrorClass, "error_class_count": top.DeadRecent, "window_seconds": t.DeadLetterWindow.Seconds()},
				Evidence: fmt.Sprintf("dead_letters: %d dead in %s within %s (%d in total); top error class %q with %d; classify before requeueing",
					q.DeadRecent, q.Queue, t.DeadLetterWindow, q.Dead, top.ErrorClass, top.DeadRecent),
				Runbook: "/runbook/rb-g", Actions: []string{"deadletters.requeue"}})
		}
		if q.Ready > 0 && !q.Paused && !alive[q.Queue] && r.Workers != nil {
			add(Finding{Code: CodeWorkersNoneAlive, Severity: SeverityCritical,
				Title:   fmt.Sprintf("Queue %s has ready jobs and no live worker", q.Queue),
				Subject: map[string]any{"queue": q.Queue, "ready": q.Ready},
				Evidence: fmt.Sprintf("workers: no worker serving %s heartbeated within %s (%d registered); %d jobs ready",
					q.Queue, t.WorkerHeartbeat, len(r.Workers), q.Ready),
				Runbook: "/runbook/queues", Actions: []string{}})
		}
	}
	if o := r.Outbox; o != nil {
		if o.Pending > 0 && (o.OldestPendingSeconds >= t.OutboxBacklogAge.Seconds() || (t.OutboxBacklogPending > 0 && o.Pending >= t.OutboxBacklogPending)) {
			actions := []string{"relay.throttle"}
			if o.RelayPaused {
				actions = []string{"relay.resume"}
			}
			add(Finding{Code: CodeOutboxBacklog, Severity: SeverityWarning,
				Title:   fmt.Sprintf("Outbox: %d pending, oldest %s", o.Pending, seconds(o.OldestPendingSeconds)),
				Subject: map[string]any{"pending": o.Pending, "oldest_pending_seconds": round1(o.OldestPendingSeconds), "relay_paused": o.RelayPaused},
				Evidence: fmt.Sprintf("outbox_health: %d pending events, the oldest available for %s; %d in flight (%d expired leases); relay paused: %t",
					o.Pending, seconds(o.OldestPendingSeconds), o.Inflight, o.ExpiredLeases, o.RelayPaused),
				Runbook: "/runbook/rb-h", Actions: actions})
		}
		if t.OutboxDead > 0 && o.Dead >= t.OutboxDead {
			add(Finding{Code: CodeOutboxDead, Severity: SeverityWarning,
				Title:    fmt.Sprintf("Outbox: %d dead events", o.Dead),
				Subject:  map[string]any{"count": o.Dead},
				Evidence: fmt.Sprintf("outbox_health: %d events exhausted their attempts (last at %s)", o.Dead, timeText(o.LastDeadAt)),
				Runbook:  "/runbook/outbox", Actions: []string{"outbox.requeue"}})
		}
	}

	// Replication, WAL and archiving.
	for _, s := range r.Replication {
		secs := 0.0
		if s.ReplayLagSeconds != nil {
			secs = *s.ReplayLagSeconds
		}
		if s.ReplayLagBytes < t.ReplicationLagBytes && (t.ReplicationLagTime <= 0 || secs < t.ReplicationLagTime.Seconds()) {
			continue
		}
		add(Finding{Code: CodeReplicationLag, Severity: SeverityWarning,
			Title:   fmt.Sprintf("Standby %s replays %s behind", nonEmpty(s.ApplicationName, s.ClientAddr), FormatBytes(float64(s.ReplayLagBytes))),
			Subject: map[string]any{"application_name": s.ApplicationName, "replay_lag_bytes": s.ReplayLagBytes, "replay_lag_seconds": round1(secs), "sync_state": s.SyncState, "client_addr": s.ClientAddr},
			Evidence: fmt.Sprintf("replication: %s (%s, %s) sent %s / flushed %s / replayed %s behind; replay_lag %s",
				nonEmpty(s.ApplicationName, "?"), s.State, s.SyncState, FormatBytes(float64(s.SentLagBytes)), FormatBytes(float64(s.FlushLagBytes)),
				FormatBytes(float64(s.ReplayLagBytes)), lagText(s.ReplayLagSeconds)),
			Runbook: "/runbook/rb-j", Actions: []string{}})
	}
	for _, s := range r.Standbys {
		if !s.InRecovery {
			continue
		}
		if s.ReplayLagBytes < t.ReplicationLagBytes && (t.ReplicationLagTime <= 0 || s.ReplayDelaySeconds < t.ReplicationLagTime.Seconds()) {
			continue
		}
		add(Finding{Code: CodeReplicationLag, Severity: SeverityWarning,
			Title:   fmt.Sprintf("Standby %s has received %s it has not replayed", s.URL, FormatBytes(float64(s.ReplayLagBytes))),
			Subject: map[string]any{"application_name": "standby " + s.URL, "standby": s.URL, "replay_lag_bytes": s.ReplayLagBytes, "replay_lag_seconds": round1(s.ReplayDelaySeconds), "paused": s.Paused()},
			Evidence: fmt.Sprintf("standby_status on %s: received %s, replayed %s (%s behind), last replayed commit %s; replay %s; receiver %s",
				s.URL, s.ReceiveLSN, s.ReplayLSN, FormatBytes(float64(s.ReplayLagBytes)), timeText(s.LastReplayAt), nonEmpty(s.ReplayPauseState, "?"), nonEmpty(s.ReceiverStatus, "not running")),
			Runbook: "/runbook/rb-j", Actions: []string{}})
	}
	for _, s := range r.Slots {
		lost := s.WALStatus == "unreserved" || s.WALStatus == "lost"
		if s.RetainedBytes >= t.SlotRetentionBytes || lost {
			sev := SeverityWarning
			if lost || (s.SecondsToExhaustion != nil && *s.SecondsToExhaustion < 3600) {
				sev = SeverityCritical
			}
			subj := map[string]any{"slot_name": s.SlotName, "retained_bytes": s.RetainedBytes, "wal_status": s.WALStatus, "active": s.Active, "slot_type": s.SlotType}
			if s.SafeWALSize != nil {
				subj["safe_wal_size"] = *s.SafeWALSize
			}
			if s.SecondsToExhaustion != nil {
				subj["seconds_to_exhaustion"] = round1(*s.SecondsToExhaustion)
			}
			add(Finding{Code: CodeSlotRetention, Severity: sev,
				Title:   fmt.Sprintf("Slot %s retains %s of WAL", s.SlotName, FormatBytes(float64(s.RetainedBytes))),
				Subject: subj,
				Evidence: fmt.Sprintf("replication_slots: %s (%s, %s) restart_lsn %s keeps %s; wal_status %s; safe_wal_size %s; time to exhaustion %s",
					s.SlotName, s.SlotType, activeText(s.Active), deref(s.RestartLSN), FormatBytes(float64(s.RetainedBytes)), nonEmpty(s.WALStatus, "?"),
					sizeText(s.SafeWALSize), lagText(s.SecondsToExhaustion)),
				Runbook: "/runbook/rb-b", Actions: []string{}})
		}
		if !s.Active && (t.SlotInactive <= 0 || s.InactiveSince == nil || r.At.Sub(*s.InactiveSince) >= t.SlotInactive) {
			subj := map[string]any{"slot_name": s.SlotName, "slot_type": s.SlotType, "retained_bytes": s.RetainedBytes}
			if s.InactiveSince != nil {
				subj["inactive_since"] = s.InactiveSince.UTC()
			}
			add(Finding{Code: CodeSlotInactive, Severity: SeverityWarning,
				Title:   fmt.Sprintf("Slot %s has no consumer", s.SlotName),
				Subject: subj,
				Evidence: fmt.Sprintf("replication_slots: %s (%s) is inactive since %s and keeps %s of WAL and xmin %s / catalog_xmin %s",
					s.SlotName, s.SlotType, timeText(s.InactiveSince), FormatBytes(float64(s.RetainedBytes)), deref(s.Xmin), deref(s.CatalogXmin)),
				Runbook: "/runbook/rb-b", Actions: []string{}})
		}
	}
	if r.WALRate != nil && t.WALRate > 0 && *r.WALRate >= t.WALRate {
		add(Finding{Code: CodeWALRateHigh, Severity: SeverityWarning,
			Title:    fmt.Sprintf("WAL generated at %s/s", FormatBytes(*r.WALRate)),
			Subject:  map[string]any{"bytes_per_second": round1(*r.WALRate)},
			Evidence: fmt.Sprintf("wal_position: %s/s between two samples (threshold %s/s)", FormatBytes(*r.WALRate), FormatBytes(t.WALRate)),
			Runbook:  "/runbook/rb-c", Actions: []string{"queue.throttle"}})
	}
	if a := r.Archiver; a != nil && a.Failing {
		add(Finding{Code: CodeArchiverFailing, Severity: SeverityCritical,
			Title:   fmt.Sprintf("WAL archiving fails at %s", a.LastFailedWAL),
			Subject: map[string]any{"last_failed_wal": a.LastFailedWAL, "failed_count": a.FailedCount},
			Evidence: fmt.Sprintf("archiver: last failure %s at %s, last success %s at %s; %d failures",
				a.LastFailedWAL, timeText(a.LastFailedTime), nonEmpty(a.LastArchivedWAL, "none"), timeText(a.LastArchivedTime), a.FailedCount),
			Runbook: "/runbook/rb-j", Actions: []string{}})
	}

	// Vacuum, prepared transactions, indexes, NOTIFY.
	for _, p := range r.Prepared {
		if p.AgeSeconds < t.PreparedXactAge.Seconds() {
			continue
		}
		add(Finding{Code: CodePreparedXactOld, Severity: SeverityCritical,
			Title:   fmt.Sprintf("Prepared transaction %q is %s old", p.GID, seconds(p.AgeSeconds)),
			Subject: map[string]any{"gid": p.GID, "seconds": round1(p.AgeSeconds), "database": p.Database, "owner": p.Owner, "xid_age": p.XIDAge},
			Evidence: fmt.Sprintf("prepared_xacts: %q prepared at %s in %s by %s keeps its locks and the xmin horizon (xid %s, age %d) until COMMIT/ROLLBACK PREPARED",
				p.GID, p.Prepared.UTC().Format(time.RFC3339), p.Database, p.Owner, p.XID, p.XIDAge),
			Runbook: "/runbook/rb-l", Actions: []string{}})
	}
	for _, h := range r.Xmin {
		old := h.AgeSeconds != nil && t.XminHorizonAge > 0 && *h.AgeSeconds >= t.XminHorizonAge.Seconds()
		if !old && (t.XminHorizonXIDs <= 0 || int64(h.XIDAge) < t.XminHorizonXIDs) {
			continue
		}
		subj := map[string]any{"holder_kind": h.Kind, "holder_id": h.Holder, "xid_age": h.XIDAge}
		if h.AgeSeconds != nil {
			subj["age_seconds"] = round1(*h.AgeSeconds)
		}
		actions := []string{}
		if h.Kind == "backend" {
			actions = []string{"backend.terminate"}
		}
		add(Finding{Code: CodeXminHorizon, Severity: SeverityWarning,
			Title:   fmt.Sprintf("%s %s holds the xmin horizon (%d transactions)", h.Kind, h.Holder, h.XIDAge),
			Subject: subj,
			Evidence: fmt.Sprintf("xmin_horizon: %s %s holds xmin %s, %d transactions old%s; VACUUM cannot remove rows deleted since: %s",
				h.Kind, h.Holder, h.Xmin, h.XIDAge, ageText(h.AgeSeconds), short(h.Detail)),
			Runbook: "/runbook/verification", Actions: actions})
	}
	for _, tb := range r.Tables {
		if t.DeadTuples <= 0 || tb.DeadTuples < t.DeadTuples {
			continue
		}
		add(Finding{Code: CodeDeadTuples, Severity: SeverityWarning,
			Title:   fmt.Sprintf("Table %s has %d dead rows", tb.Table, tb.DeadTuples),
			Subject: map[string]any{"table": tb.Schema + "." + tb.Table, "n_dead_tup": tb.DeadTuples, "dead_ratio": round3(tb.DeadRatio)},
			Evidence: fmt.Sprintf("table_vacuum: %s.%s has %d dead and %d live rows; last autovacuum %s, last vacuum %s",
				tb.Schema, tb.Table, tb.DeadTuples, tb.LiveTuples, timeText(tb.LastAutovacuum), timeText(tb.LastVacuum)),
			Runbook: "/runbook/verification", Actions: []string{}})
	}
	for _, ix := range r.Invalid {
		add(Finding{Code: CodeIndexInvalid, Severity: SeverityWarning,
			Title:    fmt.Sprintf("Index %s is invalid", ix.Index),
			Subject:  map[string]any{"index": ix.Schema + "." + ix.Index, "table": ix.Table},
			Evidence: fmt.Sprintf("invalid_indexes: %s.%s on %s (valid %t, ready %t): %s", ix.Schema, ix.Index, ix.Table, ix.Valid, ix.Ready, ix.Definition),
			Runbook:  "/runbook/verification", Actions: []string{}})
	}
	if n := r.Notify; n != nil && t.NotifyQueueUsage > 0 && n.Usage >= t.NotifyQueueUsage {
		sev := SeverityWarning
		if n.Usage >= 0.9 {
			sev = SeverityCritical
		}
		add(Finding{Code: CodeNotifyQueueUsage, Severity: sev,
			Title:    fmt.Sprintf("NOTIFY queue %.0f%% full", n.Usage*100),
			Subject:  map[string]any{"fraction": n.Usage},
			Evidence: fmt.Sprintf("notify_queue: pg_notification_queue_usage() = %.3f; a listener in a long transaction stops the queue from draining", n.Usage),
			Runbook:  "/runbook/rb-p", Actions: []string{}})
	}

	rank := map[string]int{SeverityCritical: 0, SeverityWarning: 1, SeverityInfo: 2}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].Severity] < rank[out[j].Severity] })
	if out == nil {
		out = []Finding{}
	}
	return out
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func seconds(s float64) string {
	return (time.Duration(s*10) * time.Second / 10).Round(100 * time.Millisecond).String()
}

func ageText(s *float64) string {
	if s == nil {
		return ""
	}
	return ", transaction " + seconds(*s) + " old"
}

func lagText(s *float64) string {
	if s == nil {
		return "unknown"
	}
	return seconds(*s)
}

func sizeText(n *int64) string {
	if n == nil {
		return "unlimited"
	}
	return FormatBytes(float64(*n))
}

func timeText(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

func activeText(a bool) string {
	if a {
		return "active"
	}
	return "inactive"
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func short(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 160 {
		return q[:157] + "..."
	}
	return q
}
