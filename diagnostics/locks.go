package diagnostics

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/pgconsole/console/queues"
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
	what := fmt.Sprintf("%s (%s)", cmp.Or(n.LockTarget, "?"), n.LockType)
	if n.IsRoot {
		return fmt.Sprintf("holds %s on %s, wanted as %s", cmp.Or(n.ModeHeld, "a lock"), what, cmp.Or(n.ModeWanted, "?"))
	}
	s := fmt.Sprintf("wants %s on %s", cmp.Or(n.ModeWanted, "a lock"), what)
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

// Subtree returns the nodes of the branch rooted at nodes[i] (tree order:
// the branch is the run after it with a greater depth).
func Subtree(nodes []BlockingNode, i int) []BlockingNode {
	j := i + 1
	for j < len(nodes) && nodes[j].Depth > nodes[i].Depth {
		j++
	}
	return nodes[i+1 : j]
}

// BlockedJob is a running job whose own session waits on a lock, the
// engine's row (queues.JobsWaitingOnLocks).
type BlockedJob = queues.LockWaitingJob

// BlockedJobs lists the running jobs whose session waits on a lock,
// longest wait first (queues.JobsWaitingOnLocks).
func BlockedJobs(ctx context.Context, db DBTX) ([]BlockedJob, error) {
	return queues.JobsWaitingOnLocks(ctx, db)
}

// BlockedJobs runs the engine's jobs waiting on locks as a panel.
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

// IsEngineSession reports whether a backend is one of the engine's own
// (claims, acks, lease renewals, the relay): named "console-worker" and
// not lent to a job.
func IsEngineSession(app string) bool {
	first, _, _ := strings.Cut(app, " ")
	return first == queues.ApplicationName && queues.JobOfApplicationName(app) == nil
}
