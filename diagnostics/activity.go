package diagnostics

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Backend is one row of Activity: a backend that is doing or holding
// something, with its transaction and statement ages.
type Backend struct {
	PID             int32      `db:"pid" json:"pid"`
	Database        string     `db:"datname" json:"database"`
	User            string     `db:"usename" json:"user"`
	ApplicationName string     `db:"application_name" json:"application_name"`
	ClientAddr      string     `db:"client_addr" json:"client_addr"`
	BackendType     string     `db:"backend_type" json:"backend_type"`
	State           string     `db:"state" json:"state"`
	WaitEventType   string     `db:"wait_event_type" json:"wait_event_type"`
	WaitEvent       string     `db:"wait_event" json:"wait_event"`
	BackendStart    *time.Time `db:"backend_start" json:"backend_start"`
	XactStart       *time.Time `db:"xact_start" json:"xact_start"`
	QueryStart      *time.Time `db:"query_start" json:"query_start"`
	StateChange     *time.Time `db:"state_change" json:"state_change"`
	XactAgeSeconds  float64    `db:"xact_age_seconds" json:"xact_age_seconds"`
	QueryAgeSeconds float64    `db:"query_age_seconds" json:"query_age_seconds"`
	XminAge         *int32     `db:"xmin_age" json:"xmin_age"`
	BlockedBy       []int32    `db:"blocked_by" json:"blocked_by"`
	Query           string     `db:"query" json:"query"`
}

// Activity lists the backends that are not plain idle, oldest transaction
// first (activity.sql).
func Activity(ctx context.Context, db DBTX) ([]Backend, error) {
	return collect[Backend](ctx, db, CheckActivity, 0)
}

// Activity runs activity.sql as a panel.
func (d *Diagnostics) Activity(ctx context.Context) Result[Backend] {
	return panel(ctx, d, CheckActivity, many(Activity))
}

// IdleTx is one session idle in transaction.
type IdleTx struct {
	PID             int32      `db:"pid" json:"pid"`
	Database        string     `db:"datname" json:"database"`
	User            string     `db:"usename" json:"user"`
	ApplicationName string     `db:"application_name" json:"application_name"`
	ClientAddr      string     `db:"client_addr" json:"client_addr"`
	State           string     `db:"state" json:"state"`
	XactStart       *time.Time `db:"xact_start" json:"xact_start"`
	StateChange     *time.Time `db:"state_change" json:"state_change"`
	IdleSeconds     float64    `db:"idle_seconds" json:"idle_seconds"`
	XactAgeSeconds  float64    `db:"xact_age_seconds" json:"xact_age_seconds"`
	LastQuery       string     `db:"last_query" json:"last_query"`
}

// IdleInTransaction lists sessions idle in an open transaction, longest idle
// first (idle_in_transaction.sql).
func IdleInTransaction(ctx context.Context, db DBTX) ([]IdleTx, error) {
	return collect[IdleTx](ctx, db, CheckIdleInTransaction, 0)
}

// IdleInTransaction runs idle_in_transaction.sql as a panel.
func (d *Diagnostics) IdleInTransaction(ctx context.Context) Result[IdleTx] {
	return panel(ctx, d, CheckIdleInTransaction, many(IdleInTransaction))
}

// BlockingNode is one backend of the blocking tree. Roots (Depth 0) block
// others and wait for nobody; every other node waits for the backends in
// BlockedBy and hangs under ParentPID.
type BlockingNode struct {
	PID       int32  `db:"pid" json:"pid"`
	ParentPID *int32 `db:"parent_pid" json:"parent_pid"`
	RootPID   int32  `db:"root_pid" json:"root_pid"`
	Depth     int    `db:"depth" json:"depth"`
	// BlockedBy is pg_blocking_pids(pid): every backend this one waits for.
	BlockedBy       []int32    `db:"blocked_by" json:"blocked_by"`
	State           string     `db:"state" json:"state"`
	WaitEventType   string     `db:"wait_event_type" json:"wait_event_type"`
	WaitEvent       string     `db:"wait_event" json:"wait_event"`
	Query           string     `db:"query" json:"query"`
	ApplicationName string     `db:"application_name" json:"application_name"`
	ClientAddr      string     `db:"client_addr" json:"client_addr"`
	BackendType     string     `db:"backend_type" json:"backend_type"`
	BackendStart    *time.Time `db:"backend_start" json:"backend_start"`
	XactStart       *time.Time `db:"xact_start" json:"xact_start"`
	QueryStart      *time.Time `db:"query_start" json:"query_start"`
	XactAgeSeconds  float64    `db:"xact_age_seconds" json:"xact_age_seconds"`
	QueryAgeSeconds float64    `db:"query_age_seconds" json:"query_age_seconds"`
	// WaitSeconds is how long this backend has waited for its lock (0 for
	// roots).
	WaitSeconds float64 `db:"wait_seconds" json:"wait_seconds"`

	// IsRoot is Depth == 0.
	IsRoot bool `db:"-" json:"is_root"`
	// BlockedCount is how many backends wait below this one, directly or
	// not.
	BlockedCount int `db:"-" json:"blocked_count"`
	// MaxWaitSeconds is the longest wait among the backends below this one.
	MaxWaitSeconds float64 `db:"-" json:"max_wait_seconds"`
	// JobID is the queue job this backend runs, parsed from the worker's
	// application_name ("console-worker job=<id>"); nil otherwise.
	JobID *int64 `db:"-" json:"job_id"`
}

