package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// maxBulkJobs is the most jobs one bulk job action takes: a page of
// selected rows, not a filter over the whole table (requeue dead letters by
// filter for that).
const maxBulkJobs = 500

// BulkJobPreview is the preview of jobs.cancel and jobs.retry_now: the
// selected jobs the action applies to, and those it leaves alone.
type BulkJobPreview struct {
	Count   int          `json:"count"`
	Jobs    []JobSummary `json:"jobs"`
	Skipped []SkippedJob `json:"skipped"`
	Effect  string       `json:"effect"`
}

// SkippedJob is a selected job a bulk action leaves alone, and why.
type SkippedJob struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
}

// BulkJobResult is the jobs after a bulk job action.
type BulkJobResult struct {
	Changed int          `json:"changed"`
	Jobs    []JobSummary `json:"jobs"`
}

func (BulkJobPreview) actionPreview() {}
func (BulkJobResult) actionResult()   {}

// jobBulk applies one single-job action (each, whose id is unused) to
// several selected jobs in one transaction: all of them change, or none.
type jobBulk struct {
	ids  []int64
	each jobAction
}

func (a *jobBulk) target() string {
	if len(a.ids) == 1 {
		return fmt.Sprintf("job:%d", a.ids[0])
	}
	return fmt.Sprintf("jobs:%d", len(a.ids))
}

func (a *jobBulk) preview(ctx context.Context, rc *runContext) (BulkJobPreview, error) {
	p := BulkJobPreview{Jobs: []JobSummary{}, Skipped: []SkippedJob{}, Effect: a.each.effect}
	for _, id := range a.ids {
		j, err := queues.JobGet(ctx, rc.r.pool, id)
		if errors.Is(err, queues.ErrNotFound) {
			p.Skipped = append(p.Skipped, SkippedJob{ID: id, Reason: "no longer exists (archived or deleted)"})
			continue
		}
		if err != nil {
			return BulkJobPreview{}, fmt.Errorf("job %d: %w", id, err)
		}
		if !slices.Contains(a.each.allowed, j.Status) {
			p.Skipped = append(p.Skipped, SkippedJob{ID: id, Reason: fmt.Sprintf("is %s; this action applies to %s jobs",
				j.Status, strings.Join(a.each.allowed, " or "))})
			continue
		}
		p.Jobs = append(p.Jobs, summarize(j))
	}
	p.Count = len(p.Jobs)
	if p.Count == 0 {
		return BulkJobPreview{}, fmt.Errorf("none of the %s can be changed: this action applies to %s jobs: %w",
			counted(len(a.ids), "selected job", "selected jobs"), strings.Join(a.each.allowed, " or "), ErrInvalid)
	}
	return p, nil
}

func (a *jobBulk) execute(ctx context.Context, rc *runContext, tx pgx.Tx, p BulkJobPreview) (BulkJobResult, error) {
	res := BulkJobResult{Jobs: []JobSummary{}}
	for _, before := range p.Jobs {
		one := a.each
		one.id = before.ID
		r, err := one.execute(ctx, rc, tx, JobPreview{Job: before, Effect: one.effect})
		if err != nil {
			return BulkJobResult{}, err
		}
		res.Jobs = append(res.Jobs, r.Job)
	}
	res.Changed = len(res.Jobs)
	return res, nil
}

func (a *jobBulk) sentence(p BulkJobPreview) string {
	var queues []string
	for _, j := range p.Jobs {
		if !slices.Contains(queues, code(j.Queue)) {
			queues = append(queues, code(j.Queue))
		}
	}
	s := fmt.Sprintf("%s %s in %s %s: %s", a.each.verb, counted(p.Count, "job", "jobs"),
		map[bool]string{true: "queue", false: "queues"}[len(queues) == 1], strings.Join(queues, ", "), p.Effect)
	if n := len(p.Skipped); n > 0 {
		s += "; " + counted(n, "selected job is", "selected jobs are") + " left alone"
	}
	return s
}

func (a *jobBulk) done(r BulkJobResult) string {
	if len(r.Jobs) == 0 {
		return "No job changed"
	}
	return fmt.Sprintf("%s now %s", counted(r.Changed, "job is", "jobs are"), r.Jobs[0].Status)
}

func (a *jobBulk) state(p BulkJobPreview) any {
	out := make([]jobState, 0, len(p.Jobs))
	for _, j := range p.Jobs {
		out = append(out, jobStateOf(j))
	}
	return out
}

// bulkJobParams are the parameters of the bulk job actions.
type bulkJobParams struct{ IDs []int64 }

func (p *bulkJobParams) fields() []field {
	return []field{idsParam(&p.IDs, "ids", "The selected jobs' ids.").required()}
}

func (p *bulkJobParams) bulk(each jobAction) (plan[BulkJobPreview, BulkJobResult], error) {
	if len(p.IDs) > maxBulkJobs {
		return nil, invalid("ids", "%d jobs selected; select at most %d at a time", len(p.IDs), maxBulkJobs)
	}
	return &jobBulk{ids: p.IDs, each: each}, nil
}

var jobsCancel = action(Spec{
	Name: "jobs.cancel", Title: "Cancel selected jobs", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "job.cancel for several selected jobs at once, in one transaction: ready or running jobs " +
		"become dead (cancelled); selected jobs in other states are left alone and listed in the preview.",
}, func(p *bulkJobParams) (plan[BulkJobPreview, BulkJobResult], error) {
	return p.bulk(jobAction{allowed: []string{queues.StatusReady, queues.StatusRunning},
		effect: "each becomes dead (cancelled); a running attempt's ack will be refused",
		run:    queues.JobCancelTx, fenced: true, verb: "Cancel"})
})

var jobsRetryNow = action(Spec{
	Name: "jobs.retry_now", Title: "Retry selected jobs now", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "job.retry_now for several selected jobs at once, in one transaction: waiting or dead jobs " +
		"become ready and due now, keeping their history; selected jobs in other states are left alone.",
}, func(p *bulkJobParams) (plan[BulkJobPreview, BulkJobResult], error) {
	return p.bulk(jobAction{allowed: []string{queues.StatusReady, queues.StatusDead},
		effect: "each becomes ready and due now, keeping its history",
		run:    queues.JobRetryNowTx, verb: "Retry"})
})
