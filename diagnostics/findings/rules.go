package findings

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
)

// Names of the actions findings suggest, as the actions package registers
// them. diagnostics cannot import actions (actions imports diagnostics), so
// a test of the web package, which imports both, checks that each one is a
// registered action.
const (
	ActionBackendCancel      = "backend.cancel"
	ActionBackendTerminate   = "backend.terminate"
	ActionQueueResume        = "queue.resume"
	ActionQueueThrottle      = "queue.throttle"
	ActionTenantThrottle     = "tenant.throttle"
	ActionLeaseExpire        = "lease.expire"
	ActionDeadLettersRequeue = "deadletters.requeue"
	ActionRelayResume        = "relay.resume"
	ActionRelayThrottle      = "relay.throttle"
	ActionOutboxRequeue      = "outbox.requeue"
	ActionPreparedRollback   = "prepared_xact.rollback"
	ActionRiverRetry         = "river.retry"
	ActionRiverCancel        = "river.cancel"
	ActionRiverQueueResume   = "river.queue_resume"
)

// Rule turns the evidence of a round into the findings of one code. A
// rule's findings link to its Runbook page and suggest only actions from
// its Actions.
type Rule struct {
	Code string
	// Runbook is the runbook page its findings link to (a Step or Runbook
	// constant); empty for CodeUnavailable, whose findings link to the step
	// of the check that failed.
	Runbook string
	// AlsoRunbooks are the other pages some of its findings link to
	// instead (a prepared transaction blocking others links to the
	// prepared-transaction runbook, not the blocking step).
	AlsoRunbooks []string
	// Actions are every action its findings may suggest, in the order they
	// are offered.
	Actions []string

	// Exactly one of these is set. eval looks at the whole round; perQueue
	// and perSlot are asked about one queue or slot at a time, and the
	// findings of consecutive per-queue (per-slot) rules are grouped by
	// queue (slot).
	eval     func(r diagnostics.Round, t diagnostics.Thresholds) []Finding
	perQueue func(r diagnostics.Round, t diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool)
	perSlot  func(r diagnostics.Round, t diagnostics.Thresholds, s diagnostics.Slot) (Finding, bool)
}

// rules is every finding code's rule, in the order findings of equal
// severity are listed.
var rules = []Rule{
	{Code: CodeUnavailable, eval: unavailableFindings},
	{Code: CodeRootBlocker, Runbook: diagnostics.StepBlocking, AlsoRunbooks: []string{diagnostics.RunbookPreparedXact},
		Actions: []string{ActionBackendCancel, ActionBackendTerminate, ActionPreparedRollback}, eval: rootBlockerFindings},
	{Code: CodeIdleInTransaction, Runbook: diagnostics.RunbookPoolWait, Actions: []string{ActionBackendTerminate}, eval: idleInTransactionFindings},
	{Code: CodeLongRunning, Runbook: diagnostics.StepActivity, Actions: []string{ActionBackendCancel, ActionBackendTerminate}, eval: longRunningFindings},
	{Code: CodeQueuePaused, Runbook: diagnostics.StepQueues, Actions: []string{ActionQueueResume}, perQueue: queuePausedFinding},
	{Code: CodeQueueBacklog, Runbook: diagnostics.StepQueues, Actions: []string{ActionQueueThrottle, ActionQueueResume}, perQueue: queueBacklogFinding},
	{Code: CodeTenantStarvation, Runbook: diagnostics.RunbookTenantStarvation, Actions: []string{ActionTenantThrottle}, eval: tenantStarvationFindings},
	{Code: CodeExpiredLeases, Runbook: diagnostics.RunbookExpiredLeases, Actions: []string{ActionLeaseExpire}, perQueue: expiredLeasesFinding},
	{Code: CodeDeadLetters, Runbook: diagnostics.RunbookDeadLetters, Actions: []string{ActionDeadLettersRequeue}, perQueue: deadLettersFinding},
	{Code: CodeWorkersNoneAlive, Runbook: diagnostics.StepQueues, perQueue: workersNoneAliveFinding},
	{Code: CodeOutboxBacklog, Runbook: diagnostics.RunbookOutboxLag, Actions: []string{ActionRelayThrottle, ActionRelayResume}, eval: outboxBacklogFindings},
	{Code: CodeOutboxDead, Runbook: diagnostics.StepOutbox, Actions: []string{ActionOutboxRequeue}, eval: outboxDeadFindings},
	{Code: CodeReplicationLag, Runbook: diagnostics.RunbookReplication, eval: replicationLagFindings},
	{Code: CodeStandbyReceiver, Runbook: diagnostics.RunbookReplication, eval: standbyReceiverFindings},
	{Code: CodeReplayPaused, Runbook: diagnostics.RunbookReplication, eval: replayPausedFindings},
	{Code: CodeSlotRetention, Runbook: diagnostics.RunbookSlotRetention, perSlot: slotRetentionFinding},
	{Code: CodeSlotInactive, Runbook: diagnostics.RunbookSlotRetention, perSlot: slotInactiveFinding},
	{Code: CodeSlotDiskForecast, Runbook: diagnostics.RunbookSlotRetention, perSlot: slotDiskForecastFinding},
	{Code: CodeWALRateHigh, Runbook: diagnostics.RunbookWALStorm, Actions: []string{ActionQueueThrottle}, eval: walRateFindings},
	{Code: CodeArchiverFailing, Runbook: diagnostics.RunbookReplication, eval: archiverFindings},
	{Code: CodeArchiverBacklog, Runbook: diagnostics.RunbookReplication, eval: archiverBacklogFindings},
	{Code: CodeArchiverNotConfigured, Runbook: diagnostics.RunbookReplication, eval: archiverNotConfiguredFindings},
	{Code: CodeArchiverStalled, Runbook: diagnostics.RunbookReplication, eval: archiverStalledFindings},
	{Code: CodePreparedXactOld, Runbook: diagnostics.RunbookPreparedXact, eval: preparedXactFindings},
	{Code: CodeXminHorizon, Runbook: diagnostics.StepVerification, Actions: []string{ActionBackendTerminate}, eval: xminHorizonFindings},
	{Code: CodeDeadTuples, Runbook: diagnostics.StepVerification, eval: deadTuplesFindings},
	{Code: CodeIndexInvalid, Runbook: diagnostics.StepVerification, eval: invalidIndexFindings},
	{Code: CodeNotifyQueueUsage, Runbook: diagnostics.RunbookNotify, eval: notifyQueueFindings},
	{Code: CodeConnections, Runbook: diagnostics.RunbookPoolWait, eval: connectionFindings},
	{Code: CodeSequence, Runbook: diagnostics.StepVerification, eval: sequenceFindings},
	{Code: CodeWraparound, Runbook: diagnostics.StepVerification, eval: wraparoundFindings},
	{Code: CodeIdempotencyStuck, Runbook: diagnostics.StepEntry, eval: idempotencyStuckFindings},
	{Code: CodeLongRunningJob, Runbook: diagnostics.RunbookExpiredLeases, eval: longRunningJobFindings},
	{Code: CodeCheckpoints, Runbook: diagnostics.StepResources, eval: checkpointFindings},
	{Code: CodeStandbyConflicts, Runbook: diagnostics.RunbookReplication, eval: standbyConflictFindings},
	{Code: CodeEngineErrors, Runbook: diagnostics.StepResources, eval: engineErrorFindings},
	{Code: CodeWALDir, Runbook: diagnostics.RunbookSlotRetention, eval: walDirFindings},
	{Code: CodeDeadlocks, Runbook: diagnostics.StepBlocking, eval: deadlockFindings},
	{Code: CodeRepeatBlocker, Runbook: diagnostics.StepBlocking, eval: repeatBlockerFindings},
	{Code: CodeRiverNoLeader, Runbook: diagnostics.RunbookRiver, eval: riverNoLeaderFindings},
	{Code: CodeRiverStuckRunning, Runbook: diagnostics.RunbookRiver, Actions: []string{ActionRiverCancel}, eval: riverStuckFindings},
	{Code: CodeRiverDiscardBurst, Runbook: diagnostics.RunbookRiver, Actions: []string{ActionRiverRetry}, eval: riverDiscardFindings},
	{Code: CodeRiverBacklog, Runbook: diagnostics.RunbookRiver, Actions: []string{ActionRiverQueueResume}, eval: riverBacklogFindings},
	{Code: CodeRiverQueuePaused, Runbook: diagnostics.RunbookRiver, Actions: []string{ActionRiverQueueResume}, eval: riverPausedFindings},
	{Code: CodeEngineStalled, Runbook: diagnostics.StepBlocking, AlsoRunbooks: []string{diagnostics.RunbookPreparedXact},
		Actions: []string{ActionBackendCancel, ActionBackendTerminate, ActionPreparedRollback}, eval: engineStalledFindings},
}

