package diagnostics

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/pgconsole/console/queues"
)

// Node kinds of the blocking tree.
const (
	// NodeBackend is a server process: a client session, a queue worker,
	// autovacuum...
	NodeBackend = "backend"
	// NodePrepared is a prepared transaction (PREPARE TRANSACTION): it holds
	// its locks with no process behind it, so it can be neither cancelled
	// nor terminated, only committed or rolled back by gid.
	NodePrepared = "prepared"
)

// BlockingNode is one node of the blocking tree: a backend, or a prepared
// transaction that holds a lock others wait for. Roots (Depth 0) block
// others and wait for nobody; every other node waits for the nodes in
// BlockedBy and BlockedByGIDs and hangs under one of them (ParentPID, or
// ParentGID for a prepared transaction).
type BlockingNode struct {
	// Kind is NodeBackend or NodePrepared.
	Kind string `db:"kind" json:"kind"`
	// PID is the backend's pid; 0 for a prepared transaction.
	PID int32 `db:"pid" json:"pid"`
	// GID is the prepared transaction's global id; empty for a backend.
	GID string `db:"gid" json:"gid,omitempty"`
	// ParentPID and ParentGID name the node this one hangs under (at most
	// one is set); both are empty for a root.
	ParentPID *int32 `db:"-" json:"parent_pid"`
	ParentGID string `db:"-" json:"parent_gid,omitempty"`
	// RootPID and RootGID name the root of this node's branch.
	RootPID int32  `db:"-" json:"root_pid"`
	RootGID string `db:"-" json:"root_gid,omitempty"`
	Depth   int    `db:"-" json:"depth"`
	// BlockedBy is every backend this one waits for (pg_blocking_pids
	// without prepared transactions and the console's own connections);
	// BlockedByGIDs the prepared transactions it waits for.
	BlockedBy       []int32  `db:"blocked_by" json:"blocked_by"`
	BlockedByGIDs   []string `db:"blocked_by_gids" json:"blocked_by_gids,omitempty"`
	State           string   `db:"state" json:"state"`
	WaitEventType   string   `db:"wait_event_type" json:"wait_event_type"`
	WaitEvent       string   `db:"wait_event" json:"wait_event"`
	Query           string   `db:"query" json:"query"`
	ApplicationName string   `db:"application_name" json:"application_name"`
	ClientAddr      string   `db:"client_addr" json:"client_addr"`
	BackendType     string   `db:"backend_type" json:"backend_type"`
	Database        string   `db:"database" json:"database"`
	// Owner is the session's user, or the prepared transaction's owner.
	Owner        string     `db:"owner" json:"owner"`
	BackendStart *time.Time `db:"backend_start" json:"backend_start"`
	// XactStart is when the transaction began; for a prepared transaction,
	// when it was prepared (the same as PreparedAt).
	XactStart       *time.Time `db:"xact_start" json:"xact_start"`
	QueryStart      *time.Time `db:"query_start" json:"query_start"`
	PreparedAt      *time.Time `db:"prepared_at" json:"prepared_at,omitempty"`
	XactAgeSeconds  float64    `db:"xact_age_seconds" json:"xact_age_seconds"`
	QueryAgeSeconds float64    `db:"query_age_seconds" json:"query_age_seconds"`
	// WaitSeconds is how long this node has waited for its lock (0 for
	// roots).
	WaitSeconds float64 `db:"wait_seconds" json:"wait_seconds"`

	// IsRoot is Depth == 0.
	IsRoot bool `db:"-" json:"is_root"`
	// BlockedCount is how many nodes wait behind this one, directly or not.
	// For a root it is exact over the whole wait-for graph: when several
	// roots together block a waiter (two readers ahead of an ACCESS
	// EXCLUSIVE request), each counts it and everyone queued behind it.
	// For a node inside the tree it is the size of its subtree.
	BlockedCount int `db:"-" json:"blocked_count"`
	// MaxWaitSeconds is the longest wait among the nodes BlockedCount
	// counts.
	MaxWaitSeconds float64 `db:"-" json:"max_wait_seconds"`
	// JobID is the queue job this backend runs, parsed from the worker's
	// application_name ("console-worker job=<id>"); nil otherwise, and for
	// a backend of another database.
	JobID *int64 `db:"-" json:"job_id"`
	// RiverJobID is the River job this backend runs, when the application
	// tags its River workers' sessions ("river job=<id>", see
	// RiverJobIDFromApplicationName); nil otherwise.
	RiverJobID *int64 `db:"-" json:"river_job_id,omitempty"`

	// LockType, LockTarget and ModeWanted say which lock a waiter waits
	// for: its type (relation, tuple, transactionid, virtualxid, advisory,
	// object...), the target in words ("jobs", "row (0,3) of jobs",
	// "transaction 1234 of pid 77", "advisory lock 42") and the mode it
	// asked for. A root waits for nothing: for it they describe the lock its
	// first waiter wants from it.
	LockType   string `db:"lock_type" json:"lock_type"`
	LockTarget string `db:"lock_target" json:"lock_target"`
	ModeWanted string `db:"mode_wanted" json:"mode_wanted"`
	// ModeHeld is the mode the node this one hangs under holds on
	// LockTarget (for a root, its own mode there). HeldGranted is false
	// when that node holds no such lock but asked for ModeHeld first and
	// waits for it itself: this node queues behind a request, not a holder
	// (plain reads behind an ALTER TABLE that waits).
	ModeHeld    string `db:"-" json:"mode_held"`
	HeldGranted bool   `db:"-" json:"held_granted"`
	// LockKey identifies LockTarget among the targets waited for;
	// HeldKeys, HeldModes and HeldGrantedOn say what this backend holds (or
	// asked for first) on each such target, and GIDModes, parallel to
	// BlockedByGIDs, what the prepared transactions hold on LockTarget, as
	// blocking_tree.sql read them: ModeHeld is taken from them.
	LockKey       string   `db:"lock_key" json:"-"`
	HeldKeys      []string `db:"held_keys" json:"-"`
	HeldModes     []string `db:"held_modes" json:"-"`
	HeldGrantedOn []bool   `db:"held_granted" json:"-"`
	GIDModes      []string `db:"gid_modes" json:"-"`
	// OtherDatabase: the backend or prepared transaction belongs to
	// another database of the server, whose job ids are not this
	// database's (JobID and RiverJobID stay nil).
	OtherDatabase bool `db:"other_database" json:"other_database,omitempty"`
}

