package queues

import (
	"context"
	"fmt"
)

// nativeSource is this engine's Source: each method calls the function the
// pages already call, so both read the same facts.
type nativeSource struct{ db DBTX }

// NewNativeSource is the Source of this engine's tables on db.
func NewNativeSource(db DBTX) Source { return nativeSource{db: db} }

func (nativeSource) Engine() string { return SourceConsole }

func (nativeSource) States() []string {
	return []string{StatusReady, StatusRunning, StatusDead, StatusDone}
}

func (s nativeSource) Queues(ctx context.Context) ([]SourceQueue, error) {
	stats, err := QueueHealth(ctx, s.db, QueueHealthParams{})
	if err != nil {
		return nil, err
	}
	out := make([]SourceQueue, 0, len(stats))
	for _, q := range stats {
		out = append(out, SourceQueue{
			Queue: q.Queue,
			Counts: []SourceStateCount{
				{State: StatusReady, Count: q.ReadyTotal()},
				{State: StatusRunning, Count: q.Running},
				{State: StatusDead, Count: q.Dead},
				{State: StatusDone, Count: q.DoneApprox, Note: "estimated from planner statistics"},
			},
			Waiting: q.Ready, OldestWaitingSeconds: q.OldestReadySeconds,
			Running: q.Running, Failed: q.Dead, Paused: q.Paused,
		})
	}
	return out, nil
}

func (s nativeSource) Jobs(ctx context.Context, f SourceJobFilter) ([]SourceJob, error) {
	if len(f.ArgsContain) > 0 {
		// No index on payloads: such a filter would read the whole table.
		return nil, fmt.Errorf("%w: the console's engine cannot filter jobs by their arguments (no index on payloads); filter by queue, kind, state or time instead", ErrBadFilter)
	}
	jobs, err := JobList(ctx, s.db, JobListParams{Queue: f.Queue, Kind: f.Kind, Status: f.State,
		CreatedFrom: f.CreatedFrom, CreatedUntil: f.CreatedBefore, BeforeID: f.BeforeID, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]SourceJob, 0, len(jobs))
	for i := range jobs {
		out = append(out, nativeJob(&jobs[i]))
	}
	return out, nil
}

func (s nativeSource) Job(ctx context.Context, id int64) (SourceJob, error) {
	j, err := JobGet(ctx, s.db, id)
	if err != nil {
		return SourceJob{}, fmt.Errorf("read job %d: %w", id, err)
	}
	return nativeJob(j), nil
}

// nativeJob maps a job of this engine to a SourceJob.
func nativeJob(j *Job) SourceJob {
	sj := SourceJob{ID: j.ID, Queue: j.Queue, Kind: j.Kind, State: j.Status, Attempt: j.Attempts,
		MaxAttempts: j.MaxAttempts, Priority: int(j.Priority), CreatedAt: j.CreatedAt, ScheduledAt: j.AvailableAt,
		AttemptedAt: j.StartedAt, FinalizedAt: j.FinishedAt, Args: j.Payload, Errors: j.Errors}
	if j.ErrorClass != nil {
		sj.ErrorClass = *j.ErrorClass
	}
	if j.LastError != nil {
		sj.LastError = *j.LastError
	}
	return sj
}

func (s nativeSource) FailedGroups(ctx context.Context, queue string) (SourceFailedGroups, error) {
	groups, err := DeadLetterGroups(ctx, s.db, queue)
	if err != nil {
		return SourceFailedGroups{}, err
	}
	total, err := DeadLetterTotals(ctx, s.db, queue)
	if err != nil {
		return SourceFailedGroups{}, err
	}
	out := SourceFailedGroups{Total: total.Dead, Read: total.Dead}
	for _, g := range groups {
		out.Groups = append(out.Groups, SourceFailedGroup(g))
	}
	return out, nil
}

func (s nativeSource) Workers(ctx context.Context) (SourceWorkers, error) {
	ws, err := WorkerList(ctx, s.db, 0)
	if err != nil {
		return SourceWorkers{}, err
	}
	var out SourceWorkers
	for _, w := range ws {
		out.Workers = append(out.Workers, SourceWorker{ID: w.ID, Queues: w.Queues, Running: int64(w.InFlight), LastSeen: w.LastSeenAt, Alive: w.Alive})
	}
	return out, nil
}
