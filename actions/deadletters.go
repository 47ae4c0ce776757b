package actions

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
)

// ErrorClassCount is one error class among the dead jobs a filter matches;
// the engine owns the statement that counts them.
type ErrorClassCount = queues.DeadLetterClassCount

// RequeuePreview is the preview of deadletters.requeue: how many dead jobs
// match, their error classes, a sample, and whether the count is over the
// cap (then execution is refused).
type RequeuePreview struct {
	Count         int64             `json:"count"`
	Cap           int               `json:"cap"`
	OverCap       bool              `json:"over_cap"`
	Batches       int               `json:"batches"`
	ErrorClasses  []ErrorClassCount `json:"error_classes"`
	Sample        []JobSummary      `json:"sample"`
	ResetAttempts bool              `json:"reset_attempts"`
	Warning       string            `json:"warning,omitempty"`
}

// RequeueResult is what a requeue did, for deadletters.requeue (dead jobs
// back to ready) and outbox.requeue (dead outbox events back to pending):
// the ids it moved, and Skipped, the rows that matched at the start but
// were left dead (another operator moved them meanwhile, or an unfinished
// job holds a dead job's dedupe key).
type RequeueResult struct {
	Requeued int     `json:"requeued"`
	IDs      []int64 `json:"ids"`
	Skipped  int64   `json:"skipped"`
	Batches  int     `json:"batches"`
	// Effect says what the requeue did in words, for the audit trail: a
	// requeue whose rows another one moved first changed nothing.
	Effect string `json:"effect"`
}

func (RequeuePreview) actionPreview() {}
func (RequeueResult) actionResult()   {}

type deadLetterRequeue struct {
	f     queues.DeadLetterFilter
	reset bool
}

func (a *deadLetterRequeue) target() string {
	if len(a.f.IDs) == 1 && a.f.Queue == "" && a.f.ErrorClass == "" {
		return fmt.Sprintf("job:%d", a.f.IDs[0])
	}
	var parts []string
	if a.f.Queue != "" {
		parts = append(parts, "queue:"+a.f.Queue)
	}
	if a.f.ErrorClass != "" {
		parts = append(parts, "error_class:"+a.f.ErrorClass)
	}
	if len(a.f.IDs) > 0 {
		parts = append(parts, fmt.Sprintf("ids:%d", len(a.f.IDs)))
	}
	if len(parts) == 0 {
		return "deadletters"
	}
	return strings.Join(parts, " ")
}

func (a *deadLetterRequeue) logFields() []slog.Attr {
	var out []slog.Attr
	if a.f.Queue != "" {
		out = append(out, slog.String("queue", a.f.Queue))
	}
	if len(a.f.IDs) == 1 {
		out = append(out, slog.Int64("job_id", a.f.IDs[0]))
	}
	return out
}

func (a *deadLetterRequeue) overCap(rc *runContext, n int64) error {
	return fmt.Errorf("%d dead jobs match, more than the cap of %d one requeue may move; "+
		"narrow the filter (queue, error_class, since, until) and requeue in several steps, "+
		"and never replay poison messages in bulk: %w", n, rc.r.cfg.RequeueCap, ErrInvalid)
}

func (a *deadLetterRequeue) preview(ctx context.Context, rc *runContext) (RequeuePreview, error) {
	db := rc.r.pool
	n, err := queues.DeadLetterCount(ctx, db, a.f)
	if err != nil {
		return RequeuePreview{}, err
	}
	if n == 0 {
		return RequeuePreview{}, fmt.Errorf("no dead jobs match %s; they may have been requeued already. Refresh the dead letters: %w", a.target(), ErrNotFound)
	}
	classes, err := queues.DeadLetterClassList(ctx, db, a.f, 50)
	if err != nil {
		return RequeuePreview{}, err
	}
	sample, err := queues.DeadLetterSample(ctx, db, a.f, 10)
	if err != nil {
		return RequeuePreview{}, err
	}
	p := RequeuePreview{
		Count: n, Cap: rc.r.cfg.RequeueCap, OverCap: n > int64(rc.r.cfg.RequeueCap),
		Batches:      int((min(n, int64(rc.r.cfg.RequeueCap)) + int64(rc.r.cfg.RequeueBatch) - 1) / int64(rc.r.cfg.RequeueBatch)),
		ErrorClasses: classes, ResetAttempts: a.reset, Sample: []JobSummary{},
	}
	for i := range sample {
		p.Sample = append(p.Sample, summarize(&sample[i]))
	}
	if p.OverCap {
		p.Warning = a.overCap(rc, n).Error()
	} else if len(classes) > 1 {
		p.Warning = fmt.Sprintf("the filter matches %d error classes; requeue one class at a time unless you know they are all transient", len(classes))
	}
	return p, nil
}

