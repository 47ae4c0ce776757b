package queues

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
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
	// LISTEN connection); nil until recorded, once the worker stopped, and
	// for workers that do not listen.
	BackendPID *int `db:"backend_pid"`
	// SessionOpen is whether that session is on the server now. A live
	// process keeps it even when its heartbeat stalls (SIGSTOP, a long GC);
	// a dead one's is gone.
	SessionOpen bool `db:"session_open"`
	// ReclaimedAt is when another process last found this worker dead (a
	// stale heartbeat and its session gone from the server) and took back
	// its running jobs at once, ReclaimedJobs how many it took. Nil when
	// the worker's jobs never had to be reclaimed early. The row stays
	// stopped, whatever heartbeats arrive late, until the worker records a
	// new session: only a live process can.
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

// maxEngineErrors bounds the errors a worker reports in its heartbeat.
const maxEngineErrors = 10

// engineErrors keeps a Client's last engine errors for its heartbeat. Only
// failures write to it: no lock is taken on the job path.
type engineErrors struct {
	// counted counts each error by op and SQLSTATE class.
	counted *prometheus.CounterVec
	mu      sync.Mutex
	list    []EngineError
}

// note records err met while doing op, with the server's SQLSTATE when it
// came from the server.
func (e *engineErrors) note(op string, err error) {
	if err == nil {
		return
	}
	ee := EngineError{At: time.Now().UTC(), Op: op, Error: err.Error()}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		ee.SQLState = pg.Code
	}
	if len(ee.Error) > 500 {
		ee.Error = ee.Error[:500]
	}
	class := "none"
	if len(ee.SQLState) == 5 {
		class = ee.SQLState[:2]
	}
	e.counted.WithLabelValues(op, class).Inc()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) == maxEngineErrors {
		e.list = slices.Delete(e.list, 0, 1)
	}
	e.list = append(e.list, ee)
}

// snapshot returns the errors to report, newest last (never nil: the
// column is NOT NULL).
func (e *engineErrors) snapshot() []EngineError {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append(make([]EngineError, 0, len(e.list)), e.list...)
}