// Rules lists the rule of every finding code, in listing order. The slice
// is a copy.
func Rules() []Rule { return append([]Rule(nil), rules...) }

// Evaluate turns a round into findings, worst first. It is pure: the same
// round and thresholds give the same findings.
func Evaluate(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	out := []Finding{}
	add := func(rule Rule, f Finding) {
		f.Code = rule.Code
		if f.Runbook == "" {
			f.Runbook = diagnostics.RunbookURL(rule.Runbook)
		}
		if f.Actions == nil {
			f.Actions = []string{}
		}
		if f.Subject == nil {
			f.Subject = map[string]any{}
		}
		out = append(out, f)
	}
	for i := 0; i < len(rules); {
		j := i + 1
		for j < len(rules) && rules[i].per() != "round" && rules[j].per() == rules[i].per() {
			j++
		}
		switch {
		case rules[i].perQueue != nil:
			eachItem(r.Queues, rules[i:j], add, func(rule Rule, q diagnostics.QueueStat) (Finding, bool) { return rule.perQueue(r, t, q) })
		case rules[i].perSlot != nil:
			eachItem(r.Slots, rules[i:j], add, func(rule Rule, s diagnostics.Slot) (Finding, bool) { return rule.perSlot(r, t, s) })
		default:
			for _, f := range rules[i].eval(r, t) {
				add(rules[i], f)
			}
		}
		i = j
	}
	rank := map[string]int{SeverityCritical: 0, SeverityWarning: 1, SeverityInfo: 2}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].Severity] < rank[out[j].Severity] })
	return out
}

// per says what the rule is asked about: the whole round, one queue or one
// slot.
func (r Rule) per() string {
	switch {
	case r.perQueue != nil:
		return "queue"
	case r.perSlot != nil:
		return "slot"
	}
	return "round"
}

// eachItem asks a run of per-item rules about each item in turn, so the
// findings about one queue (slot) stay together.
func eachItem[X any](items []X, run []Rule, add func(Rule, Finding), ask func(Rule, X) (Finding, bool)) {
	for _, item := range items {
		for _, rule := range run {
			if f, ok := ask(rule, item); ok {
				add(rule, f)
			}
		}
	}
}

// unavailableFindings: a check that failed or timed out, linked to the
// runbook step the check is evidence for.
func unavailableFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, u := range r.Unavailable {
		subj := map[string]any{"check": u.Check, "status": u.Status, "timed_out": u.TimedOut}
		if len(u.LockedBy) > 0 {
			subj["locked_by"] = u.LockedBy
		}
		ev := fmt.Sprintf("%s: %s", u.Check, u.Status)
		if u.Err != nil && !strings.Contains(u.Status, u.Err.Error()) {
			ev += " (" + u.Err.Error() + ")"
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("Check %s could not run", u.Check),
			Subject: subj, Evidence: ev, Runbook: diagnostics.RunbookURL(stepOf(u.Check))})
	}
	return out
}

// stepOf is the runbook step of a check named in Unavailable ("connect"
// and the like fall back to the activity step).
func stepOf(check string) string {
	name, _, _ := strings.Cut(check, " ")
	if c, ok := diagnostics.CheckNamed(name); ok {
		return c.Step
	}
	return diagnostics.StepActivity
}

// rootBlockerFindings: a root blocker others have waited behind for
// RootBlockerWait, with RootActions. The finding says what the root holds
// that its waiters want, names the head of a lock queue (a request that
// waits while others queue behind it) and lists the jobs waiting in its
// branch.
func rootBlockerFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for i, n := range r.Blocking {
		if !n.IsRoot || n.BlockedCount == 0 || n.MaxWaitSeconds < t.RootBlockerWait.Seconds() {
			continue
		}
		branch := diagnostics.Subtree(r.Blocking, i)
		if n.IsPrepared() {
			out = append(out, preparedRootFinding(n, branch, r.BlockedJobs))
			continue
		}
		subj := map[string]any{"pid": n.PID, "blocked_count": n.BlockedCount, "wait_seconds": round1(n.MaxWaitSeconds),
			"state": n.State, "application_name": n.ApplicationName, "xact_age_seconds": round1(n.XactAgeSeconds)}
		if n.JobID != nil {
			subj["job_id"] = *n.JobID
		}
		if n.RiverJobID != nil {
			subj["river_job_id"] = *n.RiverJobID
		}
		out = append(out, Finding{Severity: SeverityCritical,
			Title:   fmt.Sprintf("pid %d blocks %d %s", n.PID, n.BlockedCount, plural(n.BlockedCount, "backend", "backends")),
			Subject: chainSubject(subj, n, branch, r.BlockedJobs),
			Evidence: fmt.Sprintf("%s: root pid %d (%s, application %q, transaction %s old) blocks %d; the longest has waited %s%s; query: %s",
				diagnostics.CheckBlockingTree, n.PID, n.State, n.ApplicationName, seconds(n.XactAgeSeconds), n.BlockedCount, seconds(n.MaxWaitSeconds),
				chainEvidence(n, branch, r.BlockedJobs), short(n.Query)),
			Actions: RootActions(n)})
	}
	return out
}

