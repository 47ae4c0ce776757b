package findings

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
)

// RootActions are the actions that fit a root blocker, first the one to
// try first: a prepared transaction is only rolled back; a session idle in
// transaction has no statement to cancel, so terminate leads.
func RootActions(root diagnostics.BlockingNode) []string {
	switch {
	case root.IsPrepared():
		return []string{ActionPreparedRollback}
	case strings.HasPrefix(root.State, "idle in transaction"):
		return []string{ActionBackendTerminate, ActionBackendCancel}
	}
	return []string{ActionBackendCancel, ActionBackendTerminate}
}

// engineStalledFindings: the engine's own sessions (claims, acks, lease
// renewals) wait in a root's branch for RootBlockerWait. Workers cannot
// take or finish jobs until the root lets go, so the finding names the
// queues the live workers serve and when the first of those sessions began
// to wait, and offers the root's actions.
func engineStalledFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
	var out []Finding
	for i, root := range r.Blocking {
		if !root.IsRoot {
			continue
		}
		var waiting []diagnostics.BlockingNode
		longest := 0.0
		for _, n := range diagnostics.Subtree(r.Blocking, i) {
			if diagnostics.IsEngineSession(n.ApplicationName) {
				waiting = append(waiting, n)
				longest = max(longest, n.WaitSeconds)
			}
		}
		if len(waiting) == 0 || longest < t.RootBlockerWait.Seconds() {
			continue
		}
		out = append(out, engineStalledFinding(r, root, waiting, longest))
	}
	return out
}

func engineStalledFinding(r diagnostics.Round, root diagnostics.BlockingNode, waiting []diagnostics.BlockingNode, longest float64) Finding {
	queues := servedQueues(r.Workers)
	since := r.At.Add(-time.Duration(longest * float64(time.Second))).UTC()
	holder, subj, runbook := fmt.Sprintf("pid %d", root.PID), map[string]any{"pid": root.PID}, ""
	if root.IsPrepared() {
		holder, subj, runbook = fmt.Sprintf("prepared transaction %q", root.GID), map[string]any{"gid": root.GID}, diagnostics.RunbookURL(diagnostics.RunbookPreparedXact)
	}
	who := "The engine's workers"
	if len(queues) > 0 {
		who = fmt.Sprintf("Workers of %s %s", plural(len(queues), "queue", "queues"), strings.Join(queues, ", "))
	}
	ops := map[string]int{}
	var names []string
	for _, n := range waiting {
		op := statementHead(n.Query)
		if ops[op] == 0 {
			names = append(names, op)
		}
		ops[op]++
	}
	sort.Strings(names)
	for i, op := range names {
		if ops[op] > 1 {
			names[i] = fmt.Sprintf("%s ×%d", op, ops[op])
		}
	}
	subj["queues"] = queues
	subj["engine_sessions"] = len(waiting)
	subj["since"] = since
	subj["wait_seconds"] = round1(longest)
	subj["lock_type"], subj["lock_target"], subj["mode_held"] = root.LockType, root.LockTarget, root.ModeHeld
	lock := ""
	if l := root.LockText(); l != "" {
		lock = ", which " + l
	}
	return Finding{Severity: SeverityCritical,
		Title:   fmt.Sprintf("%s wait on a lock held by %s since %s", who, holder, since.Format("15:04:05")),
		Subject: subj,
		Evidence: fmt.Sprintf("%s: %d engine %s (%s) wait behind root %s (%s, application %q, transaction %s old)%s; the first has waited since %s (%s): claims, acks and lease renewals stall until it ends",
			diagnostics.CheckBlockingTree, len(waiting), plural(len(waiting), "session", "sessions"), strings.Join(names, ", "), holder,
			nonEmpty(root.State, "gone"), root.ApplicationName, seconds(root.XactAgeSeconds), lock, since.Format(time.RFC3339), seconds(longest)),
		Runbook: runbook,
		Actions: RootActions(root)}
}

