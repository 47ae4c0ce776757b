package diagnostics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// modeOf is the mode the blocker k (its node b) holds on the lock n waits
// for, and whether it holds it (false: it asked for it first and waits
// too).
func (n *BlockingNode) modeOf(k nodeKey, b *BlockingNode) (string, bool) {
	if k.gid != "" {
		for i, gid := range n.BlockedByGIDs {
			if gid == k.gid && i < len(n.GIDModes) {
				return n.GIDModes[i], true
			}
		}
		return "", true
	}
	if b == nil || n.LockKey == "" {
		return "", false
	}
	for i, key := range b.HeldKeys {
		if key == n.LockKey && i < len(b.HeldModes) && i < len(b.HeldGrantedOn) {
			return b.HeldModes[i], b.HeldGrantedOn[i]
		}
	}
	return "", false
}

// describeHeldFor makes a root say what it holds that its first waiter w
// wants: w's lock, with the root's mode on it.
func (n *BlockingNode) describeHeldFor(w BlockingNode) {
	n.LockType, n.LockTarget, n.ModeWanted = w.LockType, w.LockTarget, w.ModeWanted
	n.ModeHeld, n.HeldGranted = w.ModeHeld, w.HeldGranted
}

// Holder names the node this one hangs under, as the lock texts do: "pid
// 77" or "prepared transaction 'gid'"; "" for a root.
func (n BlockingNode) Holder() string {
	switch {
	case n.ParentPID != nil:
		return fmt.Sprintf("pid %d", *n.ParentPID)
	case n.ParentGID != "":
		return fmt.Sprintf("prepared transaction %q", n.ParentGID)
	}
	return ""
}

// LockText says in one line what is locked and how. A waiter: "wants
// ShareLock on transaction 1234 of pid 77 (transactionid); pid 77 holds
// ExclusiveLock", or, queued behind a request that waits itself, "wants
// AccessShareLock on jobs (relation); queued behind pid 88, which asked
// first for AccessExclusiveLock and waits too". A root: "holds
// AccessShareLock on jobs (relation), wanted as AccessExclusiveLock". ""
// when the server showed no lock (a node that stopped waiting as the tree
// was read).
func (n BlockingNode) LockText() string {
	if n.LockType == "" {
		return ""
	}
	what := fmt.Sprintf("%s (%s)", nonEmpty(n.LockTarget, "?"), n.LockType)
	if n.IsRoot {
		return fmt.Sprintf("holds %s on %s, wanted as %s", nonEmpty(n.ModeHeld, "a lock"), what, nonEmpty(n.ModeWanted, "?"))
	}
	s := fmt.Sprintf("wants %s on %s", nonEmpty(n.ModeWanted, "a lock"), what)
	switch holder := n.Holder(); {
	case holder == "":
	case !n.HeldGranted && n.ModeHeld != "":
		s += fmt.Sprintf("; queued behind %s, which asked first for %s and waits too", holder, n.ModeHeld)
	case n.ModeHeld != "":
		s += fmt.Sprintf("; %s holds %s", holder, n.ModeHeld)
	default:
		s += "; held by " + holder
	}
	return s
}

// subtree returns the nodes of the branch rooted at nodes[i] (tree order:
// the branch is the run after it with a greater depth).
func subtree(nodes []BlockingNode, i int) []BlockingNode {
	j := i + 1
	for j < len(nodes) && nodes[j].Depth > nodes[i].Depth {
		j++
	}
	return nodes[i+1 : j]
}