// chainSubject adds to a root finding's subject what is locked and how
// (lock_type, lock_target, mode_held, mode_wanted), the head of a lock
// queue in its branch (queue_head) and the jobs waiting there (jobs, each
// with its page's url).
func chainSubject(subj map[string]any, root diagnostics.BlockingNode, branch []diagnostics.BlockingNode, known []diagnostics.BlockedJob) map[string]any {
	subj["lock_type"], subj["lock_target"] = root.LockType, root.LockTarget
	subj["mode_held"], subj["mode_wanted"] = root.ModeHeld, root.ModeWanted
	if head, ok := queueHead(branch); ok {
		subj["queue_head"] = map[string]any{"pid": head.PID, "statement": statementHead(head.Query),
			"mode_wanted": head.ModeWanted, "lock_target": head.LockTarget, "blocked_count": head.BlockedCount}
	}
	if jobs := jobsBehind(branch, known); len(jobs) > 0 {
		subj["jobs"] = jobs
	}
	var riverIDs []int64
	for _, n := range branch {
		if n.RiverJobID != nil && n.PID != root.PID {
			riverIDs = append(riverIDs, *n.RiverJobID)
		}
	}
	if len(riverIDs) > 0 {
		subj["river_jobs_waiting"] = riverIDs
	}
	return subj
}

// chainEvidence is the evidence's account of the chain, each part led by
// "; ": the lock, the queue head, the jobs.
func chainEvidence(root diagnostics.BlockingNode, branch []diagnostics.BlockingNode, known []diagnostics.BlockedJob) string {
	var b strings.Builder
	if l := root.LockText(); l != "" {
		b.WriteString("; it " + l)
	}
	if head, ok := queueHead(branch); ok {
		b.WriteString("; " + queueHeadText(root, head, branch))
	}
	if jobs := jobsBehind(branch, known); len(jobs) > 0 {
		fmt.Fprintf(&b, "; %d %s wait behind it: %s", len(jobs), plural(len(jobs), "job", "jobs"), jobsBehindText(jobs))
	}
	b.WriteString(riverJobsText(root, branch))
	return b.String()
}

// preparedRootFinding: a prepared transaction at the root of the tree. No
// process holds its locks, so there is nothing to cancel or terminate: only
// COMMIT PREPARED or ROLLBACK PREPARED by gid releases them, and the
// finding links the prepared-transaction runbook.
func preparedRootFinding(n diagnostics.BlockingNode, branch []diagnostics.BlockingNode, known []diagnostics.BlockedJob) Finding {
	subj := map[string]any{"gid": n.GID, "blocked_count": n.BlockedCount, "wait_seconds": round1(n.MaxWaitSeconds),
		"owner": n.Owner, "database": n.Database, "age_seconds": round1(n.XactAgeSeconds)}
	if n.PreparedAt != nil {
		subj["prepared_at"] = n.PreparedAt.UTC()
	}
	return Finding{Severity: SeverityCritical,
		Title:   fmt.Sprintf("Prepared transaction %q blocks %d %s", n.GID, n.BlockedCount, plural(n.BlockedCount, "backend", "backends")),
		Subject: chainSubject(subj, n, branch, known),
		Evidence: fmt.Sprintf("%s: prepared transaction %q (prepared at %s by %s in %s, %s old) holds locks %d %s wait for; the longest has waited %s%s; no process holds it, only COMMIT/ROLLBACK PREPARED releases it",
			diagnostics.CheckBlockingTree, n.GID, timeText(n.PreparedAt), n.Owner, databaseText(n.Database), seconds(n.XactAgeSeconds), n.BlockedCount,
			plural(n.BlockedCount, "backend", "backends"), seconds(n.MaxWaitSeconds), chainEvidence(n, branch, known)),
		Runbook: diagnostics.RunbookURL(diagnostics.RunbookPreparedXact),
		Actions: RootActions(n)}
}

// idleInTransaction reports whether a session counts as idle in
// transaction for the thresholds.
func idleInTransaction(it diagnostics.IdleTx, t diagnostics.Thresholds) bool {
	return it.IdleSeconds >= t.IdleInTransaction.Seconds()
}

// idleInTransactionFindings: a session idle in an open transaction for
// IdleInTransaction.
func idleInTransactionFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, it := range r.IdleTx {
		if !idleInTransaction(it, t) {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("pid %d idle in transaction for %s", it.PID, seconds(it.IdleSeconds)),
			Subject: map[string]any{"pid": it.PID, "seconds": round1(it.IdleSeconds), "application_name": it.ApplicationName, "xact_age_seconds": round1(it.XactAgeSeconds)},
			Evidence: fmt.Sprintf("%s: pid %d (%s, application %q) idle %s in a transaction %s old; last query: %s",
				diagnostics.CheckIdleInTransaction, it.PID, it.State, it.ApplicationName, seconds(it.IdleSeconds), seconds(it.XactAgeSeconds), short(it.LastQuery)),
			Actions: []string{ActionBackendTerminate}})
	}
	return out
}

// longRunningFindings: a client transaction open for LongRunningTx, whether
// it runs a statement or pauses between two, unless it has been idle long
// enough for tx.idle_in_transaction (that finding says more, and a session
// is reported once for its open transaction).
func longRunningFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	idle := map[int32]bool{}
	for _, it := range r.IdleTx {
		if idleInTransaction(it, t) {
			idle[it.PID] = true
		}
	}
	var out []Finding
	for _, b := range r.Activity {
		if b.BackendType != "client backend" || b.XactStart == nil || idle[b.PID] || b.XactAgeSeconds < t.LongRunningTx.Seconds() {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("pid %d has a transaction open for %s", b.PID, seconds(b.XactAgeSeconds)),
			Subject: map[string]any{"pid": b.PID, "seconds": round1(b.XactAgeSeconds), "state": b.State, "application_name": b.ApplicationName},
			Evidence: fmt.Sprintf("%s: pid %d (%s, application %q, wait %s) transaction %s old, statement %s old: %s",
				diagnostics.CheckActivity, b.PID, b.State, b.ApplicationName, nonEmpty(b.WaitEvent, "none"), seconds(b.XactAgeSeconds), seconds(b.QueryAgeSeconds), short(b.Query)),
			Actions: []string{ActionBackendCancel, ActionBackendTerminate}})
	}
	return out
}

// queuePausedFinding: an operator paused the queue.
func queuePausedFinding(_ diagnostics.Round, _ diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool) {
	if !q.Paused {
		return Finding{}, false
	}
	return Finding{Severity: SeverityInfo,
		Title:   fmt.Sprintf("Queue %s is paused", q.Queue),
		Subject: map[string]any{"queue": q.Queue, "ready": q.Ready, "updated_by": q.SettingsUpdatedBy},
		Evidence: fmt.Sprintf("%s: queue_settings.paused for %s (by %q); %d ready jobs wait",
			diagnostics.CheckQueueHealth, q.Queue, q.SettingsUpdatedBy, q.Ready),
		Actions: []string{ActionQueueResume}}, true
}

