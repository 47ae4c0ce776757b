package actions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
)

// The River actions change a River database's jobs and queues through
// River's own client (river.Client), in the Runner's transaction, so the
// change and its audit row commit together and River's state machine,
// unique states and notifications stay River's.

// riverRetryCap is the most discarded jobs one river.retry moves: each is
// one call of River's JobRetry, and a larger match is refused with a
// sentence asking for a narrower filter.
const riverRetryCap = 1000

// RiverJob is a River job as the River actions preview and report it.
type RiverJob = river.JobState

// RiverJobsPreview is the preview of river.retry and river.cancel: the jobs
// the action will change (each with its state and attempt, which the
// execution re-checks), the cap, and what it leaves alone.
type RiverJobsPreview struct {
	Count   int          `json:"count"`
	Cap     int          `json:"cap"`
	OverCap bool         `json:"over_cap"`
	Jobs    []RiverJob   `json:"jobs"`
	Skipped []SkippedJob `json:"skipped"`
	Effect  string       `json:"effect"`
	Warning string       `json:"warning,omitempty"`
}

// RiverJobsResult is the River jobs after river.retry or river.cancel, as
// River's client returned them: the audit row names each one.
type RiverJobsResult struct {
	Changed int        `json:"changed"`
	IDs     []int64    `json:"ids"`
	Jobs    []RiverJob `json:"jobs"`
}

// RiverQueuePreview is the preview of river.queue_pause and
// river.queue_resume, and (after) their result: River's queue row.
type RiverQueuePreview struct {
	Queue river.QueueState `json:"queue"`
	Note  string           `json:"note"`
}

// RiverQueueResult is the River queue after river.queue_pause or
// river.queue_resume.
type RiverQueueResult struct {
	Queue river.QueueState `json:"queue"`
}

func (RiverJobsPreview) actionPreview()  {}
func (RiverJobsResult) actionResult()    {}
func (RiverQueuePreview) actionPreview() {}
func (RiverQueueResult) actionResult()   {}

// riverClient is the one River client of the process: it holds no
// connection, only River's logic.
var riverClient = sync.OnceValues(river.NewClient)

// riverJobsChange is river.retry or river.cancel: find the jobs, then
// change each through River's client.
type riverJobsChange struct {
	// find reads the jobs the action applies to (at most limit) and
	// those it skips, on db.
	find   func(ctx context.Context, db river.DBTX, limit int) ([]RiverJob, []SkippedJob, error)
	change func(c *river.Client, ctx context.Context, tx pgx.Tx, id int64) (RiverJob, error)
	what   string // "Retry" or "Cancel"
	effect string
	desc   string // the filter, for the target and sentences
	queue  string
}

func (a *riverJobsChange) target() string { return "river:" + a.desc }

func (a *riverJobsChange) logFields() []slog.Attr {
	if a.queue != "" {
		return []slog.Attr{slog.String("queue", a.queue)}
	}
	return nil
}

func (a *riverJobsChange) preview(ctx context.Context, rc *runContext) (RiverJobsPreview, error) {
	jobs, skipped, err := a.find(ctx, rc.r.pool, riverRetryCap+1)
	if err != nil {
		return RiverJobsPreview{}, riverNotFound(err)
	}
	p := RiverJobsPreview{Count: len(jobs), Cap: riverRetryCap, Jobs: jobs, Skipped: skipped, Effect: a.effect}
	if p.Skipped == nil {
		p.Skipped = []SkippedJob{}
	}
	if len(jobs) == 0 {
		return RiverJobsPreview{}, fmt.Errorf("no River job matches %s now; refresh the page: %w", a.desc, ErrNotFound)
	}
	if len(jobs) > riverRetryCap {
		p.OverCap, p.Count, p.Jobs = true, riverRetryCap, jobs[:riverRetryCap]
		p.Warning = fmt.Sprintf("more than %d jobs match %s: narrow the filter (queue, kind, error class) and act in several steps", riverRetryCap, a.desc)
	} else if classes := riverClasses(jobs); len(classes) > 1 {
		p.Warning = fmt.Sprintf("the filter matches %d error classes (%s); retry one class at a time unless you know they are all transient",
			len(classes), strings.Join(classes, ", "))
	}
	return p, nil
}

// riverClasses are the distinct error classes of jobs, sorted.
func riverClasses(jobs []RiverJob) []string {
	var out []string
	for _, j := range jobs {
		if !slices.Contains(out, j.ErrorClass) {
			out = append(out, j.ErrorClass)
		}
	}
	slices.Sort(out)
	return out
}