// IsPrepared reports whether the node is a prepared transaction.
func (n BlockingNode) IsPrepared() bool { return n.Kind == NodePrepared }

// BlockingTree returns the blocking tree as a flat list in tree order: each
// root, then its subtree depth first, children by pid (blocking_tree.sql).
// Prepared-transaction roots come first. The graph is walked once,
// breadth-first from the roots with a visited set, so each node is placed
// once, at its shortest distance from a root, under the first of its
// blockers found there; a lock queue where every waiter is blocked by every
// waiter ahead of it costs O(edges), not O(paths). Nodes caught in a
// deadlock cycle with no root are left out until the deadlock detector
// breaks the cycle.
func BlockingTree(ctx context.Context, db DBTX) ([]BlockingNode, error) {
	rows, err := collect[BlockingNode](ctx, db, CheckBlockingTree, 0)
	if err != nil {
		return nil, err
	}
	return buildTree(rows), nil
}

// BlockingTree runs blocking_tree.sql as a panel.
func (d *Diagnostics) BlockingTree(ctx context.Context) Result[BlockingNode] {
	return panel(ctx, d, CheckBlockingTree, many(BlockingTree))
}

// nodeKey identifies a node: a backend by pid, a prepared transaction by gid.
type nodeKey struct {
	pid int32
	gid string
}

func keyOf(n *BlockingNode) nodeKey {
	if n.Kind == NodePrepared {
		return nodeKey{gid: n.GID}
	}
	return nodeKey{pid: n.PID}
}

// compareKeys orders prepared transactions first (by gid), then backends
// by pid.
func compareKeys(a, b nodeKey) int {
	if (a.gid != "") != (b.gid != "") {
		if a.gid != "" {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.gid, b.gid), cmp.Compare(a.pid, b.pid))
}