// queueBacklogFinding: the oldest ready job waited QueueBacklogAge, or
// QueueBacklogReady jobs are ready. A paused queue is resumed, not
// throttled.
func queueBacklogFinding(_ diagnostics.Round, t diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool) {
	backlog := q.OldestReadySeconds >= t.QueueBacklogAge.Seconds() || (t.QueueBacklogReady > 0 && q.Ready >= t.QueueBacklogReady)
	if q.Ready <= 0 || !backlog {
		return Finding{}, false
	}
	actions := []string{ActionQueueThrottle}
	if q.Paused {
		actions = []string{ActionQueueResume}
	}
	return Finding{Severity: SeverityWarning,
		Title:   fmt.Sprintf("Queue %s: %d ready, oldest waiting %s", q.Queue, q.Ready, seconds(q.OldestReadySeconds)),
		Subject: map[string]any{"queue": q.Queue, "ready": q.Ready, "oldest_ready_seconds": round1(q.OldestReadySeconds)},
		Evidence: fmt.Sprintf("%s: %d ready jobs in %s, the oldest available for %s; %d running",
			diagnostics.CheckQueueHealth, q.Ready, q.Queue, seconds(q.OldestReadySeconds), q.Running),
		Actions: actions}, true
}

// expiredLeasesFinding: ExpiredLeases running jobs hold an expired lease
// (warning). A worker serving the queue that was found dead within
// recentReclaim had its running jobs taken back without waiting for their
// leases: the evidence says so, and without expired leases it is a finding
// of its own (info), so the on-call engineer sees why jobs restarted. A
// zero threshold turns off both.
func expiredLeasesFinding(r diagnostics.Round, t diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool) {
	if t.ExpiredLeases <= 0 {
		return Finding{}, false
	}
	reclaimed := recentReclaims(r, q.Queue)
	if q.ExpiredLeases >= t.ExpiredLeases {
		return Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("Queue %s: %d running jobs with expired leases", q.Queue, q.ExpiredLeases),
			Subject: map[string]any{"queue": q.Queue, "count": q.ExpiredLeases, "reclaimed_workers": len(reclaimed)},
			Evidence: fmt.Sprintf("%s: %d of %d running jobs in %s have lease_until in the past (oldest %s); their workers crashed, stalled or cannot renew%s",
				diagnostics.CheckQueueHealth, q.ExpiredLeases, q.Running, q.Queue, timeText(q.OldestExpiredLease), reclaimText(reclaimed)),
			Actions: []string{ActionLeaseExpire}}, true
	}
	if len(reclaimed) == 0 {
		return Finding{}, false
	}
	jobs := 0
	for _, w := range reclaimed {
		jobs += w.ReclaimedJobs
	}
	return Finding{Severity: SeverityInfo,
		Title:   fmt.Sprintf("Queue %s: a dead worker's %d running jobs were reclaimed early", q.Queue, jobs),
		Subject: map[string]any{"queue": q.Queue, "count": 0, "reclaimed_workers": len(reclaimed), "reclaimed_jobs": jobs},
		Evidence: fmt.Sprintf("%s: no running job of %s holds an expired lease%s",
			diagnostics.CheckWorkers, q.Queue, reclaimText(reclaimed))}, true
}

// recentReclaim is how long a worker found dead stays in the expired-leases
// finding of its queues.
const recentReclaim = 15 * time.Minute

// recentReclaims are the workers serving queue that were found dead within
// recentReclaim of the round.
func recentReclaims(r diagnostics.Round, queue string) []diagnostics.Worker {
	var out []diagnostics.Worker
	for _, w := range r.Workers {
		if w.ReclaimedAt != nil && r.At.Sub(*w.ReclaimedAt) <= recentReclaim && w.Serves(queue) {
			out = append(out, w)
		}
	}
	return out
}

// reclaimText says which dead workers' jobs were reclaimed early, and when.
func reclaimText(ws []diagnostics.Worker) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "; worker %s (%s, pid %d) was found dead at %s (heartbeat stale, its session gone from the server) and its %d running jobs were reclaimed then, without waiting for their leases",
			w.ID, w.Host, w.PID, w.ReclaimedAt.UTC().Format(time.RFC3339), w.ReclaimedJobs)
	}
	return b.String()
}

// deadLettersFinding: DeadLetters jobs of the queue died within
// DeadLetterWindow; the subject names the error class most of them share.
func deadLettersFinding(r diagnostics.Round, t diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool) {
	if t.DeadLetters <= 0 || q.DeadRecent < t.DeadLetters {
		return Finding{}, false
	}
	var top diagnostics.DeadLetterGroup
	found := false
	for _, g := range r.DeadLetters {
		if g.Queue == q.Queue && (!found || g.DeadRecent > top.DeadRecent) {
			top, found = g, true
		}
	}
	return Finding{Severity: SeverityWarning,
		Title:   fmt.Sprintf("Queue %s: %d jobs died in the last %s", q.Queue, q.DeadRecent, t.DeadLetterWindow),
		Subject: map[string]any{"queue": q.Queue, "count": q.DeadRecent, "error_class": top.ErrorClass, "error_class_count": top.DeadRecent, "window_seconds": t.DeadLetterWindow.Seconds()},
		Evidence: fmt.Sprintf("%s: %d dead in %s within %s (%d in total); %s; classify before requeueing",
			diagnostics.CheckDeadLetters, q.DeadRecent, q.Queue, t.DeadLetterWindow, q.Dead, topClassText(top, found)),
		Actions: []string{ActionDeadLettersRequeue}}, true
}

// topClassText says which error class most of a queue's recent dead jobs
// share, or that none is known, never `class "" with 0`.
func topClassText(top diagnostics.DeadLetterGroup, found bool) string {
	switch {
	case !found || top.DeadRecent == 0:
		return "their error classes are not known yet (the dead-letter groups have not counted them); the dead letters page lists them"
	case top.ErrorClass == "":
		return fmt.Sprintf("most (%d) died without an error class", top.DeadRecent)
	}
	return fmt.Sprintf("top error class %q with %d", top.ErrorClass, top.DeadRecent)
}

// workersNoneAliveFinding: a queue that is not paused has ready jobs and no
// worker serving it heartbeated within WorkerHeartbeat (only when the
// workers check ran).
func workersNoneAliveFinding(r diagnostics.Round, t diagnostics.Thresholds, q diagnostics.QueueStat) (Finding, bool) {
	if q.Ready <= 0 || q.Paused || r.Workers == nil {
		return Finding{}, false
	}
	for _, w := range r.Workers {
		if w.Alive && w.Serves(q.Queue) {
			return Finding{}, false
		}
	}
	return Finding{Severity: SeverityCritical,
		Title:   fmt.Sprintf("Queue %s has ready jobs and no live worker", q.Queue),
		Subject: map[string]any{"queue": q.Queue, "ready": q.Ready},
		Evidence: fmt.Sprintf("%s: no worker serving %s heartbeated within %s (%d registered); %d jobs ready",
			diagnostics.CheckWorkers, q.Queue, t.WorkerHeartbeat, len(r.Workers), q.Ready)}, true
}

