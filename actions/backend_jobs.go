package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
)

// SignalJob is a queue job a backend signal reaches: the job whose own
// session (queues.JobConn) the signalled backend is, or a job whose session
// waits in the signalled backend's branch of the blocking tree. Fate says,
// in one sentence, what the signal will do (preview) or did (result) to it.
type SignalJob struct {
	ID              int64  `json:"id"`
	Queue           string `json:"queue,omitempty"`
	Kind            string `json:"kind,omitempty"`
	PID             int32  `json:"pid"`
	Status          string `json:"status,omitempty"`
	Attempts        int    `json:"attempts,omitempty"`
	MaxAttempts     int    `json:"max_attempts,omitempty"`
	LeaseGeneration int64  `json:"lease_generation,omitempty"`
	Fate            string `json:"fate"`
}

// name is how a sentence names the job: "job #2746 (`report`, queue `reports`)".
func (j SignalJob) name() string {
	if j.Kind == "" {
		return fmt.Sprintf("job #%d", j.ID)
	}
	return fmt.Sprintf("job #%d (%s, queue %s)", j.ID, code(j.Kind), code(j.Queue))
}

// signalJobOf reads the job a backend of the blocking tree runs, by the
// id its session's application_name carries; nil when the backend runs
// none. A job whose row is gone (archived) keeps its id alone.
func signalJobOf(ctx context.Context, db DBTX, pid int32, app string) (*SignalJob, error) {
	id := queues.JobOfApplicationName(app)
	if id == nil {
		return nil, nil
	}
	j := &SignalJob{ID: *id, PID: pid}
	return j, j.read(ctx, db)
}

// read fills the job's queue, kind, status and attempts from its row.
func (j *SignalJob) read(ctx context.Context, db DBTX) error {
	row, err := queues.JobGet(ctx, db, j.ID)
	if errors.Is(err, queues.ErrNotFound) {
		j.Status = ""
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %d: %w", j.ID, err)
	}
	j.Queue, j.Kind, j.Status = row.Queue, row.Kind, row.Status
	j.Attempts, j.MaxAttempts, j.LeaseGeneration = row.Attempts, row.MaxAttempts, row.LeaseGeneration
	return nil
}

// waitingJobs are the jobs whose sessions wait below pid in tree, in the
// tree's order.
func waitingJobs(ctx context.Context, db DBTX, tree []diagnostics.BlockingNode, pid int32) ([]SignalJob, error) {
	below := chainOf(tree, pid)
	out := []SignalJob{}
	for _, n := range tree {
		if n.JobID == nil || !slices.Contains(below, n.PID) {
			continue
		}
		j := SignalJob{ID: *n.JobID, PID: n.PID}
		if err := j.read(ctx, db); err != nil {
			return nil, err
		}
		out = append(out, j)
		if len(out) == maxWaitingJobs {
			break
		}
	}
	return out, nil
}

// maxWaitingJobs bounds the waiting jobs a preview or result names.
const maxWaitingJobs = 50

// jobIDs lists jobs as "#2751, #2752".
func jobIDs(jobs []SignalJob) string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = fmt.Sprintf("#%d", j.ID)
	}
	return strings.Join(ids, ", ")
}

// noEffect reports a cancel that cannot land: the session is idle in
// transaction, with no statement to cancel.
func (a *backendSignal) noEffect(f *Fingerprint) bool { return !a.terminate && f.idleInTransaction() }

// foretell says what the signal will do to the target's job and to the
// jobs waiting behind it.
func (a *backendSignal) foretell(p *BackendPreview) {
	if j := p.Job; j != nil {
		switch {
		case a.noEffect(&p.Target):
			j.Fate = j.name() + " keeps running: a cancel does nothing to a session idle in transaction"
		case j.Status != queues.StatusRunning:
			j.Fate = j.name() + " is " + cmpOr(j.Status, "gone from the jobs table") + ", not running: the signal reaches only its session"
		default:
			j.Fate = attemptFate(*j)
		}
	}
	n := len(p.WaitingJobs)
	if n == 0 {
		return
	}
	subject := fmt.Sprintf("the waiting job %s", jobIDs(p.WaitingJobs))
	goOn, keep := "goes on", "keeps waiting"
	if n > 1 {
		subject = fmt.Sprintf("the %d waiting jobs %s", n, jobIDs(p.WaitingJobs))
		goOn, keep = "go on", "keep waiting"
	}
	var fate string
	switch {
	case a.noEffect(&p.Target):
		p.Waiters = subject + " " + keep + ": the cancel does not end the transaction that holds their lock"
		fate = "keeps waiting"
	case !p.IsRoot:
		p.Waiters = fmt.Sprintf("%s %s once backend %d lets go, unless the root blocker above it still holds them", subject, goOn, a.pid)
		fate = fmt.Sprintf("goes on once backend %d lets go, unless the root blocker still holds it", a.pid)
	default:
		p.Waiters = subject + " " + goOn + " once the lock is released"
		fate = "goes on once the lock is released"
	}
	for i := range p.WaitingJobs {
		p.WaitingJobs[i].Fate = fate
	}
}

