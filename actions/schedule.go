package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// ScheduleKinds are the job kinds operators may schedule from the console:
// the engine's maintenance kinds (archive finished jobs, prune published
// outbox events and old inbox rows). Anything else is scheduled in code.
var ScheduleKinds = []string{"archive_jobs", "prune_outbox", "prune_inbox", "prune_jobs"}

var scheduleName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// ScheduleView is a schedule as previews and results show it.
type ScheduleView struct {
	Name    string          `json:"name"`
	Spec    string          `json:"spec"`
	Kind    string          `json:"kind"`
	Queue   string          `json:"queue"`
	Payload json.RawMessage `json:"payload"`
	Enabled bool            `json:"enabled"`
}

func scheduleView(s *queues.Schedule) *ScheduleView {
	if s == nil {
		return nil
	}
	return &ScheduleView{Name: s.Name, Spec: s.Spec, Kind: s.Kind, Queue: s.Queue, Payload: s.Payload, Enabled: s.Enabled}
}

// SchedulePreview is the preview of the schedule actions: the schedule before
// (nil for a new one) and after, and its next five run times (none when it
// will be disabled).
type SchedulePreview struct {
	Before   *ScheduleView `json:"before"`
	After    ScheduleView  `json:"after"`
	NextRuns []time.Time   `json:"next_runs"`
}

// ScheduleResult is the schedule as stored.
type ScheduleResult struct {
	Schedule queues.Schedule `json:"schedule"`
}

func (SchedulePreview) actionPreview() {}
func (ScheduleResult) actionResult()   {}
func (RunNowPreview) actionPreview()   {}
func (RunNowResult) actionResult()     {}

// scheduleChange is create, update, enable and disable: read the current
// schedule, apply the change, store it.
type scheduleChange struct {
	name   string
	create bool
	apply  func(v *ScheduleView)
	// verb starts the preview's sentence: "Create", "Disable".
	verb string
}

func (a *scheduleChange) sentence(p SchedulePreview) string {
	v := p.After
	s := fmt.Sprintf("%s schedule %s: %s in queue %s at %s", a.verb, code(a.name), code(v.Kind), code(v.Queue), code(v.Spec))
	if !v.Enabled {
		return s + "; disabled, so it will not run"
	}
	if len(p.NextRuns) > 0 {
		s += "; next run " + when(p.NextRuns[0])
	}
	return s
}

func (a *scheduleChange) done(r ScheduleResult) string {
	sc := r.Schedule
	s := fmt.Sprintf("Schedule %s is stored: %s in queue %s at %s", code(sc.Name), code(sc.Kind), code(sc.Queue), code(sc.Spec))
	if !sc.Enabled {
		return s + ", disabled"
	}
	if sc.NextRunAt != nil {
		s += "; next run " + when(*sc.NextRunAt)
	}
	return s
}

// state is the schedule as it is now (none for a new one): the change is
// decided against it.
func (a *scheduleChange) state(p SchedulePreview) any { return p.Before }

func (a *scheduleChange) target() string { return "schedule:" + a.name }

