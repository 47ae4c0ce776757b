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
}

// WorkerList returns the registry, most recently seen first.
func WorkerList(ctx context.Context, db DBTX) ([]Worker, error) {
	return collectRows[Worker](ctx, db, "worker_list", "list workers")
}
