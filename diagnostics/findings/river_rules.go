package findings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues/river"
)

// riverQueues are the River queues a round read; nil when it read none
// (the source is not River, or the read failed).
func riverQueues(r diagnostics.Round) []river.QueueStat {
	if r.River == nil {
		return nil
	}
	return r.River.Queues
}

// riverBacklogFindings: a River queue whose oldest available job has
// waited QueueBacklogAge (or with QueueBacklogReady available jobs).
// Available is the only state a client fetches: snoozed and retrying jobs
// are scheduled or retryable until their time comes, so they are not a
// backlog.
func riverBacklogFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, q := range riverQueues(r) {
		backlog := q.OldestAvailableSeconds >= t.QueueBacklogAge.Seconds() || (t.QueueBacklogReady > 0 && q.Available >= t.QueueBacklogReady)
		if q.Available <= 0 || !backlog {
			continue
		}
		why := "no client works this queue (a River client fetches only the queues in its Config.Queues), every client working it is at its MaxWorkers, or fetches fail"
		var actions []string
		if q.PausedAt != nil {
			actions = []string{ActionRiverQueueResume}
			why = fmt.Sprintf("the queue is paused since %s: no client fetches it until it is resumed", timeText(q.PausedAt))
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("River queue %s: %d available, oldest waiting %s", q.Queue, q.Available, seconds(q.OldestAvailableSeconds)),
			Subject: map[string]any{"queue": q.Queue, "available": q.Available, "oldest_available_seconds": round1(q.OldestAvailableSeconds), "paused": q.PausedAt != nil},
			Evidence: fmt.Sprintf("%s: %d jobs of %s are available, the oldest since %s (%s); %d running, %d scheduled, %d retryable; %s",
				diagnostics.CheckRiverQueues, q.Available, q.Queue, timeText(q.OldestAvailableAt), seconds(q.OldestAvailableSeconds),
				q.Running, q.Scheduled, q.Retryable, why),
			Actions: actions})
	}
	return out
}

// riverPausedFindings: a River queue paused (river_queue.paused_at):
// clients fetch none of its jobs until it is resumed.
func riverPausedFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	var out []Finding
	for _, q := range riverQueues(r) {
		if q.PausedAt == nil {
			continue
		}
		out = append(out, Finding{Severity: SeverityInfo,
			Title:   fmt.Sprintf("River queue %s is paused", q.Queue),
			Subject: map[string]any{"queue": q.Queue, "available": q.Available, "paused_at": q.PausedAt.UTC()},
			Evidence: fmt.Sprintf("%s: river_queue.paused_at for %s is %s; %d available jobs wait and %d scheduled or retryable ones will join them; jobs already running finish",
				diagnostics.CheckRiverQueues, q.Queue, timeText(q.PausedAt), q.Available, q.Scheduled+q.Retryable),
			Actions: []string{ActionRiverQueueResume}})
	}
	return out
}

// riverStuckFindings: River jobs running past RiverRescueAfter (River's
// rescuer should have taken them back by then) or LongRunningJobFactor
// times their kind's usual run time (and at least LongRunningJob), one
// finding per queue and kind, naming the jobs.
func riverStuckFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if r.River == nil {
		return nil
	}
	type key struct{ queue, kind string }
	groups := map[key][]river.StuckJob{}
	var order []key
	for _, j := range r.River.Stuck {
		if j.RunningSeconds < t.RiverRescueAfter.Seconds() && j.RunningSeconds < t.LongRunningJob.Seconds() {
			continue
		}
		k := key{j.Queue, j.Kind}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j)
	}
	var out []Finding
	for _, k := range order {
		jobs := groups[k]
		longest := jobs[0]
		ids := make([]int64, 0, len(jobs))
		past := 0
		for _, j := range jobs {
			ids = append(ids, j.ID)
			if j.RunningSeconds >= t.RiverRescueAfter.Seconds() {
				past++
			}
		}
		why := fmt.Sprintf("%d of them past the rescue threshold (%s): River's rescuer, which only the elected leader runs, sets such a job back to retryable (or discards it when its attempts are used up), so a job still running past it means no leader rescues, or the application set RescueStuckJobsAfter longer; a worker that ignores its context keeps running after a rescue, and the job then runs twice", past, t.RiverRescueAfter)
		if past == 0 {
			why = fmt.Sprintf("none past the rescue threshold (%s) yet; the kind usually runs %s (95th percentile of its completed jobs of the last day), so these run %d times longer: a hung call or a lock wait (the blocking tree shows a session waiting)",
				t.RiverRescueAfter, seconds(longest.UsualSeconds), t.LongRunningJobFactor)
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("River queue %s: %d %s jobs running for up to %s", k.queue, len(jobs), k.kind, seconds(longest.RunningSeconds)),
			Subject: map[string]any{"queue": k.queue, "kind": k.kind, "count": len(jobs), "job_ids": ids, "ids": ids, "running_seconds": round1(longest.RunningSeconds), "client_id": longest.ClientID},
			Evidence: fmt.Sprintf("%s: %d running %s jobs of %s (ids %s), the longest (id %d, attempt %d, on client %s) started %s ago; %s",
				diagnostics.CheckRiverStuck, len(jobs), k.kind, k.queue, idList(ids, int64(len(ids))), longest.ID, longest.Attempt, nonEmpty(longest.ClientID, "?"), seconds(longest.RunningSeconds), why),
			Actions: []string{ActionRiverCancel}})
	}
	return out
}

