package queues

import (
	"context"
	"time"
)

// Worker is one engine process's row in the workers registry.
type Worker struct {
	ID              string         `db:"id"`
	Host            string         `db:"host"`
	PID             int            `db:"pid"`
	Queues          []string       `db:"queues"`
	Concurrency     int            `db:"concurrency"`
	InFlight        int            `db:"in_flight"`
	InFlightByQueue map[string]int `db:"in_flight_by_queue"`
	Version         string         `db:"version"`
	StartedAt       time.Time      `db:"started_at"`
	LastSeenAt      time.Time      `db:"last_seen_at"`
	StoppedAt       *time.Time     `db:"stopped_at"`
	// Stale is true when the process stopped or has not heartbeated for 30
	// seconds: its in-flight counts are no longer true.
	Stale bool `db:"stale"`
	// BackendPID is the backend of the worker's long-lived session (its
	// LISTEN connection); nil until recorded, and for workers that do not
	// listen.
	BackendPID *int `db:"backend_pid"`
	// ReclaimedAt is when another process last found this worker dead (a
	// stale heartbeat and its session gone from the server) and took back
	// its running jobs at once, ReclaimedJobs how many it took. Nil when
	// the worker's jobs never had to be reclaimed early.
	ReclaimedAt   *time.Time `db:"reclaimed_at"`
	ReclaimedJobs int        `db:"reclaimed_jobs"`
	// RecentErrors are the worker's last engine errors (claims, acks,
	// heartbeats, settings), newest last, as of its last heartbeat.
	RecentErrors []EngineError `db:"recent_errors"`
}

// EngineError is one error the engine met talking to the database, as a
// worker reports it in its heartbeat.
type EngineError struct {
	At time.Time `json:"at"`
	// Op is what the engine was doing: "claim", "ack", "fail", "renew",
	// "heartbeat", "settings", "reap", "listen".
	Op string `json:"op"`
	// SQLState is the server's error code (53100: disk full, 57P01: admin
	// shutdown); empty when the error did not come from the server.
	SQLState string `json:"sqlstate,omitempty"`
	Error    string `json:"error"`
}

// WorkerList returns the registry, most recently seen first.
func WorkerList(ctx context.Context, db DBTX) ([]Worker, error) {
	return collectRows[Worker](ctx, db, "worker_list", "list workers")
}
