package queues

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
)

// Worker is one engine process's row in the workers registry, as the
// console's pages, findings and metrics all read it.
type Worker struct {
	ID              string         `db:"id" json:"id"`
	Host            string         `db:"host" json:"host"`
	PID             int            `db:"pid" json:"pid"`
	Queues          []string       `db:"queues" json:"queues"`
	Concurrency     int            `db:"concurrency" json:"concurrency"`
	InFlight        int            `db:"in_flight" json:"in_flight"`
	InFlightByQueue map[string]int `db:"in_flight_by_queue" json:"in_flight_by_queue,omitempty"`
	Version         string         `db:"version" json:"version"`
	StartedAt       time.Time      `db:"started_at" json:"started_at"`
	LastSeenAt      time.Time      `db:"last_seen_at" json:"last_seen_at"`
	StoppedAt       *time.Time     `db:"stopped_at" json:"stopped_at"`
	// LastSeenSeconds is how long ago the worker last heartbeated.
	LastSeenSeconds float64 `db:"last_seen_seconds" json:"last_seen_seconds"`
	// Alive is the one definition of a live worker: not stopped and
	// heartbeated within the window passed to WorkerList. A process whose
	// heartbeat stopped works no job, whatever its session; when not
	// Alive, its in-flight counts are no longer true.
	Alive bool `db:"alive" json:"alive"`
	// BackendPID is the backend of the worker's long-lived session (its
	// LISTEN connection); nil until recorded, once the worker stopped, and
	// for workers that do not listen.
	BackendPID *int `db:"backend_pid" json:"backend_pid,omitempty"`
	// SessionOpen is whether that session is on the server now: the
	// evidence beside the heartbeat. A paused process keeps it when its
	// heartbeat stalls (SIGSTOP, a long GC); a dead one's is gone.
	SessionOpen bool `db:"session_open" json:"session_open"`
	// ReclaimedAt is when another process last found this worker dead (a
	// stale heartbeat and its session gone from the server) and took back
	// its running jobs at once, ReclaimedJobs how many it took. Nil when
	// the worker's jobs never had to be reclaimed early. The row stays
	// stopped, whatever heartbeats arrive late, until the worker records a
	// new session: only a live process can.
	ReclaimedAt   *time.Time `db:"reclaimed_at" json:"reclaimed_at,omitempty"`
	ReclaimedJobs int        `db:"reclaimed_jobs" json:"reclaimed_jobs,omitempty"`
	// RecentErrors are the worker's last engine errors (claims, acks,
	// heartbeats, settings), newest last, as of its last heartbeat.
	RecentErrors []EngineError `db:"recent_errors" json:"recent_errors"`
}

// DefaultWorkerAliveWindow is how recently a worker must have heartbeated
// to be Alive when WorkerList is given no window: long enough that a busy
// process or server is not taken for dead.
const DefaultWorkerAliveWindow = 60 * time.Second

// LastError is the worker's newest engine error as one line ("claim 53100:
// could not extend file ..."), or "" when it reported none.
func (w Worker) LastError() string {
	if len(w.RecentErrors) == 0 {
		return ""
	}
	return w.RecentErrors[len(w.RecentErrors)-1].String()
}

// Serves reports whether the worker works queue (an empty list means every
// queue).
func (w Worker) Serves(queue string) bool {
	return len(w.Queues) == 0 || slices.Contains(w.Queues, queue)
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

// String is the error on one line for panels and evidence: "claim 53100:
// could not extend file ...".
func (e EngineError) String() string {
	return strings.TrimSpace(fmt.Sprintf("%s %s: %s", e.Op, e.SQLState, e.Error))
}

// WorkerList returns the registry, most recently seen first (at most
// 1000); a worker is Alive when it is not stopped and heartbeated within
// aliveWindow (zero means DefaultWorkerAliveWindow).
func WorkerList(ctx context.Context, db DBTX, aliveWindow time.Duration) ([]Worker, error) {
	if aliveWindow <= 0 {
		aliveWindow = DefaultWorkerAliveWindow
	}
	return collectRows[Worker](ctx, db, "worker_list", "list workers", aliveWindow.Seconds())
}

// WorkerListSQL is the statement WorkerList runs.
func WorkerListSQL() string { return sqlText("worker_list") }

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