// outboxBacklogFindings: the oldest undelivered event (ready now, waiting
// in retry backoff or in flight) was created OutboxBacklogAge ago, or
// OutboxBacklogPending events are undelivered. A paused relay is resumed,
// not throttled. Events the broker accepted that the relay did not mark
// are named in the evidence: they will be delivered twice.
func outboxBacklogFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	o := r.Outbox
	if o == nil {
		return nil
	}
	undelivered := o.Pending + o.PendingLater + o.Inflight
	if undelivered <= 0 {
		return nil
	}
	if o.OldestPendingSeconds < t.OutboxBacklogAge.Seconds() && (t.OutboxBacklogPending <= 0 || undelivered < t.OutboxBacklogPending) {
		return nil
	}
	actions := []string{ActionRelayThrottle}
	if o.RelayPaused {
		actions = []string{ActionRelayResume}
	}
	subj := map[string]any{"pending": o.Pending, "pending_later": o.PendingLater, "inflight": o.Inflight,
		"oldest_pending_seconds": round1(o.OldestPendingSeconds), "relay_paused": o.RelayPaused, "accepted_unmarked": o.AcceptedUnmarked}
	accepted := ""
	if o.AcceptedUnmarked > 0 {
		subj["accepted_unmarked_ids"] = o.AcceptedUnmarkedIDs
		accepted = fmt.Sprintf("; %d accepted by the broker but not marked published (the oldest accepted at %s; ids %s): their relay's mark failed or it died before marking, and they will be published again, so consumers see them twice unless they dedupe on the event id",
			o.AcceptedUnmarked, timeText(o.OldestAcceptedAt), idList(o.AcceptedUnmarkedIDs, o.AcceptedUnmarked))
	}
	return []Finding{{Severity: SeverityWarning,
		Title:   fmt.Sprintf("Outbox: %d undelivered, oldest %s", undelivered, seconds(o.OldestPendingSeconds)),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %d events ready and %d waiting in retry backoff, the oldest created %s ago; %d in flight (%d expired leases); relay paused: %t%s",
			diagnostics.CheckOutboxHealth, o.Pending, o.PendingLater, seconds(o.OldestPendingSeconds), o.Inflight, o.ExpiredLeases, o.RelayPaused, accepted),
		Actions: actions}}
}

// outboxDeadFindings: OutboxDead events exhausted their attempts.
func outboxDeadFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	o := r.Outbox
	if o == nil || t.OutboxDead <= 0 || o.Dead < t.OutboxDead {
		return nil
	}
	return []Finding{{Severity: SeverityWarning,
		Title:    fmt.Sprintf("Outbox: %d dead events", o.Dead),
		Subject:  map[string]any{"count": o.Dead},
		Evidence: fmt.Sprintf("%s: %d events exhausted their attempts (last at %s)", diagnostics.CheckOutboxHealth, o.Dead, timeText(o.LastDeadAt)),
		Actions:  []string{ActionOutboxRequeue}}}
}

// replicationLagFindings: a standby replays ReplicationLagBytes or
// ReplicationLagTime behind, as the primary sees it or as the standby
// itself says.
func replicationLagFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	behind := func(bytes int64, secs float64) bool {
		return bytes >= t.ReplicationLagBytes || (t.ReplicationLagTime > 0 && secs >= t.ReplicationLagTime.Seconds())
	}
	var out []Finding
	for _, s := range r.Replication {
		secs := 0.0
		if s.ReplayLagSeconds != nil {
			secs = *s.ReplayLagSeconds
		}
		if !behind(s.ReplayLagBytes, secs) {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("Standby %s replays %s behind", nonEmpty(s.ApplicationName, s.ClientAddr), humanize.Bytes(float64(s.ReplayLagBytes))),
			Subject: map[string]any{"application_name": s.ApplicationName, "replay_lag_bytes": s.ReplayLagBytes, "replay_lag_seconds": round1(secs), "sync_state": s.SyncState, "client_addr": s.ClientAddr},
			Evidence: fmt.Sprintf("%s: %s (%s, %s) sent %s / flushed %s / replayed %s behind; replay_lag %s",
				diagnostics.CheckReplication, nonEmpty(s.ApplicationName, "?"), s.State, s.SyncState, humanize.Bytes(float64(s.SentLagBytes)), humanize.Bytes(float64(s.FlushLagBytes)),
				humanize.Bytes(float64(s.ReplayLagBytes)), lagText(s.ReplayLagSeconds))})
	}
	for _, s := range r.Standbys {
		lag, title := s.ReplayLagBytes, "Standby %s has received %s it has not replayed"
		if s.PrimaryLagBytes != nil {
			lag, title = *s.PrimaryLagBytes, "Standby %s replays %s behind the primary"
		}
		if !s.InRecovery || !behind(lag, s.ReplayDelaySeconds) {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf(title, s.URL, humanize.Bytes(float64(lag))),
			Subject: map[string]any{"application_name": "standby " + s.URL, "standby": s.URL, "replay_lag_bytes": lag, "received_not_replayed_bytes": s.ReplayLagBytes, "replay_lag_seconds": round1(s.ReplayDelaySeconds), "paused": s.Paused()},
			Evidence: fmt.Sprintf("%s on %s: %s behind the primary's position of this round; received %s, replayed %s (%s received and not replayed), last replayed commit %s; replay %s; receiver %s",
				diagnostics.CheckStandbyStatus, s.URL, sizeText(s.PrimaryLagBytes), s.ReceiveLSN, s.ReplayLSN, humanize.Bytes(float64(s.ReplayLagBytes)), timeText(s.LastReplayAt), nonEmpty(s.ReplayPauseState, "?"), nonEmpty(s.ReceiverStatus, "not running"))})
	}
	return out
}

// standbyReceiverFindings: a standby whose WAL receiver is not streaming
// (stopped, restarting or waiting): it falls further behind with every
// write on the primary.
func standbyReceiverFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, s := range r.Standbys {
		if !s.InRecovery || s.ReceiverStatus == "streaming" {
			continue
		}
		subj := map[string]any{"standby": s.URL, "receiver_status": nonEmpty(s.ReceiverStatus, "not running")}
		if s.PrimaryLagBytes != nil {
			subj["replay_lag_bytes"] = *s.PrimaryLagBytes
		}
		out = append(out, Finding{Severity: SeverityCritical,
			Title:   fmt.Sprintf("Standby %s is not streaming WAL (receiver %s)", s.URL, nonEmpty(s.ReceiverStatus, "not running")),
			Subject: subj,
			Evidence: fmt.Sprintf("%s on %s: pg_stat_wal_receiver status %s (sender %s:%d, slot %q, last message %s); received %s, replayed %s, %s behind the primary",
				diagnostics.CheckStandbyStatus, s.URL, nonEmpty(s.ReceiverStatus, "none: no WAL receiver runs"), nonEmpty(s.SenderHost, "?"), s.SenderPort, s.SlotName,
				timeText(s.LastMsgReceiptTime), nonEmpty(s.ReceiveLSN, "nothing"), nonEmpty(s.ReplayLSN, "nothing"), sizeText(s.PrimaryLagBytes))})
	}
	return out
}