func (a *deadLetterRequeue) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ RequeuePreview) (RequeueResult, error) {
	n, err := queues.DeadLetterCount(ctx, tx, a.f)
	if err != nil {
		return RequeueResult{}, err
	}
	return requeueChecked(rc, a, "dead jobs", n, deadJobsSkipped, func(limit int) ([]int64, error) {
		return queues.DeadLetterRequeueTx(ctx, tx, a.f, limit, a.reset)
	})
}

// Why a requeue skips rows that matched when it started.
const (
	deadJobsSkipped   = "another operator moved them meanwhile, or an unfinished job holds their dedupe key"
	deadEventsSkipped = "another operator moved them meanwhile"
)

// requeueEffect says what a requeue did, for the audit trail: how many
// rows it moved and how many matched at the start but were no longer its
// to move, and why (one of the skipped reasons above).
func requeueEffect(moved int, skipped int64, why string) string {
	switch {
	case moved == 0:
		return fmt.Sprintf("changed nothing: 0 moved, %d skipped (%s)", skipped, why)
	case skipped > 0:
		return fmt.Sprintf("%d moved, %d skipped (%s)", moved, skipped, why)
	}
	return fmt.Sprintf("%d moved", moved)
}

// requeue is a requeue action as requeueChecked re-checks it.
type requeue interface {
	target() string
	// overCap is the refusal of n matched rows, more than the cap.
	overCap(rc *runContext, n int64) error
}

// requeueChecked re-checks a requeue at execution, where n rows (what:
// "dead jobs") match now: over the cap it refuses with a's overCap, with
// none left it is ErrGuard (another requeue moved them first); otherwise
// it moves them with requeueInBatches.
func requeueChecked(rc *runContext, a requeue, what string, n int64, why string, move func(limit int) ([]int64, error)) (RequeueResult, error) {
	if n > int64(rc.r.cfg.RequeueCap) {
		return RequeueResult{}, a.overCap(rc, n)
	}
	if n == 0 {
		return RequeueResult{}, fmt.Errorf("no %s match %s any more: %w", what, a.target(), ErrGuard)
	}
	return rc.r.requeueInBatches(n, why, move)
}

// requeueInBatches moves up to n matched rows (at most the cap) with move,
// one batch of at most RequeueBatch rows at a time, in the caller's
// transaction, and says what it did. Each batch moves rows out of the state
// it selects, so the next one picks the next rows; a short batch means
// nothing more can move.
func (r *Runner) requeueInBatches(n int64, why string, move func(limit int) ([]int64, error)) (RequeueResult, error) {
	res := RequeueResult{IDs: []int64{}}
	for len(res.IDs) < r.cfg.RequeueCap && int64(len(res.IDs)) < n {
		limit := min(r.cfg.RequeueBatch, r.cfg.RequeueCap-len(res.IDs))
		moved, err := move(limit)
		if err != nil {
			return RequeueResult{}, err
		}
		res.Batches++
		res.IDs = append(res.IDs, moved...)
		if len(moved) < limit {
			break
		}
	}
	res.Requeued = len(res.IDs)
	res.Skipped = n - int64(res.Requeued)
	res.Effect = requeueEffect(res.Requeued, res.Skipped, why)
	return res, nil
}