func (a *riverJobsChange) execute(ctx context.Context, _ *runContext, tx pgx.Tx, p RiverJobsPreview) (RiverJobsResult, error) {
	if p.OverCap {
		return RiverJobsResult{}, fmt.Errorf("more than %d River jobs match %s; narrow the filter: %w", riverRetryCap, a.desc, ErrInvalid)
	}
	c, err := riverClient()
	if err != nil {
		return RiverJobsResult{}, err
	}
	ids := make([]int64, 0, len(p.Jobs))
	for _, j := range p.Jobs {
		ids = append(ids, j.ID)
	}
	// The guard: every previewed job is where the operator saw it, in
	// the same state at the same attempt.
	now, err := river.JobStates(ctx, tx, ids)
	if err != nil {
		return RiverJobsResult{}, riverNotFound(err)
	}
	byID := make(map[int64]RiverJob, len(now))
	for _, j := range now {
		byID[j.ID] = j
	}
	for _, j := range p.Jobs {
		cur, ok := byID[j.ID]
		if !ok {
			return RiverJobsResult{}, fmt.Errorf("River job %d no longer exists (River's cleaner deletes old finalized jobs); preview again: %w", j.ID, ErrGuard)
		}
		if cur.State != j.State || cur.Attempt != j.Attempt {
			return RiverJobsResult{}, fmt.Errorf("River job %d is now %s at attempt %d, not %s at attempt %d as previewed; preview again: %w",
				j.ID, cur.State, cur.Attempt, j.State, j.Attempt, ErrGuard)
		}
	}
	res := RiverJobsResult{IDs: ids, Jobs: make([]RiverJob, 0, len(ids))}
	for _, id := range ids {
		j, err := a.change(c, ctx, tx, id)
		if err != nil {
			return RiverJobsResult{}, riverNotFound(err)
		}
		res.Jobs = append(res.Jobs, j)
	}
	res.Changed = len(res.Jobs)
	return res, nil
}

func (a *riverJobsChange) sentence(p RiverJobsPreview) string {
	s := fmt.Sprintf("%s %s through River's client (%s); cap %s", a.what, counted(p.Count, "River job", "River jobs"), a.desc, humanize.Int(int64(p.Cap)))
	if len(p.Skipped) > 0 {
		s += fmt.Sprintf("; %d left alone", len(p.Skipped))
	}
	return s
}