// replayPausedFindings: replay on a standby is paused (or a pause was
// requested): queries there see older and older data, whatever its lag.
func replayPausedFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, s := range r.Standbys {
		if !s.InRecovery || !s.Paused() {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("Replay is paused on standby %s", s.URL),
			Subject: map[string]any{"standby": s.URL, "replay_pause_state": s.ReplayPauseState},
			Evidence: fmt.Sprintf("%s on %s: pg_get_wal_replay_pause_state() = %s; last replayed commit %s; pg_wal_replay_resume() on the standby resumes it",
				diagnostics.CheckStandbyStatus, s.URL, s.ReplayPauseState, timeText(s.LastReplayAt))})
	}
	return out
}

// slotRetentionFinding: a slot keeps SlotRetentionBytes of WAL, or it is
// near its end whatever it retains: max_slot_wal_keep_size invalidates it
// within SlotExhaustion at the current WAL rate, or its wal_status is
// extended or unreserved with less than SlotRetentionBytes of safe_wal_size
// left, or it is lost already. Critical when lost, unreserved or near by
// time. With max_slot_wal_keep_size = -1 only the WAL disk bounds the slot:
// the evidence gives the size of pg_wal and the rate it grows at.
func slotRetentionFinding(r diagnostics.Round, t diagnostics.Thresholds, s diagnostics.Slot) (Finding, bool) {
	lost := s.WALStatus == "lost" || s.InvalidationReason != ""
	soon := s.SecondsToExhaustion != nil && t.SlotExhaustion > 0 && *s.SecondsToExhaustion < t.SlotExhaustion.Seconds()
	thin := (s.WALStatus == "extended" || s.WALStatus == "unreserved") && s.SafeWALSize != nil && *s.SafeWALSize < t.SlotRetentionBytes
	if s.RetainedBytes < t.SlotRetentionBytes && !lost && !soon && !thin {
		return Finding{}, false
	}
	sev := SeverityWarning
	if lost || soon || s.WALStatus == "unreserved" {
		sev = SeverityCritical
	}
	subj := map[string]any{"slot_name": s.SlotName, "retained_bytes": s.RetainedBytes, "wal_status": s.WALStatus, "active": s.Active, "slot_type": s.SlotType}
	if s.SafeWALSize != nil {
		subj["safe_wal_size"] = *s.SafeWALSize
	}
	if s.SecondsToExhaustion != nil {
		subj["seconds_to_exhaustion"] = round1(*s.SecondsToExhaustion)
	}
	if s.InvalidationReason != "" {
		subj["invalidation_reason"] = s.InvalidationReason
	}
	if s.InactiveSince != nil {
		subj["inactive_since"] = s.InactiveSince.UTC()
	}
	if s.PGWALBytes != nil {
		subj["pg_wal_bytes"] = *s.PGWALBytes
	}
	title := fmt.Sprintf("Slot %s retains %s of WAL", s.SlotName, humanize.Bytes(float64(s.RetainedBytes)))
	switch {
	case lost:
		title = fmt.Sprintf("Slot %s is invalidated (%s)", s.SlotName, nonEmpty(s.InvalidationReason, s.WALStatus))
	case soon:
		title = fmt.Sprintf("Slot %s will be invalidated in %s", s.SlotName, seconds(*s.SecondsToExhaustion))
	case thin:
		title = fmt.Sprintf("Slot %s has %s of WAL left before it is invalidated", s.SlotName, sizeText(s.SafeWALSize))
	}
	limit := fmt.Sprintf("safe_wal_size %s; time to exhaustion %s", sizeText(s.SafeWALSize), lagText(s.SecondsToExhaustion))
	if s.MaxSlotWALKeepBytes < 0 {
		limit = fmt.Sprintf("max_slot_wal_keep_size is unlimited, so only the WAL disk bounds it: pg_wal is %s and grows at %s",
			sizeText(s.PGWALBytes), rateText(r.WALRate))
	}
	return Finding{Severity: sev,
		Title:   title,
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %s (%s, %s since %s) restart_lsn %s keeps %s; wal_status %s; invalidation_reason %s; %s",
			diagnostics.CheckReplicationSlots, s.SlotName, s.SlotType, activeText(s.Active), timeText(s.InactiveSince), deref(s.RestartLSN), humanize.Bytes(float64(s.RetainedBytes)),
			nonEmpty(s.WALStatus, "?"), nonEmpty(s.InvalidationReason, "none"), limit)}, true
}

// slotInactiveFinding: a slot with no consumer, inactive for SlotInactive
// when the server says since when.
func slotInactiveFinding(r diagnostics.Round, t diagnostics.Thresholds, s diagnostics.Slot) (Finding, bool) {
	if s.Active || (t.SlotInactive > 0 && s.InactiveSince != nil && r.At.Sub(*s.InactiveSince) < t.SlotInactive) {
		return Finding{}, false
	}
	subj := map[string]any{"slot_name": s.SlotName, "slot_type": s.SlotType, "retained_bytes": s.RetainedBytes}
	if s.InactiveSince != nil {
		subj["inactive_since"] = s.InactiveSince.UTC()
	}
	return Finding{Severity: SeverityWarning,
		Title:   fmt.Sprintf("Slot %s has no consumer", s.SlotName),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %s (%s) is inactive since %s and keeps %s of WAL and xmin %s / catalog_xmin %s",
			diagnostics.CheckReplicationSlots, s.SlotName, s.SlotType, timeText(s.InactiveSince), humanize.Bytes(float64(s.RetainedBytes)), deref(s.Xmin), deref(s.CatalogXmin))}, true
}

// walRateFindings: WAL is written faster than WALRate.
func walRateFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if r.WALRate == nil || t.WALRate <= 0 || *r.WALRate < t.WALRate {
		return nil
	}
	return []Finding{{Severity: SeverityWarning,
		Title:    fmt.Sprintf("WAL generated at %s/s", humanize.Bytes(*r.WALRate)),
		Subject:  map[string]any{"bytes_per_second": round1(*r.WALRate)},
		Evidence: fmt.Sprintf("%s: %s/s between two samples (threshold %s/s)", diagnostics.CheckWALPosition, humanize.Bytes(*r.WALRate), humanize.Bytes(t.WALRate)),
		Actions:  []string{ActionQueueThrottle}}}
}

// archiverFindings: the archiver's last failure is newer than its last
// success.
func archiverFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	a := r.Archiver
	if a == nil || !a.Failing {
		return nil
	}
	return []Finding{{Severity: SeverityCritical,
		Title:   fmt.Sprintf("WAL archiving fails at %s", a.LastFailedWAL),
		Subject: map[string]any{"last_failed_wal": a.LastFailedWAL, "failed_count": a.FailedCount},
		Evidence: fmt.Sprintf("%s: last failure %s at %s, last success %s at %s; %d failures",
			diagnostics.CheckArchiver, a.LastFailedWAL, timeText(a.LastFailedTime), nonEmpty(a.LastArchivedWAL, "none"), timeText(a.LastArchivedTime), a.FailedCount)}}
}