// BlockingTree returns every waiting backend and its chain up to the root
// blocker as a flat list in tree order: each root, then its subtree depth
// first (blocking_tree.sql). BlockedCount, MaxWaitSeconds, IsRoot and JobID
// are computed here.
func BlockingTree(ctx context.Context, db DBTX) ([]BlockingNode, error) {
	nodes, err := collect[BlockingNode](ctx, db, CheckBlockingTree, 0)
	if err != nil {
		return nil, err
	}
	annotateTree(nodes)
	return nodes, nil
}

// BlockingTree runs blocking_tree.sql as a panel.
func (d *Diagnostics) BlockingTree(ctx context.Context) Result[BlockingNode] {
	return panel(ctx, d, CheckBlockingTree, many(BlockingTree))
}

// annotateTree fills the fields of BlockingNode the SQL does not return.
func annotateTree(nodes []BlockingNode) {
	index := make(map[int32]int, len(nodes))
	for i := range nodes {
		index[nodes[i].PID] = i
		nodes[i].IsRoot = nodes[i].Depth == 0
		nodes[i].JobID = JobIDFromApplicationName(nodes[i].ApplicationName)
	}
	for i := range nodes {
		wait := nodes[i].WaitSeconds
		seen := 0
		for p := nodes[i].ParentPID; p != nil && seen < len(nodes); seen++ {
			j, ok := index[*p]
			if !ok {
				break
			}
			nodes[j].BlockedCount++
			if wait > nodes[j].MaxWaitSeconds {
				nodes[j].MaxWaitSeconds = wait
			}
			p = nodes[j].ParentPID
		}
	}
}

// workerAppPrefix is the application_name queue workers set while running a
// job: "console-worker job=<id>".
const workerAppPrefix = "console-worker"

// JobIDFromApplicationName returns the job id in a queue worker's
// application_name ("console-worker job=42"), or nil when the backend is not
// a worker running a job.
func JobIDFromApplicationName(app string) *int64 {
	if !strings.HasPrefix(app, workerAppPrefix) {
		return nil
	}
	for _, f := range strings.Fields(app[len(workerAppPrefix):]) {
		if v, ok := strings.CutPrefix(f, "job="); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				return &id
			}
		}
	}
	return nil
}

// LockWait is one group of ungranted lock requests: what they wait for and
// how many wait.
type LockWait struct {
	LockType       string  `db:"locktype" json:"locktype"`
	Relation       string  `db:"relation" json:"relation"`
	Mode           string  `db:"mode" json:"mode"`
	Waiting        int64   `db:"waiting" json:"waiting"`
	MaxWaitSeconds float64 `db:"max_wait_seconds" json:"max_wait_seconds"`
	PIDs           []int32 `db:"pids" json:"pids"`
}

// LockWaits groups ungranted locks by lock type, relation and mode, most
// waiters first (lock_waits.sql).
func LockWaits(ctx context.Context, db DBTX) ([]LockWait, error) {
	return collect[LockWait](ctx, db, CheckLockWaits, 0)
}

// LockWaits runs lock_waits.sql as a panel.
func (d *Diagnostics) LockWaits(ctx context.Context) Result[LockWait] {
	return panel(ctx, d, CheckLockWaits, many(LockWaits))
}

// ConnectionCount is the number of client connections of one database,
// application and state.
type ConnectionCount struct {
	Database        string `db:"datname" json:"database"`
	ApplicationName string `db:"application_name" json:"application_name"`
	State           string `db:"state" json:"state"`
	Connections     int64  `db:"connections" json:"connections"`
	MaxConnections  int64  `db:"max_connections" json:"max_connections"`
}

// Connections counts client backends by database, application and state
// (connections.sql).
func Connections(ctx context.Context, db DBTX) ([]ConnectionCount, error) {
	return collect[ConnectionCount](ctx, db, CheckConnections, 0)
}

// Connections runs connections.sql as a panel.
func (d *Diagnostics) Connections(ctx context.Context) Result[ConnectionCount] {
	return panel(ctx, d, CheckConnections, many(Connections))
}

// Server is the server's version, role and the settings the catalog depends
// on.
type Server struct {
	VersionNum          int    `db:"version_num" json:"version_num"`
	Version             string `db:"version" json:"version"`
	InRecovery          bool   `db:"in_recovery" json:"in_recovery"`
	Database            string `db:"database" json:"database"`
	HasPgStatStatements bool   `db:"has_pg_stat_statements" json:"has_pg_stat_statements"`
	TrackIOTiming       string `db:"track_io_timing" json:"track_io_timing"`
	MaxSlotWALKeepSize  string `db:"max_slot_wal_keep_size" json:"max_slot_wal_keep_size"`
	PID                 int32  `db:"pid" json:"pid"`
}

// ServerInfo reads the server's version and role (server_info.sql).
func ServerInfo(ctx context.Context, db DBTX) (Server, error) {
	return collectOne[Server](ctx, db, CheckServerInfo, 0)
}

// ServerInfoPanel runs server_info.sql as a panel.
func (d *Diagnostics) ServerInfoPanel(ctx context.Context) Result[Server] {
	return panel(ctx, d, CheckServerInfo, one(ServerInfo))
}