func idsArg(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// requeueParams are the parameters of deadletters.requeue: listed ids, a
// filter, or both.
type requeueParams struct {
	IDs           []int64
	Queue         string
	ErrorClass    string
	Since, Until  *time.Time
	ResetAttempts bool
}

func (p *requeueParams) fields() []field {
	return []field{
		idsParam(&p.IDs, "ids", "Dead job ids to requeue (instead of, or narrowing, a filter)."),
		stringParam(&p.Queue, "queue", "Only dead jobs of this queue."),
		stringParam(&p.ErrorClass, "error_class", "Only dead jobs whose last error has this class."),
		timeParam(&p.Since, "since", "Only jobs that died at or after this time (RFC 3339)."),
		timeParam(&p.Until, "until", "Only jobs that died before this time (RFC 3339)."),
		boolParam(&p.ResetAttempts, "reset_attempts", "Give the jobs a full set of attempts again (default: one more attempt)."),
	}
}

var deadLettersRequeue = action(Spec{
	Name: "deadletters.requeue", Title: "Requeue dead letters", Role: auth.RoleOperator, Risk: RiskMedium,
	Description: "Puts dead jobs back to ready now: listed ids, or every dead job matching a filter " +
		"(queue, error class, finished between since and until). The preview shows the count, the error " +
		"classes and a sample. At most the configured cap (default 10,000) move in one action, in batches; " +
		"jobs keep their error history, and attempts reset only when asked. Classify first (RB-G): requeue " +
		"transient classes, not poison messages.",
}, func(p *requeueParams) (plan[RequeuePreview, RequeueResult], error) {
	f := queues.DeadLetterFilter{IDs: p.IDs, Queue: p.Queue, ErrorClass: p.ErrorClass, Since: p.Since, Until: p.Until}
	if len(f.IDs) == 0 && f.Queue == "" && f.ErrorClass == "" && f.Since == nil && f.Until == nil {
		return nil, fmt.Errorf("give ids or a filter (queue, error_class, since, until): %w", ErrInvalid)
	}
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		return nil, invalid("until", "must be after since")
	}
	return &deadLetterRequeue{f: f, reset: p.ResetAttempts}, nil
})

// filterWords says which dead jobs a filter picks, for a sentence: " of
// class `timeout` in queue `email`".
func (a *deadLetterRequeue) filterWords() string {
	var b strings.Builder
	if a.f.ErrorClass != "" {
		b.WriteString(" of class " + code(a.f.ErrorClass))
	}
	if a.f.Queue != "" {
		b.WriteString(" in queue " + code(a.f.Queue))
	}
	if len(a.f.IDs) > 0 {
		b.WriteString(" among " + counted(len(a.f.IDs), "selected id", "selected ids"))
	}
	if a.f.Since != nil {
		b.WriteString(" that died since " + when(*a.f.Since))
	}
	if a.f.Until != nil {
		b.WriteString(" that died before " + when(*a.f.Until))
	}
	return b.String()
}

func (a *deadLetterRequeue) sentence(p RequeuePreview) string {
	s := "Requeue " + counted(p.Count, "dead job", "dead jobs") + a.filterWords() + "; cap " + humanize.Int(p.Cap)
	if p.OverCap {
		s += ": over the cap, so execution is refused; narrow the filter"
	} else if n := len(p.ErrorClasses); n > 1 {
		s += "; " + strconv.Itoa(n) + " error classes"
	}
	if p.ResetAttempts {
		s += "; attempts reset"
	}
	return s
}

func (a *deadLetterRequeue) done(r RequeueResult) string {
	return requeueDone(counted(r.Requeued, "dead job", "dead jobs")+a.filterWords(), r.Skipped, deadJobsSkipped)
}

// requeueDone says what a requeue moved, and how many matches it skipped
// and why.
func requeueDone(moved string, skipped int64, why string) string {
	s := "Requeued " + moved
	if skipped > 0 {
		s += "; " + humanize.Int(skipped) + " skipped (" + why + ")"
	}
	return s
}

// requeueState is what a requeue's decision rests on: how many dead jobs
// match, of which classes.
type requeueState struct {
	Count   int64             `json:"count"`
	Classes []ErrorClassCount `json:"classes"`
}

func (a *deadLetterRequeue) state(p RequeuePreview) any {
	return requeueState{Count: p.Count, Classes: p.ErrorClasses}
}