// buildTree places rows into the tree and fills the fields the SQL does not
// return.
func buildTree(rows []BlockingNode) []BlockingNode {
	byKey := make(map[nodeKey]*BlockingNode, len(rows))
	for i := range rows {
		byKey[keyOf(&rows[i])] = &rows[i]
	}
	// waiters[k] lists the nodes that wait for k; blocked marks nodes that
	// wait for a node present in the graph.
	waiters := make(map[nodeKey][]nodeKey)
	blocked := make(map[nodeKey]bool)
	for i := range rows {
		w := keyOf(&rows[i])
		for _, pid := range rows[i].BlockedBy {
			if b := (nodeKey{pid: pid}); byKey[b] != nil && b != w {
				waiters[b] = append(waiters[b], w)
				blocked[w] = true
			}
		}
		for _, gid := range rows[i].BlockedByGIDs {
			if b := (nodeKey{gid: gid}); byKey[b] != nil {
				waiters[b] = append(waiters[b], w)
				blocked[w] = true
			}
		}
	}
	var roots []nodeKey
	for k := range waiters {
		slices.SortFunc(waiters[k], compareKeys)
		if !blocked[k] {
			roots = append(roots, k)
		}
	}
	slices.SortFunc(roots, compareKeys)

	// Breadth-first from every root at once: each node is placed once.
	parent := make(map[nodeKey]nodeKey)
	depth := make(map[nodeKey]int, len(rows))
	children := make(map[nodeKey][]nodeKey)
	queue := make([]nodeKey, 0, len(rows))
	for _, r := range roots {
		depth[r] = 0
		queue = append(queue, r)
	}
	for i := 0; i < len(queue); i++ {
		u := queue[i]
		for _, w := range waiters[u] {
			if _, seen := depth[w]; seen {
				continue
			}
			depth[w] = depth[u] + 1
			parent[w] = u
			children[u] = append(children[u], w)
			queue = append(queue, w)
		}
	}

	// Tree order: each root, then its subtree depth first.
	out := make([]BlockingNode, 0, len(queue))
	var visit func(k, root nodeKey)
	visit = func(k, root nodeKey) {
		n := *byKey[k]
		n.Depth = depth[k]
		n.IsRoot = n.Depth == 0
		n.RootPID, n.RootGID = root.pid, root.gid
		if p, ok := parent[k]; ok {
			if p.gid != "" {
				n.ParentGID = p.gid
			} else {
				pid := p.pid
				n.ParentPID = &pid
			}
			n.ModeHeld, n.HeldGranted = n.modeOf(p, byKey[p])
		}
		if n.IsRoot {
			n.WaitSeconds = 0
		}
		if !n.OtherDatabase {
			n.JobID = queues.JobOfApplicationName(n.ApplicationName)
			n.RiverJobID = RiverJobIDFromApplicationName(n.ApplicationName)
		}
		out = append(out, n)
		for _, c := range children[k] {
			visit(c, root)
		}
	}
	for _, r := range roots {
		visit(r, r)
	}
	for i := range out {
		if out[i].IsRoot && i+1 < len(out) && out[i+1].Depth == 1 {
			out[i].describeHeldFor(out[i+1])
		}
	}

	// Counts: inside the tree, subtree sizes (children come after their
	// parent in out, so one backward pass sums them).
	pos := make(map[nodeKey]int, len(out))
	for i := range out {
		pos[keyOf(&out[i])] = i
	}
	for i := len(out) - 1; i >= 0; i-- {
		k := keyOf(&out[i])
		p, ok := parent[k]
		if !ok {
			continue
		}
		j := pos[p]
		out[j].BlockedCount += out[i].BlockedCount + 1
		out[j].MaxWaitSeconds = max(out[j].MaxWaitSeconds, out[i].WaitSeconds, out[i].MaxWaitSeconds)
	}
	// Roots: exact over the graph, so a waiter blocked by several roots
	// counts for each of them.
	seen := make(map[nodeKey]int, len(out))
	for ri, r := range roots {
		count, maxWait := 0, 0.0
		stack := append([]nodeKey(nil), waiters[r]...)
		for len(stack) > 0 {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[k] == ri+1 {
				continue
			}
			seen[k] = ri + 1
			count++
			maxWait = max(maxWait, byKey[k].WaitSeconds)
			stack = append(stack, waiters[k]...)
		}
		j := pos[r]
		out[j].BlockedCount, out[j].MaxWaitSeconds = count, maxWait
	}
	return out
}
