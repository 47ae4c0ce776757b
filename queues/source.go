package queues

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrBadFilter refuses a job filter the engine cannot answer (a state it
// does not have, arguments that are not a JSON object, an arguments filter
// on an engine with no index for it); the message says what to type.
var ErrBadFilter = errors.New("bad job filter")

// The engines a Source reads.
const (
	SourceConsole = "console" // this package's engine: the jobs table of the console's migrations
	SourceRiver   = "river"   // River (github.com/riverqueue/river): river_job, river_queue, river_leader
)

// Source is the queue facts the console's pages read, whichever engine
// keeps the jobs: the queues with their counts by state, a filtered page of
// jobs, one job, the failed jobs grouped by error class, and who works the
// queues. Each engine says its states in its own words (this engine's
// ready/running/dead/done, River's available/scheduled/.../discarded), so a
// page shows what the engine's own tools would.
//
// A Source only reads. Changes go through the engine's own API (actions).
type Source interface {
	// Engine is SourceConsole or SourceRiver.
	Engine() string
	// States are the engine's job states in the order pages list them.
	States() []string
	// Queues lists every queue, by name: a queue with jobs or settings.
	Queues(ctx context.Context) ([]SourceQueue, error)
	// Jobs is one page of jobs, newest first (by id), filtered.
	Jobs(ctx context.Context, f SourceJobFilter) ([]SourceJob, error)
	// Job reads one job whole; ErrNotFound when no job has the id.
	Job(ctx context.Context, id int64) (SourceJob, error)
	// FailedGroups groups the jobs that failed for good (dead, discarded)
	// by queue and error class, largest group first; queue "" means every
	// queue.
	FailedGroups(ctx context.Context, queue string) (SourceFailedGroups, error)
	// Workers says who works the queues and, when the engine elects one,
	// its leader.
	Workers(ctx context.Context) (SourceWorkers, error)
}

// SourceStateCount is how many jobs of a queue are in one state.
type SourceStateCount struct {
	State string `json:"state"`
	Count int64  `json:"count"`
	// Note qualifies a count that is not "every job in the state now"
	// (completed within the last hour); empty when it is.
	Note string `json:"note,omitempty"`
}

// SourceQueue is one queue: its counts by state, how long its oldest job
// ready to run has waited, and whether it is paused.
type SourceQueue struct {
	Queue  string             `json:"queue"`
	Counts []SourceStateCount `json:"counts"`
	// Waiting is how many jobs could run now (ready and due, available);
	// OldestWaitingSeconds how long the oldest of them has waited (0 when
	// none waits).
	Waiting              int64   `json:"waiting"`
	OldestWaitingSeconds float64 `json:"oldest_waiting_seconds"`
	// Running is how many jobs are being worked.
	Running int64 `json:"running"`
	// Failed is how many jobs failed for good (dead, discarded).
	Failed   int64      `json:"failed"`
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
}

// Count is the queue's count of state (0 when the engine has no such
// state).
func (q SourceQueue) Count(state string) int64 {
	for _, c := range q.Counts {
		if c.State == state {
			return c.Count
		}
	}
	return 0
}

// SourceJobFilter filters Source.Jobs. Zero values mean "any"; Limit
// defaults to 50 and is capped at 1000. BeforeID continues a page: pass the
// smallest id of the previous page.
type SourceJobFilter struct {
	Queue, Kind, State string
	// ArgsContain is a JSON object the job's arguments contain (River's
	// args @> it); the console's engine has no such filter and refuses it.
	ArgsContain                json.RawMessage
	CreatedFrom, CreatedBefore *time.Time
	BeforeID                   int64
	Limit                      int
}

// SourceJob is one job as a page shows it. Args, Errors and Metadata are
// filled by Source.Job only.
type SourceJob struct {
	ID          int64      `json:"id"`
	Queue       string     `json:"queue"`
	Kind        string     `json:"kind"`
	State       string     `json:"state"`
	Attempt     int        `json:"attempt"`
	MaxAttempts int        `json:"max_attempts"`
	Priority    int        `json:"priority"`
	CreatedAt   time.Time  `json:"created_at"`
	ScheduledAt time.Time  `json:"scheduled_at"`
	AttemptedAt *time.Time `json:"attempted_at,omitempty"`
	FinalizedAt *time.Time `json:"finalized_at,omitempty"`
	// ErrorClass and LastError are of the last attempt that failed.
	ErrorClass string          `json:"error_class,omitempty"`
	LastError  string          `json:"last_error,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Errors     json.RawMessage `json:"errors,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// SourceFailedGroup is the failed jobs of one queue with one error class.
type SourceFailedGroup struct {
	Queue       string    `json:"queue"`
	ErrorClass  string    `json:"error_class"`
	Count       int64     `json:"count"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
	SampleError string    `json:"sample_error"`
	SampleJobID int64     `json:"sample_job_id"`
}

// SourceFailedGroups are the groups and the total they were taken from.
// When Read is below Total the groups cover only the Read newest failed
// jobs (an engine that does not count by class as jobs fail).
type SourceFailedGroups struct {
	Groups []SourceFailedGroup `json:"groups"`
	Total  int64               `json:"total"`
	Read   int64               `json:"read"`
}

// SourceWorker is one process (a worker, a River client) and what it
// works now.
type SourceWorker struct {
	ID      string   `json:"id"`
	Queues  []string `json:"queues"`
	Running int64    `json:"running"`
	// LastSeen is its last heartbeat, or its newest job's start when the
	// engine keeps no heartbeat.
	LastSeen time.Time `json:"last_seen"`
	Alive    bool      `json:"alive"`
}

// SourceLeader is the engine's elected leader (River's river_leader).
type SourceLeader struct {
	ID        string    `json:"id"`
	ElectedAt time.Time `json:"elected_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Expired: the lease ran out and nobody renewed it.
	Expired bool `json:"expired"`
}

// SourceWorkers are the workers and the leader (nil when the engine
// elects none or none holds the lease).
type SourceWorkers struct {
	Workers []SourceWorker `json:"workers"`
	Leader  *SourceLeader  `json:"leader,omitempty"`
}