// queueHead is the waiter right under a root that the most sessions wait
// behind, when some do: the ALTER TABLE that waits for an idle reader while
// every later read queues behind its request. ok is false when no waiter
// of the branch holds anyone up.
func queueHead(branch []BlockingNode) (head BlockingNode, ok bool) {
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
func queueHeadText(root, head BlockingNode, branch []BlockingNode) string {
	verb := "wait for"
	for _, n := range branch {
		if n.ParentPID != nil && *n.ParentPID == head.PID && head.ParentGID == "" && !n.HeldGranted {
			verb = "queue behind"
			break
		}
	}
	rootText := fmt.Sprintf("pid %d (%s, transaction %s old)", root.PID, nonEmpty(root.State, "gone"), seconds(root.XactAgeSeconds))
	if root.IsPrepared() {
		rootText = fmt.Sprintf("prepared transaction %q (%s old)", root.GID, seconds(root.XactAgeSeconds))
	}
	return fmt.Sprintf("%d %s %s pid %d's %s (wants %s on %s), which waits for %s",
		head.BlockedCount, plural(head.BlockedCount, "session", "sessions"), verb, head.PID, statementHead(head.Query),
		nonEmpty(head.ModeWanted, "a lock"), nonEmpty(head.LockTarget, "?"), rootText)
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

// BlockedJob is a running job whose own session (queues.JobConn, tagged
// "console-worker job=<id>") waits on a lock.
type BlockedJob struct {
	JobID int64 `db:"job_id" json:"job_id"`
	// Queue and Kind are '' when the job row is gone (finished and
	// archived while its session still waits).
	Queue       string  `db:"queue" json:"queue"`
	Kind        string  `db:"kind" json:"kind"`
	PID         int32   `db:"pid" json:"pid"`
	WaitSeconds float64 `db:"wait_seconds" json:"wait_seconds"`
}

// BlockedJobs lists the running jobs whose session waits on a lock,
// longest wait first (blocked_jobs.sql).
func BlockedJobs(ctx context.Context, db DBTX) ([]BlockedJob, error) {
	return collect[BlockedJob](ctx, db, CheckBlockedJobs, 0)
}

// BlockedJobs runs blocked_jobs.sql as a panel.
func (d *Diagnostics) BlockedJobs(ctx context.Context) Result[BlockedJob] {
	return panel(ctx, d, CheckBlockedJobs, many(BlockedJobs))
}

// JobBehind is a job waiting in a root's branch, as a root finding lists
// it.
type JobBehind struct {
	ID          int64   `json:"id"`
	Queue       string  `json:"queue,omitempty"`
	Kind        string  `json:"kind,omitempty"`
	PID         int32   `json:"pid"`
	WaitSeconds float64 `json:"wait_seconds"`
	// URL is the job's page.
	URL string `json:"url"`
}

// jobsBehind lists the jobs whose sessions wait in branch, directly or
// not, with their queue and kind when the round read them.
func jobsBehind(branch []BlockingNode, known []BlockedJob) []JobBehind {
	byID := make(map[int64]BlockedJob, len(known))
	for _, j := range known {
		byID[j.JobID] = j
	}
	var out []JobBehind
	for _, n := range branch {
		if n.JobID == nil {
			continue
		}
		j := byID[*n.JobID]
		out = append(out, JobBehind{ID: *n.JobID, Queue: j.Queue, Kind: j.Kind, PID: n.PID,
			WaitSeconds: round1(n.WaitSeconds), URL: fmt.Sprintf("/jobs/%d", *n.JobID)})
	}
	return out
}

// jobsBehindText lists up to five jobs for evidence: "job 42 (queue email,
// kind send, waiting 3m)".
func jobsBehindText(jobs []JobBehind) string {
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

// isEngineSession reports whether a backend is one of the engine's own
// (claims, acks, lease renewals, the relay): named "console-worker" and
// not lent to a job.
func isEngineSession(app string) bool {
	return (app == workerAppPrefix || strings.HasPrefix(app, workerAppPrefix+" ")) && JobIDFromApplicationName(app) == nil
}

// JobLockWait is what a running job's page says when the job's session
// waits on a lock.
type JobLockWait struct {
	// Waiter is the job's backend in the tree: its pid, LockText, wait and
	// the node it hangs under (ParentPID or ParentGID).
	Waiter BlockingNode `json:"waiter"`
	// HolderJobID and HolderApplication say what the backend it waits for
	// directly runs (nil and "" for a prepared transaction).
	HolderJobID       *int64 `json:"holder_job_id,omitempty"`
	HolderApplication string `json:"holder_application,omitempty"`
	// Root is the root of the chain, the node to act on (RootActions).
	Root BlockingNode `json:"root"`
}

// JobLockWaitOf finds job id's session among the waiters of a blocking
// tree; ok is false when it waits on no lock.
func JobLockWaitOf(nodes []BlockingNode, id int64) (w JobLockWait, ok bool) {
	byKey := make(map[nodeKey]int, len(nodes))
	for i := range nodes {
		byKey[keyOf(&nodes[i])] = i
	}
	for _, n := range nodes {
		if n.IsRoot || n.JobID == nil || *n.JobID != id {
			continue
		}
		w = JobLockWait{Waiter: n}
		if n.ParentPID != nil {
			if h, ok := byKey[nodeKey{pid: *n.ParentPID}]; ok {
				w.HolderJobID, w.HolderApplication = nodes[h].JobID, nodes[h].ApplicationName
			}
		}
		if r, ok := byKey[nodeKey{pid: n.RootPID, gid: n.RootGID}]; ok {
			w.Root = nodes[r]
		}
		return w, true
	}
	return JobLockWait{}, false
}

// RootActions are the actions that fit a root blocker, first the one to
// try first: a prepared transaction is only rolled back; a session idle in
// transaction has no statement to cancel, so terminate leads.
func RootActions(root BlockingNode) []string {
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
func engineStalledFindings(r Round, t Thresholds) []Finding {
	var out []Finding
	for i, root := range r.Blocking {
		if !root.IsRoot {
			continue
		}
		var waiting []BlockingNode
		longest := 0.0
		for _, n := range subtree(r.Blocking, i) {
			if isEngineSession(n.ApplicationName) {
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

func engineStalledFinding(r Round, root BlockingNode, waiting []BlockingNode, longest float64) Finding {
	queues := servedQueues(r.Workers)
	since := r.At.Add(-time.Duration(longest * float64(time.Second))).UTC()
	holder, subj, runbook := fmt.Sprintf("pid %d", root.PID), map[string]any{"pid": root.PID}, ""
	if root.IsPrepared() {
		holder, subj, runbook = fmt.Sprintf("prepared transaction %q", root.GID), map[string]any{"gid": root.GID}, RunbookURL(RunbookPreparedXact)
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
			CheckBlockingTree, len(waiting), plural(len(waiting), "session", "sessions"), strings.Join(names, ", "), holder,
			nonEmpty(root.State, "gone"), root.ApplicationName, seconds(root.XactAgeSeconds), lock, since.Format(time.RFC3339), seconds(longest)),
		Runbook: runbook,
		Actions: RootActions(root)}
}

// servedQueues are the queues the live workers serve, sorted.
func servedQueues(ws []Worker) []string {
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
