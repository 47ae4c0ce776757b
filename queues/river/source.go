package river

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/sqlset"
	"github.com/pgconsole/console/queues"
)

// River's job states, as river_job_state spells them, in the order a job
// usually moves through them.
const (
	StatePending   = "pending"
	StateScheduled = "scheduled"
	StateAvailable = "available"
	StateRunning   = "running"
	StateRetryable = "retryable"
	StateCompleted = "completed"
	StateCancelled = "cancelled"
	StateDiscarded = "discarded"
)

// States are River's job states in the order pages list them.
var States = []string{StateAvailable, StateScheduled, StateRetryable, StatePending, StateRunning,
	StateCompleted, StateCancelled, StateDiscarded}

// CompletedWindow is how far back Queues counts completed jobs: River keeps
// completed jobs until its cleaner deletes them (a day by default), and
// counting all of them would read that whole history on every page.
const CompletedWindow = time.Hour

// DiscardedReadLimit is how many of the newest discarded jobs FailedGroups
// groups by class: River counts no class as jobs fail, so the grouping
// reads jobs, and this bounds it.
const DiscardedReadLimit = 5000

// PanicClass is the error class of an attempt that panicked (River records
// a trace only then), as the console's engine names it.
const PanicClass = "panic"

// Source reads River's tables on db; it implements queues.Source.
type Source struct{ db sqlset.DBTX }

// NewSource is the queues.Source of River's tables on db.
func NewSource(db sqlset.DBTX) *Source { return &Source{db: db} }

var _ queues.Source = (*Source)(nil)

// Engine is queues.SourceRiver.
func (*Source) Engine() string { return queues.SourceRiver }

// States are River's states (States).
func (*Source) States() []string { return States }

// QueueStat is one River queue as QueueList reads it: its jobs counted by
// state (completed ones of the last CompletedWindow only), how long its
// oldest available job has waited, and when it was paused (nil when it is
// not). The pages, the findings and the flight recorder read this one row.
type QueueStat struct {
	Queue                  string     `db:"queue" json:"queue"`
	Available              int64      `db:"available" json:"available"`
	Scheduled              int64      `db:"scheduled" json:"scheduled"`
	Retryable              int64      `db:"retryable" json:"retryable"`
	Pending                int64      `db:"pending" json:"pending"`
	Running                int64      `db:"running" json:"running"`
	CompletedRecent        int64      `db:"completed_recent" json:"completed_recent"`
	Cancelled              int64      `db:"cancelled" json:"cancelled"`
	Discarded              int64      `db:"discarded" json:"discarded"`
	OldestAvailableAt      *time.Time `db:"oldest_available_at" json:"oldest_available_at,omitempty"`
	OldestAvailableSeconds float64    `db:"oldest_available_seconds" json:"oldest_available_seconds"`
	PausedAt               *time.Time `db:"paused_at" json:"paused_at,omitempty"`
}

// QueueList reads every River queue with its counts (QueueStat).
func QueueList(ctx context.Context, db sqlset.DBTX) ([]QueueStat, error) {
	return collectRows[QueueStat](ctx, db, "queue_list", "list River queues", time.Now().Add(-CompletedWindow))
}

// Queues lists River's queues with their counts by state; completed jobs
// are those of the last CompletedWindow.
func (s *Source) Queues(ctx context.Context) ([]queues.SourceQueue, error) {
	rows, err := QueueList(ctx, s.db)
	if err != nil {
		return nil, err
	}
	return SourceQueues(rows), nil
}

// SourceQueues are River's queue rows as the queue pages show them: the
// live rows of QueueList and the ones the flight recorder kept of an
// older moment go through this one function.
func SourceQueues(rows []QueueStat) []queues.SourceQueue {
	out := make([]queues.SourceQueue, 0, len(rows))
	for _, r := range rows {
		out = append(out, queues.SourceQueue{
			Queue: r.Queue,
			Counts: []queues.SourceStateCount{
				{State: StateAvailable, Count: r.Available},
				{State: StateScheduled, Count: r.Scheduled},
				{State: StateRetryable, Count: r.Retryable},
				{State: StatePending, Count: r.Pending},
				{State: StateRunning, Count: r.Running},
				{State: StateCompleted, Count: r.CompletedRecent, Note: "in the last hour"},
				{State: StateCancelled, Count: r.Cancelled},
				{State: StateDiscarded, Count: r.Discarded},
			},
			Waiting: r.Available, OldestWaitingSeconds: r.OldestAvailableSeconds,
			Running: r.Running, Failed: r.Discarded,
			Paused: r.PausedAt != nil, PausedAt: r.PausedAt,
		})
	}
	return out
}