// attemptFate says what failing its attempt does to a running job: dead
// when its attempts are spent, else a retry after the engine's backoff.
func attemptFate(j SignalJob) string {
	f := queues.AttemptFailure(j.Attempts, j.MaxAttempts)
	if f.Dead {
		return fmt.Sprintf("%s fails this attempt and goes dead: attempt %d, max attempts %d", j.name(), j.Attempts, j.MaxAttempts)
	}
	return fmt.Sprintf("%s fails attempt %d of %d and will retry within ~%s (the engine's default backoff)",
		j.name(), j.Attempts, j.MaxAttempts, humanize.Seconds(f.RetryWithin.Seconds()))
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// attemptSettled reports whether the target's job has left the attempt it
// was on when previewed (its worker recorded the failure, or the job
// finished), so the result can say what became of it. A signal that
// cannot land, or a target running no job, has nothing to wait for.
func (a *backendSignal) attemptSettled(ctx context.Context, db DBTX) (bool, error) {
	if a.job == nil || a.job.Status != queues.StatusRunning || a.idle && !a.terminate {
		return true, nil
	}
	now := SignalJob{ID: a.job.ID}
	if err := now.read(ctx, db); err != nil {
		return false, err
	}
	return now.Status != queues.StatusRunning || now.LeaseGeneration != a.job.LeaseGeneration, nil
}

// recount reads the target's job and the waiting jobs again after the
// signal and says what became of each.
func (a *backendSignal) recount(ctx context.Context, db DBTX, pv BackendPreview, res *BackendResult) error {
	if pv.Job != nil {
		j := *pv.Job
		if err := j.read(ctx, db); err != nil {
			return err
		}
		j.Fate = afterFate(j, *pv.Job)
		res.Job = &j
	}
	res.WaitingJobs = []SignalJob{}
	var wentOn, still, dead []SignalJob
	for _, before := range pv.WaitingJobs {
		j := before
		if err := j.read(ctx, db); err != nil {
			return err
		}
		switch {
		case slices.Contains(res.StillWaits, j.PID) && j.Status == queues.StatusRunning:
			j.Fate = fmt.Sprintf("still waits on a lock (backend %d)", j.PID)
			still = append(still, j)
		case j.Status == queues.StatusDead:
			j.Fate = "went dead"
			dead = append(dead, j)
		case j.Status == queues.StatusDone:
			j.Fate = "went on and finished"
			wentOn = append(wentOn, j)
		case j.Status == queues.StatusRunning:
			j.Fate = "went on: running"
			wentOn = append(wentOn, j)
		case j.Status == "":
			j.Fate = "finished (its row is archived)"
			wentOn = append(wentOn, j)
		default:
			j.Fate = "is " + j.Status + " again (its attempt ended)"
			wentOn = append(wentOn, j)
		}
		res.WaitingJobs = append(res.WaitingJobs, j)
	}
	var parts []string
	for _, g := range []struct {
		jobs []SignalJob
		verb string
	}{{wentOn, "went on"}, {dead, "went dead"}, {still, "still wait"}} {
		if len(g.jobs) > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", jobIDs(g.jobs), g.verb))
		}
	}
	res.Waiters = strings.Join(parts, "; ")
	return nil
}

// afterFate says what became of the target's job: before is the job as
// previewed.
func afterFate(j, before SignalJob) string {
	name := j.name()
	switch {
	case j.Status == "":
		return name + " is gone from the jobs table (finished and archived)"
	case j.Status == queues.StatusDead:
		return fmt.Sprintf("%s went dead: attempt %d of %d failed", name, j.Attempts, j.MaxAttempts)
	case j.Status == queues.StatusReady:
		return fmt.Sprintf("%s failed attempt %d of %d and is ready to retry", name, j.Attempts, j.MaxAttempts)
	case j.Status == queues.StatusDone:
		return name + " finished: its handler went on despite the signal"
	case j.Status == queues.StatusRunning && j.LeaseGeneration != before.LeaseGeneration:
		return fmt.Sprintf("%s failed its attempt and is running again (attempt %d of %d)", name, j.Attempts, j.MaxAttempts)
	case j.Status == queues.StatusRunning:
		return name + " is still running the same attempt: its worker has not recorded a failure (its handler may have caught the error)"
	}
	return name + " is " + j.Status
}

// BackendRefusal runs the cheap part of the backend actions' guards on pid,
// for a page deciding whether to offer them: nil when the session exists and
// may be signalled, else the refusal an execution would give (wrapping
// ErrNotFound when it is gone, ErrInvalid when it may not be signalled).
func (r *Runner) BackendRefusal(ctx context.Context, pid int32) error {
	f, err := backendFingerprint(ctx, r.pool, pid)
	if err != nil {
		return err
	}
	return r.refuseTarget(f)
}
