package diagnostics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgconsole/console/queues"
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

// riverAppPrefix starts the application_name of a River worker's session
// while it runs a job, when the application tags it: "river job=<id>"
// (River sets none itself; docs/river.md gives the one line that does).
const riverAppPrefix = "river"

// RiverJobIDFromApplicationName returns the River job id in a tagged
// session's application_name ("river job=42"), or nil for any other.
func RiverJobIDFromApplicationName(app string) *int64 {
	return queues.TaggedJob(app, riverAppPrefix)
}

// LockWait is one group of ungranted lock requests: what they wait for and
// how many wait.
type LockWait struct {
	LockType string `db:"locktype" json:"locktype"`
	// Database is the database of the lock's target; empty for
	// cluster-wide targets (transaction ids, shared catalogs).
	Database string `db:"database" json:"database"`
	// Relation is the relation's name, for relation, extend, page and
	// tuple locks ("oid N" for a relation of another database).
	Relation string `db:"relation" json:"relation"`
	// Target names the exact thing waited for: a relation, one row
	// ("jobs row (0,1)"), a transaction id, an advisory key, an object.
	Target         string  `db:"target" json:"target"`
	Mode           string  `db:"mode" json:"mode"`
	Waiting        int64   `db:"waiting" json:"waiting"`
	MaxWaitSeconds float64 `db:"max_wait_seconds" json:"max_wait_seconds"`
	PIDs           []int32 `db:"pids" json:"pids"`
}

// LockWaits groups ungranted locks by their exact target and mode, most
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

// MinVersionNum is the oldest server the console supports
// (server_version_num of PostgreSQL 14).
const MinVersionNum = 140000

// ErrUnsupportedServer reports a server older than MinVersionNum, or one
// whose version could not be read: the catalog's queries would fail, or
// worse, answer for another version.
var ErrUnsupportedServer = errors.New("unsupported server")

// ServerInfo reads the server's version and role (server_info.sql). It
// refuses, with ErrUnsupportedServer, a server older than PostgreSQL 14 and
// one whose version it cannot read.
func ServerInfo(ctx context.Context, db DBTX) (Server, error) {
	info, err := collectOne[Server](ctx, db, CheckServerInfo, 0)
	if err != nil {
		return info, err
	}
	return info, info.Supported()
}

// Supported says, in one line, why the console will not diagnose this
// server; nil when it will.
func (s Server) Supported() error {
	switch {
	case s.VersionNum <= 0:
		return fmt.Errorf("%w: the server did not report its version (server_version_num %q); the console will not guess which catalog views it has",
			ErrUnsupportedServer, fmt.Sprint(s.VersionNum))
	case s.VersionNum < MinVersionNum:
		return fmt.Errorf("%w: PostgreSQL %s (server_version_num %d) is older than 14, the oldest version the console supports; upgrade the server or use an older console",
			ErrUnsupportedServer, cmp.Or(s.Version, "?"), s.VersionNum)
	}
	return nil
}

// ServerInfoPanel runs server_info.sql as a panel.
func (d *Diagnostics) ServerInfoPanel(ctx context.Context) Result[Server] {
	return panel(ctx, d, CheckServerInfo, one(ServerInfo))
}