// servedQueues are the queues the live workers serve, sorted.
func servedQueues(ws []diagnostics.Worker) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, w := range ws {
		if !w.Alive {
			continue
		}
		for _, q := range w.Queues {
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	sort.Strings(out)
	return out
}

// queueHead is the waiter right under a root that the most sessions wait
// behind, when some do: the ALTER TABLE that waits for an idle reader while
// every later read queues behind its request. ok is false when no waiter
// of the branch holds anyone up.
func queueHead(branch []diagnostics.BlockingNode) (head diagnostics.BlockingNode, ok bool) {
	for _, n := range branch {
		if n.Depth == 1 && n.BlockedCount > 0 && (!ok || n.BlockedCount > head.BlockedCount) {
			head, ok = n, true
		}
	}
	return head, ok
}

// queueHeadText says who waits behind the head and what the head waits
// for: "20 sessions queue behind pid 88's ALTER TABLE jobs (wants
// AccessExclusiveLock), which waits for pid 77 (idle in transaction,
// transaction 4m old)".
func queueHeadText(root, head diagnostics.BlockingNode, branch []diagnostics.BlockingNode) string {
	verb := "wait for"
	for _, n := range branch {
		if n.ParentPID != nil && *n.ParentPID == head.PID && head.ParentGID == "" && !n.HeldGranted {
			verb = "queue behind"
			break
		}
	}
	rootText := fmt.Sprintf("pid %d (%s, transaction %s old)", root.PID, cmp.Or(root.State, "gone"), seconds(root.XactAgeSeconds))
	if root.IsPrepared() {
		rootText = fmt.Sprintf("prepared transaction %q (%s old)", root.GID, seconds(root.XactAgeSeconds))
	}
	return fmt.Sprintf("%d %s %s pid %d's %s (wants %s on %s), which waits for %s",
		head.BlockedCount, plural(head.BlockedCount, "session", "sessions"), verb, head.PID, statementHead(head.Query),
		cmp.Or(head.ModeWanted, "a lock"), cmp.Or(head.LockTarget, "?"), rootText)
}

// statementHead names a statement by its first words ("ALTER TABLE jobs"),
// or an engine statement by the name its header comment gives it
// ("JobClaim").
func statementHead(q string) string {
	q = strings.TrimSpace(q)
	if name, ok := strings.CutPrefix(q, "--"); ok {
		f := strings.Fields(name)
		if len(f) > 0 {
			return strings.TrimSuffix(f[0], ":")
		}
	}
	f := strings.Fields(q)
	if len(f) == 0 {
		return "statement"
	}
	f = f[:min(3, len(f))]
	return strings.TrimRight(strings.Join(f, " "), ";,(")
}

// jobsBehind lists the jobs whose sessions wait in branch, directly or
// not, with their queue and kind when the round read them.
func jobsBehind(branch []diagnostics.BlockingNode, known []diagnostics.BlockedJob) []diagnostics.JobBehind {
	byID := make(map[int64]diagnostics.BlockedJob, len(known))
	for _, j := range known {
		byID[j.JobID] = j
	}
	var out []diagnostics.JobBehind
	for _, n := range branch {
		if n.JobID == nil {
			continue
		}
		j := byID[*n.JobID]
		out = append(out, diagnostics.JobBehind{ID: *n.JobID, Queue: j.Queue, Kind: j.Kind, PID: n.PID,
			WaitSeconds: round1(n.WaitSeconds), URL: fmt.Sprintf("/jobs/%d", *n.JobID)})
	}
	return out
}

// jobsBehindText lists up to five jobs for evidence: "job 42 (queue email,
// kind send, waiting 3m)".
func jobsBehindText(jobs []diagnostics.JobBehind) string {
	var parts []string
	for i, j := range jobs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(jobs)-5))
			break
		}
		s := fmt.Sprintf("job %d (", j.ID)
		if j.Queue != "" {
			s += fmt.Sprintf("queue %s, kind %s, ", j.Queue, j.Kind)
		}
		parts = append(parts, s+"waiting "+seconds(j.WaitSeconds)+")")
	}
	return strings.Join(parts, ", ")
}

// riverJobsText names the River jobs of a blocking branch, known by their
// sessions' application_name ("river job=<id>"): the root's, and those
// waiting behind it. Empty when none is tagged.
func riverJobsText(root diagnostics.BlockingNode, branch []diagnostics.BlockingNode) string {
	var b strings.Builder
	if root.RiverJobID != nil {
		fmt.Fprintf(&b, "; the root runs River job %d (/jobs/%d)", *root.RiverJobID, *root.RiverJobID)
	}
	var waiting []string
	for _, n := range branch {
		if n.RiverJobID != nil && n.PID != root.PID {
			waiting = append(waiting, fmt.Sprintf("River job %d (pid %d, waiting %s)", *n.RiverJobID, n.PID, seconds(n.WaitSeconds)))
		}
	}
	if len(waiting) > 0 {
		fmt.Fprintf(&b, "; %s behind it: %s", plural(len(waiting), "a River job waits", "River jobs wait"), strings.Join(waiting, ", "))
	}
	return b.String()
}