// riverDiscardFindings: DeadLetters River jobs of one queue, kind and
// error class discarded within DeadLetterWindow.
func riverDiscardFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	if r.River == nil || t.DeadLetters <= 0 {
		return nil
	}
	var out []Finding
	for _, g := range r.River.Discards {
		if g.Count < t.DeadLetters {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title:   fmt.Sprintf("River queue %s: %d %s jobs discarded with %s in %s", g.Queue, g.Count, g.Kind, classText(g.ErrorClass), t.DeadLetterWindow),
			Subject: map[string]any{"queue": g.Queue, "kind": g.Kind, "error_class": g.ErrorClass, "count": g.Count, "sample_job_id": g.SampleJobID, "window_seconds": t.DeadLetterWindow.Seconds()},
			Evidence: fmt.Sprintf("%s: %d jobs of kind %s in %s were discarded between %s and %s, their last error of class %q (newest, job %d: %s); River discards a job when it has used max_attempts, when its worker returns river.JobCancel, or when it panicked on its last attempt. Fix the cause before retrying: a retry makes each job available again now (with one more attempt if it had none left), and a unique kind whose unique states leave out discarded may have had a new job of the same key inserted since",
				diagnostics.CheckRiverDiscards, g.Count, g.Kind, g.Queue, g.FirstSeen.UTC().Format("15:04:05"), g.LastSeen.UTC().Format("15:04:05"), g.ErrorClass, g.SampleJobID, short(g.SampleError)),
			Actions: []string{ActionRiverRetry}})
	}
	return out
}

// classText names an error class in a title.
func classText(class string) string {
	if class == "" {
		return "no error"
	}
	return "`" + class + "`"
}

// riverNoLeaderFindings: no River client holds leadership (river_leader
// empty or its lease expired) while jobs wait: the leader runs River's
// maintenance, so scheduled and retryable jobs are not made available,
// stuck jobs are not rescued and finished ones are not cleaned.
func riverNoLeaderFindings(r diagnostics.Round, _ diagnostics.Thresholds) []Finding {
	if r.River == nil || !r.River.LeaderRead || r.River.Queues == nil {
		return nil
	}
	l := r.River.Leader
	if l != nil && !l.Expired {
		return nil
	}
	var waiting, timed int64
	var names []string
	for _, q := range r.River.Queues {
		if n := q.Available + q.Scheduled + q.Retryable + q.Running + q.Pending; n > 0 {
			waiting += n
			timed += q.Scheduled + q.Retryable
			names = append(names, q.Queue)
		}
	}
	if waiting == 0 {
		return nil
	}
	slices.Sort(names)
	state, subj := "river_leader is empty: no client is elected", map[string]any{"leader_id": "", "queues": names, "unfinished": waiting}
	if l != nil {
		state = fmt.Sprintf("river_leader names %s, elected %s, whose lease expired at %s and was not renewed", l.LeaderID, l.ElectedAt.UTC().Format("15:04:05"), l.ExpiresAt.UTC().Format("15:04:05"))
		subj["leader_id"], subj["expires_at"] = l.LeaderID, l.ExpiresAt.UTC()
	}
	sev := SeverityWarning
	if timed > 0 {
		sev = SeverityCritical
	}
	return []Finding{{Severity: sev,
		Title:   fmt.Sprintf("River has no leader while %d jobs are unfinished", waiting),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %s; %d jobs are unfinished in %s, %d of them scheduled or retryable: only the leader's scheduler makes those available when their time comes, and only its rescuer takes back jobs stuck running. Every started client that works queues takes part in the election, so none runs (or none can reach the database, or each one's elector fails: its logs say)",
			diagnostics.CheckRiverLeader, state, waiting, strings.Join(names, ", "), timed)}}
}