// archiverBacklogFindings: ArchiverBacklog WAL segments wait to be
// archived, whether or not a failure was recorded (an archive command that
// hangs fails nothing). Those segments stay in pg_wal until archived.
func archiverBacklogFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	a := r.Archiver
	if a == nil || t.ArchiverBacklog <= 0 || a.Backlog() < t.ArchiverBacklog {
		return nil
	}
	subj := map[string]any{"segments": a.Backlog(), "last_archived_wal": a.LastArchivedWAL, "failing": a.Failing}
	return []Finding{{Severity: SeverityWarning,
		Title:   fmt.Sprintf("%d WAL segments wait to be archived", a.Backlog()),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %s segments ready (.ready files), %s behind the last archived %s (at %s); %d failures, last %s at %s",
			diagnostics.CheckArchiver, countText(a.ReadySegments), countText(a.SegmentsBehind), nonEmpty(a.LastArchivedWAL, "none"), timeText(a.LastArchivedTime),
			a.FailedCount, nonEmpty(a.LastFailedWAL, "none"), timeText(a.LastFailedTime))}}
}

// archiverNotConfiguredFindings: archive_mode is on with neither
// archive_command nor archive_library set. Nothing will ever be archived,
// so every finished segment stays in pg_wal until the disk fills: critical
// from the first segment, whatever ArchiverBacklog says.
func archiverNotConfiguredFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	a := r.Archiver
	if a == nil || !a.Unconfigured() || (a.ReadySegments != nil && *a.ReadySegments == 0) {
		return nil
	}
	return []Finding{{Severity: SeverityCritical,
		Title:   fmt.Sprintf("archive_mode is %s but no archive_command or archive_library is set: %s WAL segments wait forever", a.ArchiveMode, countText(a.ReadySegments)),
		Subject: map[string]any{"archive_mode": a.ArchiveMode, "segments": a.Backlog(), "archived_count": a.ArchivedCount},
		Evidence: fmt.Sprintf("%s: archive_mode %s, archive_command and archive_library empty; %s segments ready (.ready files), the oldest %s old; every one stays in pg_wal until an archiver takes it. Set archive_command (or archive_library) and reload, or set archive_mode = off and restart",
			diagnostics.CheckArchiver, a.ArchiveMode, countText(a.ReadySegments), lagText(a.OldestReadySeconds))}}
}

// archiverStalledFindings: the oldest segment waiting to be archived is
// ArchiverStall old and nothing was archived for as long: the archiver is
// configured but not running (an archive_command that hangs, an archive
// library that stopped), whether or not it recorded a failure.
func archiverStalledFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	a := r.Archiver
	if a == nil || t.ArchiverStall <= 0 || a.Unconfigured() || a.OldestReadySeconds == nil || *a.OldestReadySeconds < t.ArchiverStall.Seconds() {
		return nil
	}
	if a.LastArchivedTime != nil && r.At.Sub(*a.LastArchivedTime) < t.ArchiverStall {
		return nil
	}
	since := "never"
	subj := map[string]any{"segments": a.Backlog(), "oldest_ready_seconds": round1(*a.OldestReadySeconds), "failed_count": a.FailedCount, "failing": a.Failing}
	if a.LastArchivedTime != nil {
		since = fmt.Sprintf("last at %s (%s ago)", a.LastArchivedTime.UTC().Format(time.RFC3339), seconds(r.At.Sub(*a.LastArchivedTime).Seconds()))
		subj["last_archived_time"] = a.LastArchivedTime.UTC()
	}
	return []Finding{{Severity: SeverityCritical,
		Title:   fmt.Sprintf("The archiver has archived nothing for %s while %s segments wait", seconds(*a.OldestReadySeconds), countText(a.ReadySegments)),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: the oldest .ready segment is %s old, %s segments wait; archived %s (%s); %d failures, last %s at %s. An archive_command that hangs records no failure: look at the archiver process (pg_stat_activity backend_type archiver) and the server log",
			diagnostics.CheckArchiver, seconds(*a.OldestReadySeconds), countText(a.ReadySegments), since, nonEmpty(a.LastArchivedWAL, "nothing yet"),
			a.FailedCount, nonEmpty(a.LastFailedWAL, "none"), timeText(a.LastFailedTime))}}
}

// preparedXactFindings: a prepared transaction older than PreparedXactAge.
// The console offers no action: only the transaction's owner can decide.
func preparedXactFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, p := range r.Prepared {
		if p.AgeSeconds < t.PreparedXactAge.Seconds() {
			continue
		}
		out = append(out, Finding{Severity: SeverityCritical,
			Title:   fmt.Sprintf("Prepared transaction %q is %s old", p.GID, seconds(p.AgeSeconds)),
			Subject: map[string]any{"gid": p.GID, "seconds": round1(p.AgeSeconds), "database": p.Database, "owner": p.Owner, "xid_age": p.XIDAge},
			Evidence: fmt.Sprintf("%s: %q prepared at %s in %s by %s keeps its locks and the xmin horizon (xid %s, age %d) until COMMIT/ROLLBACK PREPARED",
				diagnostics.CheckPreparedXacts, p.GID, p.Prepared.UTC().Format(time.RFC3339), databaseText(p.Database), p.Owner, p.XID, p.XIDAge)})
	}
	return out
}

// databaseText names a prepared transaction's database in evidence; an
// empty name is one the round could not resolve (the database was created
// after the round's snapshot began, or is being dropped).
func databaseText(name string) string {
	if name == "" {
		return "(unknown database)"
	}
	return name
}

// xminHorizonFindings: a holder of the xmin horizon whose transaction is
// XminHorizonAge old or XminHorizonXIDs transactions behind; a backend can
// be terminated. A slot or a standby (hot_standby_feedback) has no
// transaction: its age is how long rounds have seen it hold the same xmin
// (diagnostics.XminHolder.FirstSeen), so a standby's long report query is found by age
// too, not only once it is XminHorizonXIDs behind.
func xminHorizonFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, h := range r.Xmin {
		old := h.AgeSeconds != nil && t.XminHorizonAge > 0 && *h.AgeSeconds >= t.XminHorizonAge.Seconds()
		if !old && (t.XminHorizonXIDs <= 0 || int64(h.XIDAge) < t.XminHorizonXIDs) {
			continue
		}
		subj := map[string]any{"holder_kind": h.Kind, "holder_id": h.Holder, "xid_age": h.XIDAge}
		if h.AgeSeconds != nil {
			subj["age_seconds"] = round1(*h.AgeSeconds)
		}
		age, held := ageText(h.AgeSeconds), ""
		if h.FirstSeen != nil && h.AgeSeconds != nil {
			// A slot or a standby's feedback carries no time: its age
			// counts from the round that first saw this xmin.
			subj["first_seen"] = h.FirstSeen.UTC()
			age = fmt.Sprintf(", held since first seen at %s (age at least %.0f s)", h.FirstSeen.UTC().Format(time.TimeOnly), *h.AgeSeconds)
			held = ", held at least " + seconds(*h.AgeSeconds)
		}
		var actions []string
		if h.Kind == "backend" {
			actions = []string{ActionBackendTerminate}
		}
		holderSubject(h, subj)
		cost := ""
		if h.HoldsTables {
			if n, parts := queueDeadRows(r); n > 0 {
				subj["queue_dead_rows"] = n
				cost = fmt.Sprintf("; the queue tables carry %d dead rows meanwhile (%s)", n, strings.Join(parts, ", "))
			}
		}
		if h.Kind == "standby" || h.Kind == "slot" {
			cost += standbySnapshotText(r, h, subj)
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("%s %s holds the xmin horizon (%d transactions%s)", h.Kind, h.Holder, h.XIDAge, held),
			Subject: subj,
			Evidence: fmt.Sprintf("%s: %s holds xmin %s, %d transactions old%s; VACUUM cannot remove rows deleted since%s",
				diagnostics.CheckXminHorizon, holderText(h), h.Xmin, h.XIDAge, age, cost),
			Actions: actions})
	}
	return out
}