// jobRow is a row of job_list.sql and job_get.sql.
type jobRow struct {
	ID           int64           `db:"id"`
	Queue        string          `db:"queue"`
	Kind         string          `db:"kind"`
	State        string          `db:"state"`
	Attempt      int             `db:"attempt"`
	MaxAttempts  int             `db:"max_attempts"`
	Priority     int             `db:"priority"`
	CreatedAt    time.Time       `db:"created_at"`
	ScheduledAt  time.Time       `db:"scheduled_at"`
	AttemptedAt  *time.Time      `db:"attempted_at"`
	FinalizedAt  *time.Time      `db:"finalized_at"`
	LastError    *string         `db:"last_error"`
	LastPanicked bool            `db:"last_panicked"`
	Args         json.RawMessage `db:"args"`
	Errors       json.RawMessage `db:"errors"`
	Metadata     json.RawMessage `db:"metadata"`
}

func (r jobRow) job() queues.SourceJob {
	j := queues.SourceJob{ID: r.ID, Queue: r.Queue, Kind: r.Kind, State: r.State, Attempt: r.Attempt,
		MaxAttempts: r.MaxAttempts, Priority: r.Priority, CreatedAt: r.CreatedAt, ScheduledAt: r.ScheduledAt,
		AttemptedAt: r.AttemptedAt, FinalizedAt: r.FinalizedAt, Args: r.Args, Errors: r.Errors, Metadata: r.Metadata}
	if r.LastError != nil {
		j.LastError = *r.LastError
		j.ErrorClass = ErrorClass(*r.LastError, r.LastPanicked)
	}
	return j
}

// ErrorClass is the class of a River attempt error: PanicClass when the
// attempt panicked (its entry has a trace), else queues.ErrorTextClass of
// the error's text, so River's failures group as the console's engine's do.
func ErrorClass(text string, panicked bool) string {
	if panicked {
		return PanicClass
	}
	return queues.ErrorTextClass(text)
}

// checkFilter refuses what would fail in the database or read it whole.
func checkFilter(f queues.SourceJobFilter) error {
	if f.State != "" && !slices.Contains(States, f.State) {
		return fmt.Errorf("%w: state %q is not a River state; use one of %v", queues.ErrBadFilter, f.State, States)
	}
	if len(f.ArgsContain) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(f.ArgsContain, &obj); err != nil || obj == nil {
			return fmt.Errorf("%w: args must be a JSON object the job's arguments contain, such as {\"customer_id\": 42}", queues.ErrBadFilter)
		}
	}
	return nil
}

// Jobs is one page of River jobs, newest first, keyset-paginated by id.
func (s *Source) Jobs(ctx context.Context, f queues.SourceJobFilter) ([]queues.SourceJob, error) {
	if err := checkFilter(f); err != nil {
		return nil, err
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	var args any
	if len(f.ArgsContain) > 0 {
		args = string(f.ArgsContain)
	}
	q, err := s.db.Query(ctx, sqlText("job_list"), f.Queue, f.Kind, f.State, args, f.CreatedFrom, f.CreatedBefore, f.BeforeID, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list River jobs: %w", err)
	}
	// A list leaves args, errors and metadata out (Job reads them).
	rows, err := pgx.CollectRows(q, pgx.RowToStructByNameLax[jobRow])
	if err != nil {
		return nil, fmt.Errorf("list River jobs: %w", err)
	}
	out := make([]queues.SourceJob, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.job())
	}
	return out, nil
}

// JobListSQL is the statement behind Jobs, for plan tests and the pages
// that show what ran.
func JobListSQL() string { return sqlText("job_list") }

// Job reads one River job whole; queues.ErrNotFound when no job has id.
func (s *Source) Job(ctx context.Context, id int64) (queues.SourceJob, error) {
	r, err := sqlset.One[jobRow](ctx, s.db, sqlText("job_get"), id)
	if errors.Is(err, pgx.ErrNoRows) {
		return queues.SourceJob{}, fmt.Errorf("no River job %d: %w", id, queues.ErrNotFound)
	}
	if err != nil {
		return queues.SourceJob{}, fmt.Errorf("read River job %d: %w", id, err)
	}
	return r.job(), nil
}

// discardedRow is a row of discarded_recent.sql.
type discardedRow struct {
	ID           int64     `db:"id"`
	Queue        string    `db:"queue"`
	FinalizedAt  time.Time `db:"finalized_at"`
	LastError    string    `db:"last_error"`
	LastPanicked bool      `db:"last_panicked"`
}