func (a *scheduleChange) plan(ctx context.Context, rc *runContext, db DBTX) (SchedulePreview, error) {
	cur, err := queues.ScheduleGet(ctx, db, a.name)
	switch {
	case a.create && err == nil:
		return SchedulePreview{}, fmt.Errorf("schedule %q already exists; change it with schedule.update: %w", a.name, ErrInvalid)
	case a.create && errors.Is(err, queues.ErrNotFound):
		cur = nil
	case err != nil:
		return SchedulePreview{}, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	p := SchedulePreview{Before: scheduleView(cur), NextRuns: []time.Time{}}
	if cur != nil {
		p.After = *scheduleView(cur)
	} else {
		p.After = ScheduleView{Name: a.name, Queue: "maintenance", Payload: json.RawMessage("{}"), Enabled: true}
	}
	a.apply(&p.After)
	if err := validateSchedule(p.After); err != nil {
		return SchedulePreview{}, err
	}
	runs, err := queues.NextRuns(p.After.Spec, rc.r.cfg.Now(), 5)
	if err != nil {
		return SchedulePreview{}, fmt.Errorf("spec: %v: %w", err, ErrInvalid)
	}
	if p.After.Enabled {
		p.NextRuns = runs
	}
	return p, nil
}

func validateSchedule(v ScheduleView) error {
	if !slices.Contains(ScheduleKinds, v.Kind) {
		return invalid("kind", "%q is not one of %v", v.Kind, ScheduleKinds)
	}
	if v.Queue == "" || len(v.Queue) > 128 {
		return invalid("queue", "must be 1 to 128 characters")
	}
	if len(v.Payload) > 0 && v.Payload[0] != '{' {
		return invalid("payload", "must be a JSON object")
	}
	if _, err := queues.ParseSpec(v.Spec); err != nil {
		return invalid("spec", "%v", err)
	}
	return nil
}

func (a *scheduleChange) preview(ctx context.Context, rc *runContext) (SchedulePreview, error) {
	return a.plan(ctx, rc, rc.r.pool)
}

func (a *scheduleChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ SchedulePreview) (ScheduleResult, error) {
	// Lock, then read: concurrent changes of one schedule apply one after
	// the other. A schedule being created has no row to lock; its insert
	// conflicts instead.
	if err := queues.ScheduleLockTx(ctx, tx, a.name); err != nil {
		return ScheduleResult{}, err
	}
	p, err := a.plan(ctx, rc, tx)
	if err != nil {
		return ScheduleResult{}, err
	}
	sp := queues.ScheduleParams{
		Name: p.After.Name, Spec: p.After.Spec, Kind: p.After.Kind, Queue: p.After.Queue,
		Payload: p.After.Payload, Disabled: !p.After.Enabled, By: rc.actor.Name,
	}
	var s *queues.Schedule
	if a.create {
		s, err = queues.ScheduleCreate(ctx, tx, sp)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return ScheduleResult{}, fmt.Errorf("schedule %q was created by someone else meanwhile: %w", a.name, ErrGuard)
		}
	} else {
		s, err = queues.ScheduleUpdate(ctx, tx, sp)
	}
	if err != nil {
		return ScheduleResult{}, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	return ScheduleResult{Schedule: *s}, nil
}

// RunNowPreview is the preview of schedule.run_now: the job it will enqueue.
type RunNowPreview struct {
	Schedule ScheduleView `json:"schedule"`
	Effect   string       `json:"effect"`
}

// RunNowResult is the job enqueued.
type RunNowResult struct {
	Job JobSummary `json:"job"`
}

type scheduleRun struct{ name string }

func (a *scheduleRun) target() string { return "schedule:" + a.name }

func (a *scheduleRun) preview(ctx context.Context, rc *runContext) (RunNowPreview, error) {
	s, err := queues.ScheduleGet(ctx, rc.r.pool, a.name)
	if err != nil {
		return RunNowPreview{}, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	return RunNowPreview{Schedule: *scheduleView(s), Effect: fmt.Sprintf(
		"enqueues one %s job in queue %s now, outside the schedule; its regular runs are unchanged", s.Kind, s.Queue)}, nil
}

func (a *scheduleRun) sentence(p RunNowPreview) string {
	return fmt.Sprintf("Enqueue one %s job in queue %s now from schedule %s; its regular runs are unchanged",
		code(p.Schedule.Kind), code(p.Schedule.Queue), code(a.name))
}

func (a *scheduleRun) done(r RunNowResult) string {
	return fmt.Sprintf("Enqueued job %d (%s in queue %s) from schedule %s", r.Job.ID, code(r.Job.Kind), code(r.Job.Queue), code(a.name))
}

func (a *scheduleRun) state(p RunNowPreview) any { return p.Schedule }

func (a *scheduleRun) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ RunNowPreview) (RunNowResult, error) {
	if err := queues.ScheduleLockTx(ctx, tx, a.name); err != nil {
		return RunNowResult{}, err
	}
	s, err := queues.ScheduleGet(ctx, tx, a.name)
	if err != nil {
		return RunNowResult{}, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	// One manual run at a time: the dedupe key holds while it is unfinished,
	// so a double click does not start two archive runs.
	j, err := queues.EnqueueTx(ctx, tx, queues.EnqueueParams{
		Queue: s.Queue, Kind: s.Kind, Payload: s.Payload, DedupeKey: "schedule:" + s.Name + ":run_now",
	})
	if errors.Is(err, queues.ErrDuplicate) {
		return RunNowResult{}, fmt.Errorf("a manual run of %q is already queued or running: %w", a.name, ErrGuard)
	}
	if err != nil {
		return RunNowResult{}, err
	}
	// The manual run is the schedule's last run, as the list shows it.
	if err := queues.ScheduleMarkRunTx(ctx, tx, a.name, j.ID); err != nil {
		return RunNowResult{}, err
	}
	return RunNowResult{Job: summarize(j)}, nil
}

type schedulePlan = plan[SchedulePreview, ScheduleResult]

// scheduleNameParams name one schedule.
type scheduleNameParams struct{ Name string }

func (p *scheduleNameParams) fields() []field {
	return []field{stringParam(&p.Name, "name", "The schedule's name (lowercase letters, digits, . _ -).").required()}
}

func (p *scheduleNameParams) check() error {
	if !scheduleName.MatchString(p.Name) {
		return invalid("name", "%q must match %s", p.Name, scheduleName)
	}
	return nil
}

// scheduleParams are the parameters of schedule.create and schedule.update;
// what is not given stays as it is (or takes its default on create).
type scheduleParams struct {
	scheduleNameParams
	Spec, Kind, Queue string
	Payload           json.RawMessage
	Enabled           *bool
}

func (p *scheduleParams) fields() []field {
	return append(p.scheduleNameParams.fields(),
		stringParam(&p.Spec, "spec", "Cron spec: 5 fields (minute hour day month weekday), optional seconds, or @daily, @every 1h...; UTC unless CRON_TZ= is given."),
		stringParam(&p.Kind, "kind", "What each run does.").oneOf(ScheduleKinds...),
		stringParam(&p.Queue, "queue", "The queue the runs go to (default maintenance)."),
		jsonParam(&p.Payload, "payload", "The job payload of every run, a JSON object (batch sizes, retention)."),
		optBoolParam(&p.Enabled, "enabled", "Whether the schedule runs (default true)."),
	)
}

// createParams make spec and kind required.
type createParams struct{ scheduleParams }

func (p *createParams) fields() []field {
	fs := p.scheduleParams.fields()
	for i := range fs {
		if fs[i].Name == "spec" || fs[i].Name == "kind" {
			fs[i] = fs[i].required()
		}
	}
	return fs
}

// change checks the fields and returns the change they make to a schedule.
func (p *scheduleParams) change(create bool) (schedulePlan, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if p.Spec != "" {
		if _, err := queues.ParseSpec(p.Spec); err != nil {
			return nil, invalid("spec", "%v", err)
		}
	}
	verb := "Change"
	if create {
		verb = "Create"
	}
	return &scheduleChange{name: p.Name, create: create, verb: verb, apply: func(v *ScheduleView) {
		if p.Spec != "" {
			v.Spec = p.Spec
		}
		if p.Kind != "" {
			v.Kind = p.Kind
		}
		if p.Queue != "" {
			v.Queue = p.Queue
		}
		if p.Payload != nil {
			v.Payload = p.Payload
		}
		if p.Enabled != nil {
			v.Enabled = *p.Enabled
		}
	}}, nil
}

var scheduleCreate = action(Spec{
	Name: "schedule.create", Title: "Create a maintenance schedule", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Schedules an archive or prune job on a cron spec. The spec is validated and the next five " +
		"run times are previewed. Each run is enqueued once by the scheduler leader.",
}, func(p *createParams) (schedulePlan, error) { return p.change(true) })

var scheduleUpdate = action(Spec{
	Name: "schedule.update", Title: "Change a maintenance schedule", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Changes a schedule's spec, kind, queue, payload or enabled flag (omitted fields stay); " +
		"the next run is recomputed from now and the next five previewed.",
}, func(p *scheduleParams) (schedulePlan, error) { return p.change(false) })

func scheduleSwitch(enable bool) func(p *scheduleNameParams) (schedulePlan, error) {
	return func(p *scheduleNameParams) (schedulePlan, error) {
		verb := map[bool]string{true: "Enable", false: "Disable"}[enable]
		return &scheduleChange{name: p.Name, verb: verb, apply: func(v *ScheduleView) { v.Enabled = enable }}, p.check()
	}
}

var scheduleEnable = action(Spec{
	Name: "schedule.enable", Title: "Enable a schedule", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Switches a schedule on; the next five runs are previewed.",
}, scheduleSwitch(true))

var scheduleDisable = action(Spec{
	Name: "schedule.disable", Title: "Disable a schedule", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Switches a schedule off; runs already enqueued still run.",
}, scheduleSwitch(false))

var scheduleRunNow = action(Spec{
	Name: "schedule.run_now", Title: "Run a schedule now", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Enqueues one run of the schedule's job now, outside its cron times; one manual run at a " +
		"time. Maintenance runs pace themselves by WAL rate and replica lag.",
}, func(p *scheduleNameParams) (plan[RunNowPreview, RunNowResult], error) {
	return &scheduleRun{name: p.Name}, p.check()
})
