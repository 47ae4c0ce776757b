package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// JobSummary is a job as previews and results show it.
type JobSummary struct {
	ID              int64      `json:"id"`
	Queue           string     `json:"queue"`
	Kind            string     `json:"kind"`
	Status          string     `json:"status"`
	Attempts        int        `json:"attempts"`
	MaxAttempts     int        `json:"max_attempts"`
	ErrorClass      string     `json:"error_class,omitempty"`
	LastError       string     `json:"last_error,omitempty"`
	LeaseOwner      string     `json:"lease_owner,omitempty"`
	LeaseUntil      *time.Time `json:"lease_until,omitempty"`
	LeaseGeneration int64      `json:"lease_generation"`
	AvailableAt     time.Time  `json:"available_at"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
}

func summarize(j *queues.Job) JobSummary {
	s := JobSummary{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, Status: j.Status, Attempts: j.Attempts,
		MaxAttempts: j.MaxAttempts, LeaseUntil: j.LeaseUntil, LeaseGeneration: j.LeaseGeneration,
		AvailableAt: j.AvailableAt, FinishedAt: j.FinishedAt,
	}
	if j.ErrorClass != nil {
		s.ErrorClass = *j.ErrorClass
	}
	if j.LastError != nil {
		s.LastError = truncate(*j.LastError, 500)
	}
	if j.LeaseOwner != nil {
		s.LeaseOwner = *j.LeaseOwner
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// JobPreview is the preview of job.cancel, job.retry_now and lease.expire:
// the job as it is and what the action will do to it.
type JobPreview struct {
	Job    JobSummary `json:"job"`
	Effect string     `json:"effect"`
}

// JobResult is the job after the action.
type JobResult struct {
	Job JobSummary `json:"job"`
}

func (JobPreview) actionPreview() {}
func (JobResult) actionResult()   {}

// jobAction is one of the single-job operator mutations.
type jobAction struct {
	id int64
	// allowed are the statuses the action applies to.
	allowed []string
	effect  string
	run     func(ctx context.Context, db queues.DBTX, id int64) (*queues.Job, error)
	// fenced actions refuse when the lease generation moved since the
	// preview (the job was claimed again: a different attempt).
	fenced bool
	// verb starts the preview's sentence: "Cancel", "Retry".
	verb string
}

func (a *jobAction) target() string { return "job:" + strconv.FormatInt(a.id, 10) }

func (a *jobAction) logFields() []slog.Attr { return []slog.Attr{slog.Int64("job_id", a.id)} }

func (a *jobAction) preview(ctx context.Context, rc *runContext) (JobPreview, error) {
	j, err := queues.JobGet(ctx, rc.r.pool, a.id)
	if err != nil {
		return JobPreview{}, wrapNotFound(err, queues.ErrNotFound, "job %d", a.id)
	}
	if !slices.Contains(a.allowed, j.Status) {
		return JobPreview{}, fmt.Errorf("job %d is %s; this action applies to %v jobs: %w", a.id, j.Status, a.allowed, ErrInvalid)
	}
	return JobPreview{Job: summarize(j), Effect: a.effect}, nil
}

func (a *jobAction) execute(ctx context.Context, rc *runContext, tx pgx.Tx, preview JobPreview) (JobResult, error) {
	before := preview.Job
	cur, err := queues.JobGet(ctx, tx, a.id)
	if err != nil {
		return JobResult{}, wrapNotFound(err, queues.ErrNotFound, "job %d", a.id)
	}
	if a.fenced && (cur.Status != before.Status || cur.LeaseGeneration != before.LeaseGeneration) {
		return JobResult{}, fmt.Errorf("job %d changed since the preview (now %s, generation %d; was %s, generation %d): %w",
			a.id, cur.Status, cur.LeaseGeneration, before.Status, before.LeaseGeneration, ErrGuard)
	}
	j, err := a.run(ctx, tx, a.id)
	if errors.Is(err, queues.ErrInvalidState) {
		return JobResult{}, fmt.Errorf("%v: %w", err, ErrGuard)
	}
	if err != nil {
		return JobResult{}, wrapNotFound(err, queues.ErrNotFound, "job %d", a.id)
	}
	return JobResult{Job: summarize(j)}, nil
}

func (a *jobAction) sentence(p JobPreview) string {
	j := p.Job
	return fmt.Sprintf("%s job %d (%s in queue %s, now %s, attempt %d of %d): %s",
		a.verb, j.ID, code(j.Kind), code(j.Queue), j.Status, j.Attempts, j.MaxAttempts, p.Effect)
}

func (a *jobAction) done(r JobResult) string {
	return fmt.Sprintf("Job %d is now %s", r.Job.ID, r.Job.Status)
}

// jobState is what a job action's decision rests on: the job's status and
// which attempt holds it.
type jobState struct {
	ID              int64  `json:"id"`
	Status          string `json:"status"`
	LeaseGeneration int64  `json:"lease_generation"`
}

func jobStateOf(j JobSummary) jobState {
	return jobState{ID: j.ID, Status: j.Status, LeaseGeneration: j.LeaseGeneration}
}

func (a *jobAction) state(p JobPreview) any { return jobStateOf(p.Job) }

type jobPlan = plan[JobPreview, JobResult]

// jobParams are the parameters of the single-job actions.
type jobParams struct{ ID int64 }

func (p *jobParams) fields() []field {
	return []field{intParam(&p.ID, "id", "The job's id.").required()}
}

var jobCancel = action(Spec{
	Name: "job.cancel", Title: "Cancel a job", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Moves a ready or running job to dead with error class \"cancelled\". A running job's " +
		"lease generation is bumped, so its worker's ack is refused and its handler is cancelled at the next heartbeat.",
}, func(p *jobParams) (jobPlan, error) {
	return &jobAction{id: p.ID, allowed: []string{queues.StatusReady, queues.StatusRunning},
		effect: "the job becomes dead (cancelled); a running attempt's ack will be refused",
		run:    queues.JobCancelTx, fenced: true, verb: "Cancel"}, requirePositive("id", p.ID)
})

var jobRetryNow = action(Spec{
	Name: "job.retry_now", Title: "Retry a job now", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Makes a waiting job due now, or puts a dead job back to ready now keeping its " +
		"attempts and error history (a spent job gets one more attempt).",
}, func(p *jobParams) (jobPlan, error) {
	return &jobAction{id: p.ID, allowed: []string{queues.StatusReady, queues.StatusDead},
		effect: "the job becomes ready and due now; its history is kept",
		run:    queues.JobRetryNowTx, verb: "Retry"}, requirePositive("id", p.ID)
})

var leaseExpire = action(Spec{
	Name: "lease.expire", Title: "Expire a job's lease", Role: auth.RoleOperator, Risk: RiskMedium,
	Description: "Forces a stuck running job back to ready now and bumps its lease generation, so the " +
		"previous worker's ack is refused. Use it when the owner is known dead; a live owner's work is " +
		"repeated by the next worker (RB-F: never reset many in-flight rows at once).",
}, func(p *jobParams) (jobPlan, error) {
	return &jobAction{id: p.ID, allowed: []string{queues.StatusRunning},
		effect: "the job goes back to ready now; the current owner's ack and heartbeat will be refused",
		run:    queues.LeaseExpireTx, fenced: true, verb: "Expire the lease of"}, requirePositive("id", p.ID)
})