// FailedGroups groups the newest DiscardedReadLimit discarded jobs of queue
// ("" for every queue) by queue and the class of their last error, largest
// group first; Total is every discarded job, counted exactly.
func (s *Source) FailedGroups(ctx context.Context, queue string) (queues.SourceFailedGroups, error) {
	rows, err := collectRows[discardedRow](ctx, s.db, "discarded_recent", "read discarded River jobs", queue, DiscardedReadLimit)
	if err != nil {
		return queues.SourceFailedGroups{}, err
	}
	var total int64
	if err := s.db.QueryRow(ctx, sqlText("discarded_count"), queue).Scan(&total); err != nil {
		return queues.SourceFailedGroups{}, fmt.Errorf("count discarded River jobs: %w", err)
	}
	return queues.SourceFailedGroups{Groups: groupByClass(rows), Total: total, Read: int64(len(rows))}, nil
}

// groupByClass folds discarded jobs, newest first, into groups by queue and
// class; each group's sample is its newest job.
func groupByClass(rows []discardedRow) []queues.SourceFailedGroup {
	type key struct{ queue, class string }
	index := map[key]int{}
	var out []queues.SourceFailedGroup
	for _, r := range rows {
		k := key{r.Queue, ""}
		if r.LastError != "" || r.LastPanicked {
			k.class = ErrorClass(r.LastError, r.LastPanicked)
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, queues.SourceFailedGroup{Queue: k.queue, ErrorClass: k.class, LastSeen: r.FinalizedAt,
				SampleError: r.LastError, SampleJobID: r.ID})
		}
		out[i].Count++
		out[i].FirstSeen = r.FinalizedAt
	}
	slices.SortStableFunc(out, func(a, b queues.SourceFailedGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.ErrorClass, b.ErrorClass))
	})
	return out
}

// clientRow is a row of client_list.sql.
type clientRow struct {
	ClientID        string    `db:"client_id"`
	Queues          []string  `db:"queues"`
	Running         int64     `db:"running"`
	NewestAttemptAt time.Time `db:"newest_attempt_at"`
}

// Leader is River's elected leader (river_leader).
type Leader struct {
	LeaderID  string    `db:"leader_id"`
	ElectedAt time.Time `db:"elected_at"`
	ExpiresAt time.Time `db:"expires_at"`
	Expired   bool      `db:"expired"`
}

// LeaderGet reads River's leader; nil when nobody is elected.
func LeaderGet(ctx context.Context, db sqlset.DBTX) (*Leader, error) {
	l, err := sqlset.One[Leader](ctx, db, sqlText("leader_get"))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read River's leader: %w", err)
	}
	return &l, nil
}

// Workers are the River clients working jobs now (River records no
// heartbeat per client, so an idle client is not listed) and the leader.
func (s *Source) Workers(ctx context.Context) (queues.SourceWorkers, error) {
	rows, err := collectRows[clientRow](ctx, s.db, "client_list", "list River clients", nil...)
	if err != nil {
		return queues.SourceWorkers{}, err
	}
	var out queues.SourceWorkers
	for _, r := range rows {
		out.Workers = append(out.Workers, queues.SourceWorker{ID: r.ClientID, Queues: r.Queues, Running: r.Running,
			LastSeen: r.NewestAttemptAt, Alive: true})
	}
	l, err := LeaderGet(ctx, s.db)
	if err != nil {
		return out, err
	}
	if l != nil {
		out.Leader = &queues.SourceLeader{ID: l.LeaderID, ElectedAt: l.ElectedAt, ExpiresAt: l.ExpiresAt, Expired: l.Expired}
	}
	return out, nil
}

// StuckJob is a River job running longer than its bound (StuckRunning).
type StuckJob struct {
	ID             int64     `db:"id" json:"id"`
	Queue          string    `db:"queue" json:"queue"`
	Kind           string    `db:"kind" json:"kind"`
	Attempt        int       `db:"attempt" json:"attempt"`
	AttemptedAt    time.Time `db:"attempted_at" json:"attempted_at"`
	RunningSeconds float64   `db:"running_seconds" json:"running_seconds"`
	// LimitSeconds is the bound it passed: the rescue threshold, or the
	// kind's usual run time (UsualSeconds, the 95th percentile of its
	// last day's completed jobs; 0 when too few) times the margin.
	LimitSeconds float64 `db:"limit_seconds" json:"limit_seconds"`
	UsualSeconds float64 `db:"usual_seconds" json:"usual_seconds"`
	ClientID     string  `db:"client_id" json:"client_id"`
}

// StuckRunning lists at most limit River jobs running longer than rescue
// (River's RescueStuckJobsAfter, 1 h by default) or than margin times
// their kind's usual run time, the longest first.
func StuckRunning(ctx context.Context, db sqlset.DBTX, rescue time.Duration, margin float64, limit int) ([]StuckJob, error) {
	return collectRows[StuckJob](ctx, db, "stuck_running", "find stuck River jobs", rescue.Seconds(), margin, limit)
}
