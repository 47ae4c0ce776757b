package queues

import (
	"context"
	"time"
)

// LongRunningJob is a running job that has run far longer than its kind
// usually does: a worker that keeps renewing the lease of a stuck handler
// hides it from the expired-lease check.
type LongRunningJob struct {
	JobID      int64     `db:"job_id" json:"job_id"`
	Queue      string    `db:"queue" json:"queue"`
	Kind       string    `db:"kind" json:"kind"`
	LeaseOwner string    `db:"lease_owner" json:"lease_owner"`
	StartedAt  time.Time `db:"started_at" json:"started_at"`
	Attempts   int32     `db:"attempts" json:"attempts"`
	// RunningSeconds is how long this attempt has run.
	RunningSeconds float64 `db:"running_seconds" json:"running_seconds"`
	// UsualSeconds is the 95th percentile run time of the kind's latest
	// done jobs, Samples how many of them there were.
	UsualSeconds float64 `db:"usual_seconds" json:"usual_seconds"`
	Samples      int64   `db:"samples" json:"samples"`
}

// LongJobParams are the arguments of LongRunningJobs.
type LongJobParams struct {
	// MinRunning is the least run time that counts, however quick the kind
	// usually is.
	MinRunning time.Duration
	// MinSamples is how many done jobs of a kind are needed before its usual
	// run time is trusted; zero means 20.
	MinSamples int64
	// Factor is how many times its kind's usual run time a job must have
	// run; zero means 5.
	Factor float64
}

// LongRunningJobs returns the running jobs that have run Factor times their
// kind's usual run time (job_kind_runs) and at least MinRunning, the worst
// 20 first (long_running_jobs.sql).
func LongRunningJobs(ctx context.Context, db DBTX, p LongJobParams) ([]LongRunningJob, error) {
	if p.MinSamples <= 0 {
		p.MinSamples = 20
	}
	if p.Factor <= 0 {
		p.Factor = 5
	}
	return collectRows[LongRunningJob](ctx, db, "long_running_jobs", "list long-running jobs", p.MinRunning.Seconds(), p.MinSamples, p.Factor)
}

// LongRunningJobsSQL is the statement LongRunningJobs runs.
func LongRunningJobsSQL() string { return sqlText("long_running_jobs") }

// LockWaitingJob is a running job whose own session (the one JobConn lent
// it) waits on a lock.
type LockWaitingJob struct {
	JobID int64 `db:"job_id" json:"job_id"`
	// Queue and Kind are '' when the job row is gone (finished and
	// archived while its session still waits).
	Queue       string  `db:"queue" json:"queue"`
	Kind        string  `db:"kind" json:"kind"`
	PID         int32   `db:"pid" json:"pid"`
	WaitSeconds float64 `db:"wait_seconds" json:"wait_seconds"`
}

// JobsWaitingOnLocks lists the running jobs whose session waits on a lock,
// longest wait first, at most 200 (jobs_waiting_on_locks.sql).
func JobsWaitingOnLocks(ctx context.Context, db DBTX) ([]LockWaitingJob, error) {
	return collectRows[LockWaitingJob](ctx, db, "jobs_waiting_on_locks", "list jobs waiting on locks")
}

// JobsWaitingOnLocksSQL is the statement JobsWaitingOnLocks runs.
func JobsWaitingOnLocksSQL() string { return sqlText("jobs_waiting_on_locks") }