// deadTuplesFindings: a table with DeadTuples dead rows. For a queue
// table the finding names the oldest holder of the xmin horizon, which
// keeps VACUUM from removing the rows deleted since it took its snapshot.
func deadTuplesFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	holders := tableHolders(r)
	for _, tb := range r.Tables {
		if t.DeadTuples <= 0 || tb.DeadTuples < t.DeadTuples {
			continue
		}
		subj := map[string]any{"table": tb.Schema + "." + tb.Table, "n_dead_tup": tb.DeadTuples, "dead_ratio": round3(tb.DeadRatio)}
		title := fmt.Sprintf("Table %s has %d dead rows", tb.Table, tb.DeadTuples)
		cause := ""
		if tb.QueueTable && len(holders) > 0 {
			h := holders[0]
			holderSubject(h, subj)
			title += fmt.Sprintf(" that %s %s keeps VACUUM from removing", h.Kind, h.Holder)
			cause = fmt.Sprintf("; VACUUM cannot remove rows deleted since xmin %s, held by %s, %d transactions old%s", h.Xmin, holderText(h), h.XIDAge, ageText(h.AgeSeconds))
			if len(holders) > 1 {
				cause += fmt.Sprintf(", and %d more %s", len(holders)-1, plural(len(holders)-1, "holder", "holders"))
			}
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   title,
			Subject: subj,
			Evidence: fmt.Sprintf("%s: %s.%s has %d dead and %d live rows; last autovacuum %s, last vacuum %s%s",
				diagnostics.CheckTableVacuum, tb.Schema, tb.Table, tb.DeadTuples, tb.LiveTuples, timeText(tb.LastAutovacuum), timeText(tb.LastVacuum), cause)})
	}
	return out
}

// invalidIndexFindings: every invalid index.
func invalidIndexFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, ix := range r.Invalid {
		out = append(out, Finding{Severity: SeverityWarning,
			Title:    fmt.Sprintf("Index %s is invalid", ix.Index),
			Subject:  map[string]any{"index": ix.Schema + "." + ix.Index, "table": ix.Table},
			Evidence: fmt.Sprintf("%s: %s.%s on %s (valid %t, ready %t): %s", diagnostics.CheckInvalidIndexes, ix.Schema, ix.Index, ix.Table, ix.Valid, ix.Ready, ix.Definition)})
	}
	return out
}

// notifyQueueFindings: the NOTIFY queue is NotifyQueueUsage full; critical
// from 90%.
func notifyQueueFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	n := r.Notify
	if n == nil || t.NotifyQueueUsage <= 0 || n.Usage < t.NotifyQueueUsage {
		return nil
	}
	sev := SeverityWarning
	if n.Usage >= 0.9 {
		sev = SeverityCritical
	}
	return []Finding{{Severity: sev,
		Title:    fmt.Sprintf("NOTIFY queue %.0f%% full", n.Usage*100),
		Subject:  map[string]any{"fraction": n.Usage},
		Evidence: fmt.Sprintf("%s: pg_notification_queue_usage() = %.3f; a listener in a long transaction stops the queue from draining", diagnostics.CheckNotifyQueue, n.Usage)}}
}

// connectionFindings: Connections of the slots ordinary roles may use are
// taken; the subject names the largest group by application, client
// address, database, user and state ("165 idle from billing-api"), the one
// to look at first. Critical from 95%.
func connectionFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if len(r.Connections) == 0 || t.Connections <= 0 {
		return nil
	}
	g := r.Connections[0]
	avail := g.Available()
	if avail <= 0 || float64(g.Used) < t.Connections*float64(avail) {
		return nil
	}
	frac := float64(g.Used) / float64(avail)
	sev := SeverityWarning
	if frac >= 0.95 {
		sev = SeverityCritical
	}
	var top []string
	for i, c := range r.Connections {
		if i == 3 {
			break
		}
		top = append(top, connectionGroupText(c))
	}
	return []Finding{{Severity: sev,
		Title: fmt.Sprintf("%d of %d connection slots used; the most: %d %s from %s", g.Used, avail, g.Connections, nonEmpty(g.State, "(no state)"), applicationText(g.Application)),
		Subject: map[string]any{"used": g.Used, "available": avail, "max_connections": g.MaxConnections, "reserved": g.Reserved,
			"fraction": round3(frac), "database": g.Database, "user": g.User, "state": g.State, "connections": g.Connections,
			"application_name": g.Application, "client_addr": g.ClientAddr},
		Evidence: fmt.Sprintf("%s: %d backends take slots of %d (max_connections %d less %d reserved); largest groups: %s",
			diagnostics.CheckConnectionUse, g.Used, avail, g.MaxConnections, g.Reserved, strings.Join(top, "; "))}}
}

// connectionGroupText reads "165 idle from billing-api (10.0.0.5) as app
// in shop".
func connectionGroupText(c diagnostics.ConnectionGroup) string {
	return fmt.Sprintf("%d %s from %s (%s) as %s in %s", c.Connections, nonEmpty(c.State, "(no state)"), applicationText(c.Application),
		nonEmpty(c.ClientAddr, "local"), c.User, c.Database)
}

// applicationText quotes an application_name, or says there is none.
func applicationText(app string) string {
	if app == "" {
		return "an unnamed application"
	}
	return app
}

// sequenceFindings: a sequence has used Sequence of its range; critical from
// 95%. The subject names the column it feeds, whose type may be the limit.
func sequenceFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, s := range r.Sequences {
		if t.Sequence <= 0 || s.UsedFraction < t.Sequence {
			continue
		}
		sev := SeverityWarning
		if s.UsedFraction >= 0.95 {
			sev = SeverityCritical
		}
		feeds := "no column"
		if s.Column != "" {
			feeds = fmt.Sprintf("%s.%s (%s)", s.Table, s.Column, s.ColumnType)
		}
		out = append(out, Finding{Severity: sev,
			Title: fmt.Sprintf("Sequence %s has used %.0f%% of its range", s.Sequence, s.UsedFraction*100),
			Subject: map[string]any{"sequence": s.Sequence, "table": s.Table, "column": s.Column, "column_type": s.ColumnType,
				"last_value": s.LastValue, "limit": s.Limit, "fraction": round3(s.UsedFraction)},
			Evidence: fmt.Sprintf("%s: %s (%s) is at %d of %d and feeds %s; inserts fail when it reaches the limit",
				diagnostics.CheckSequenceUse, s.Sequence, s.DataType, s.LastValue, s.Limit, feeds)})
	}
	return out
}