func (a *riverJobsChange) done(r RiverJobsResult) string {
	states := map[string]int{}
	for _, j := range r.Jobs {
		states[j.State]++
	}
	var parts []string
	for _, s := range river.States {
		if n := states[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	return fmt.Sprintf("%s %s (%s); now %s", a.effect, counted(r.Changed, "River job", "River jobs"), a.desc, strings.Join(parts, ", "))
}

// riverJobsState is what a River jobs decision rests on: each job's id,
// state and attempt.
type riverJobsState struct {
	Jobs    []string `json:"jobs"`
	OverCap bool     `json:"over_cap"`
}

func (a *riverJobsChange) state(p RiverJobsPreview) any {
	s := riverJobsState{OverCap: p.OverCap}
	for _, j := range p.Jobs {
		s.Jobs = append(s.Jobs, fmt.Sprintf("%d:%s:%d", j.ID, j.State, j.Attempt))
	}
	return s
}

type riverJobsPlan = plan[RiverJobsPreview, RiverJobsResult]

// riverRetryParams are the parameters of river.retry: one job, or a filter
// over the discarded jobs.
type riverRetryParams struct {
	ID         int64
	Queue      string
	Kind       string
	ErrorClass string
}

func (p *riverRetryParams) fields() []field {
	return []field{
		intParam(&p.ID, "id", "One discarded River job's id (leave the filter empty)."),
		stringParam(&p.Queue, "queue", "Only discarded jobs of this River queue."),
		stringParam(&p.Kind, "kind", "Only discarded jobs of this kind."),
		stringParam(&p.ErrorClass, "error_class", "Only discarded jobs whose last error is of this class (as the dead letters page groups them)."),
	}
}

// filterText says a River filter in words: "queue `default`, class `x`".
func filterText(id int64, queue, kind, class string) string {
	if id > 0 {
		return fmt.Sprintf("job %d", id)
	}
	var parts []string
	if queue != "" {
		parts = append(parts, "queue "+code(queue))
	}
	if kind != "" {
		parts = append(parts, "kind "+code(kind))
	}
	if class != "" {
		parts = append(parts, "class "+code(class))
	}
	if len(parts) == 0 {
		return "every discarded job"
	}
	return strings.Join(parts, ", ")
}

var riverRetry = action(Spec{
	Name: "river.retry", Title: "Retry discarded River jobs", Role: auth.RoleOperator, Risk: RiskMedium,
	Description: "Makes discarded River jobs available now through River's JobRetry: one job by id, or every discarded job " +
		"a queue, kind and error class match (at most 1,000). A job that used all its attempts gets one more. " +
		"Fix the cause first, and look before retrying a unique kind: a new job with the same key may exist.",
}, func(p *riverRetryParams) (riverJobsPlan, error) {
	if p.ID < 0 {
		return nil, invalid("id", "must be a positive job id")
	}
	if p.ID > 0 && (p.Queue != "" || p.Kind != "" || p.ErrorClass != "") {
		return nil, invalid("id", "names one job; leave queue, kind and error_class empty with it")
	}
	for _, s := range []struct{ name, v string }{{"queue", p.Queue}, {"kind", p.Kind}, {"error_class", p.ErrorClass}} {
		if len(s.v) > 256 {
			return nil, invalid(s.name, "is longer than 256 characters")
		}
	}
	a := &riverJobsChange{what: "Retry", effect: "Retried", queue: p.Queue, desc: filterText(p.ID, p.Queue, p.Kind, p.ErrorClass),
		change: (*river.Client).JobRetryTx}
	a.find = func(ctx context.Context, db river.DBTX, limit int) ([]RiverJob, []SkippedJob, error) {
		if p.ID == 0 {
			jobs, err := river.DiscardedMatch(ctx, db, p.Queue, p.Kind, p.ErrorClass, limit)
			return jobs, nil, err
		}
		return pickStates(ctx, db, []int64{p.ID}, []string{river.StateDiscarded, river.StateCancelled, river.StateRetryable})
	}
	return a, nil
})

// pickStates reads the River jobs of ids and keeps those in one of allowed
// states; the others are skipped with the reason.
func pickStates(ctx context.Context, db river.DBTX, ids []int64, allowed []string) ([]RiverJob, []SkippedJob, error) {
	rows, err := river.JobStates(ctx, db, ids)
	if err != nil {
		return nil, nil, err
	}
	var jobs []RiverJob
	var skipped []SkippedJob
	found := map[int64]bool{}
	for _, j := range rows {
		found[j.ID] = true
		if slices.Contains(allowed, j.State) {
			jobs = append(jobs, j)
			continue
		}
		skipped = append(skipped, SkippedJob{ID: j.ID, Reason: fmt.Sprintf("is %s; this action applies to %s jobs", j.State, strings.Join(allowed, ", "))})
	}
	for _, id := range ids {
		if !found[id] {
			skipped = append(skipped, SkippedJob{ID: id, Reason: "does not exist (River's cleaner deletes finalized jobs after a while)"})
		}
	}
	if len(jobs) == 0 && len(skipped) > 0 {
		return nil, nil, fmt.Errorf("River job %d %s: %w", skipped[0].ID, skipped[0].Reason, ErrInvalid)
	}
	return jobs, skipped, nil
}

// riverCancelParams are the parameters of river.cancel.
type riverCancelParams struct{ IDs []int64 }

func (p *riverCancelParams) fields() []field {
	return []field{idsParam(&p.IDs, "ids", "The River jobs' ids.").required()}
}

var riverCancel = action(Spec{
	Name: "river.cancel", Title: "Cancel River jobs", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Cancels River jobs through River's JobCancel: a job waiting to run (available, scheduled, retryable, pending) " +
		"is cancelled now; a running one is marked and its client cancels the job's context, and the attempt ends when the worker returns.",
}, func(p *riverCancelParams) (riverJobsPlan, error) {
	if len(p.IDs) == 0 {
		return nil, invalid("ids", "names no job")
	}
	if len(p.IDs) > maxBulkJobs {
		return nil, invalid("ids", "names %d jobs; at most %d at once", len(p.IDs), maxBulkJobs)
	}
	desc := fmt.Sprintf("job %d", p.IDs[0])
	if len(p.IDs) > 1 {
		desc = fmt.Sprintf("%d jobs", len(p.IDs))
	}
	return &riverJobsChange{what: "Cancel", effect: "Cancelled", desc: desc, change: (*river.Client).JobCancelTx,
		find: func(ctx context.Context, db river.DBTX, _ int) ([]RiverJob, []SkippedJob, error) {
			return pickStates(ctx, db, p.IDs, []string{river.StateAvailable, river.StateScheduled, river.StateRetryable, river.StatePending, river.StateRunning})
		}}, nil
})

// riverQueueChange is river.queue_pause or river.queue_resume.
type riverQueueChange struct {
	queue  string
	pause  bool
	change func(c *river.Client, ctx context.Context, tx pgx.Tx, queue string) error
}

func (a *riverQueueChange) target() string { return "river_queue:" + a.queue }

func (a *riverQueueChange) logFields() []slog.Attr {
	return []slog.Attr{slog.String("queue", a.queue)}
}

func (a *riverQueueChange) note() string {
	if a.pause {
		return "River's clients stop fetching the queue's jobs within moments (or at their next poll); running jobs finish; the backlog grows"
	}
	return "River's clients fetch the queue's jobs again"
}

func (a *riverQueueChange) preview(ctx context.Context, rc *runContext) (RiverQueuePreview, error) {
	q, err := river.QueueGet(ctx, rc.r.pool, a.queue)
	if err != nil {
		return RiverQueuePreview{}, riverNotFound(err)
	}
	return RiverQueuePreview{Queue: q, Note: a.note()}, nil
}

func (a *riverQueueChange) execute(ctx context.Context, _ *runContext, tx pgx.Tx, p RiverQueuePreview) (RiverQueueResult, error) {
	now, err := river.QueueGet(ctx, tx, a.queue)
	if err != nil {
		return RiverQueueResult{}, riverNotFound(err)
	}
	if (now.PausedAt != nil) != (p.Queue.PausedAt != nil) {
		return RiverQueueResult{}, fmt.Errorf("River queue %q was %s since the preview; preview again: %w", a.queue, pausedText(now.PausedAt != nil), ErrGuard)
	}
	c, err := riverClient()
	if err != nil {
		return RiverQueueResult{}, err
	}
	if err := a.change(c, ctx, tx, a.queue); err != nil {
		return RiverQueueResult{}, riverNotFound(err)
	}
	after, err := river.QueueGet(ctx, tx, a.queue)
	return RiverQueueResult{Queue: after}, err
}

func pausedText(paused bool) string {
	if paused {
		return "paused"
	}
	return "resumed"
}

func (a *riverQueueChange) sentence(p RiverQueuePreview) string {
	verb := "Resume"
	if a.pause {
		verb = "Pause"
	}
	was := "running"
	if p.Queue.PausedAt != nil {
		was = "paused"
	}
	return fmt.Sprintf("%s River queue %s (now %s, %s available) through River's client", verb, code(a.queue), was, counted(int(p.Queue.Available), "job", "jobs"))
}

func (a *riverQueueChange) done(r RiverQueueResult) string {
	return fmt.Sprintf("River queue %s is %s; %s available", code(a.queue), map[bool]string{true: "paused", false: "running"}[r.Queue.PausedAt != nil],
		counted(int(r.Queue.Available), "job", "jobs"))
}

func (a *riverQueueChange) state(p RiverQueuePreview) any {
	return limitsState{Paused: p.Queue.PausedAt != nil}
}

type riverQueuePlan = plan[RiverQueuePreview, RiverQueueResult]

var riverQueuePause = action(Spec{
	Name: "river.queue_pause", Title: "Pause a River queue", Role: auth.RoleOperator, Risk: RiskLowMedium,
	Description: "Pauses a River queue through River's QueuePause: clients stop fetching its jobs; running jobs finish.",
}, func(p *queueParams) (riverQueuePlan, error) {
	return &riverQueueChange{queue: p.Queue, pause: true, change: (*river.Client).QueuePauseTx}, checkQueue(p.Queue)
})

var riverQueueResume = action(Spec{
	Name: "river.queue_resume", Title: "Resume a River queue", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Resumes a paused River queue through River's QueueResume: clients fetch its jobs again.",
}, func(p *queueParams) (riverQueuePlan, error) {
	return &riverQueueChange{queue: p.Queue, change: (*river.Client).QueueResumeTx}, checkQueue(p.Queue)
})

// riverNotFound turns queues/river's not-found (a River job or queue that
// does not exist) into the actions' ErrNotFound, keeping its sentence, and
// a database without River's tables into a refusal that says so.
func riverNotFound(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "42P01" {
		return fmt.Errorf("this database has no River tables on its search path (%s); the River actions change a River database's jobs and queues: %w", pg.Message, ErrNotFound)
	}
	if !errors.Is(err, queues.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %w", strings.TrimSuffix(err.Error(), ": "+queues.ErrNotFound.Error()), ErrNotFound)
}
