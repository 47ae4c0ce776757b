package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/queues"
)

// ScheduleKinds are the job kinds operators may schedule from the console:
// the engine's maintenance kinds (archive finished jobs, prune published
// outbox events and old inbox rows). Anything else is scheduled in code.
var ScheduleKinds = []string{"archive_jobs", "prune_outbox", "prune_inbox"}

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

// scheduleChange is create, update, enable and disable: read the current
// schedule, apply the change, store it.
type scheduleChange struct {
	name   string
	create bool
	apply  func(v *ScheduleView)
}

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
	if !contains(ScheduleKinds, v.Kind) {
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

func (a *scheduleChange) preview(ctx context.Context, rc *runContext) (any, error) {
	return a.plan(ctx, rc, rc.r.pool)
}

func (a *scheduleChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	p, err := a.plan(ctx, rc, tx)
	if err != nil {
		return nil, err
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
			return nil, fmt.Errorf("schedule %q was created by someone else meanwhile: %w", a.name, ErrGuard)
		}
	} else {
		s, err = queues.ScheduleUpdate(ctx, tx, sp)
	}
	if err != nil {
		return nil, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
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

type scheduleRunNow struct{ name string }

func (a *scheduleRunNow) target() string { return "schedule:" + a.name }

func (a *scheduleRunNow) preview(ctx context.Context, rc *runContext) (any, error) {
	s, err := queues.ScheduleGet(ctx, rc.r.pool, a.name)
	if err != nil {
		return nil, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	return RunNowPreview{Schedule: *scheduleView(s), Effect: fmt.Sprintf(
		"enqueues one %s job in queue %s now, outside the schedule; its regular runs are unchanged", s.Kind, s.Queue)}, nil
}

func (a *scheduleRunNow) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	s, err := queues.ScheduleGet(ctx, tx, a.name)
	if err != nil {
		return nil, wrapNotFound(err, queues.ErrNotFound, "schedule %q", a.name)
	}
	// One manual run at a time: the dedupe key holds while it is unfinished,
	// so a double click does not start two archive runs.
	j, err := queues.EnqueueTx(ctx, tx, queues.EnqueueParams{
		Queue: s.Queue, Kind: s.Kind, Payload: s.Payload, DedupeKey: "schedule:" + s.Name + ":run_now",
	})
	if errors.Is(err, queues.ErrDuplicate) {
		return nil, fmt.Errorf("a manual run of %q is already queued or running: %w", a.name, ErrGuard)
	}
	if err != nil {
		return nil, err
	}
	return RunNowResult{Job: summarize(j)}, nil
}

var scheduleNameParam = Param{Name: "name", Type: ParamString, Required: true, Description: "The schedule's name (lowercase letters, digits, . _ -)."}

func parseScheduleName(p params) (string, error) {
	name, err := p.str("name")
	if err != nil {
		return "", err
	}
	if !scheduleName.MatchString(name) {
		return "", invalid("name", "%q must match %s", name, scheduleName)
	}
	return name, nil
}

// parseScheduleFields reads the optional fields of create and update.
func parseScheduleFields(p params) (func(v *ScheduleView), error) {
	spec, err := p.str("spec")
	if err != nil {
		return nil, err
	}
	if spec != "" {
		if _, err := queues.ParseSpec(spec); err != nil {
			return nil, invalid("spec", "%v", err)
		}
	}
	kind, err := p.str("kind")
	if err != nil {
		return nil, err
	}
	queue, err := p.str("queue")
	if err != nil {
		return nil, err
	}
	payload, err := p.json("payload")
	if err != nil {
		return nil, err
	}
	enabled, err := p.bool("enabled")
	if err != nil {
		return nil, err
	}
	return func(v *ScheduleView) {
		if spec != "" {
			v.Spec = spec
		}
		if kind != "" {
			v.Kind = kind
		}
		if queue != "" {
			v.Queue = queue
		}
		if payload != nil {
			v.Payload = payload
		}
		if enabled != nil {
			v.Enabled = *enabled
		}
	}, nil
}

func init() {
	kindParam := Param{Name: "kind", Type: ParamString, Description: "What each run does.", Enum: ScheduleKinds}
	fields := []Param{
		{Name: "spec", Type: ParamString, Description: "Cron spec: 5 fields (minute hour day month weekday), optional seconds, or @daily, @every 1h...; UTC unless CRON_TZ= is given."},
		kindParam,
		{Name: "queue", Type: ParamString, Description: "The queue the runs go to (default maintenance)."},
		{Name: "payload", Type: ParamJSON, Description: "The job payload of every run, a JSON object (batch sizes, retention)."},
		{Name: "enabled", Type: ParamBool, Description: "Whether the schedule runs (default true)."},
	}
	create := []Param{scheduleNameParam}
	for _, f := range fields {
		if f.Name == "spec" || f.Name == "kind" {
			f.Required = true
		}
		create = append(create, f)
	}
	register(definition{
		spec: Spec{
			Name: "schedule.create", Title: "Create a maintenance schedule", Role: RoleOperator, Risk: RiskLow,
			Description: "Schedules an archive or prune job on a cron spec. The spec is validated and the next five " +
				"run times are previewed. Each run is enqueued once by the scheduler leader.",
			Params: create,
		},
		parse: func(p params) (plan, error) {
			name, err := parseScheduleName(p)
			if err != nil {
				return nil, err
			}
			apply, err := parseScheduleFields(p)
			return &scheduleChange{name: name, create: true, apply: apply}, err
		},
	})
	register(definition{
		spec: Spec{
			Name: "schedule.update", Title: "Change a maintenance schedule", Role: RoleOperator, Risk: RiskLow,
			Description: "Changes a schedule's spec, kind, queue, payload or enabled flag (omitted fields stay); " +
				"the next run is recomputed from now and the next five previewed.",
			Params: append([]Param{scheduleNameParam}, fields...),
		},
		parse: func(p params) (plan, error) {
			name, err := parseScheduleName(p)
			if err != nil {
				return nil, err
			}
			apply, err := parseScheduleFields(p)
			return &scheduleChange{name: name, apply: apply}, err
		},
	})
	for _, enable := range []bool{true, false} {
		name, title, desc := "schedule.enable", "Enable a schedule", "Switches a schedule on; the next five runs are previewed."
		if !enable {
			name, title, desc = "schedule.disable", "Disable a schedule", "Switches a schedule off; runs already enqueued still run."
		}
		register(definition{
			spec: Spec{Name: name, Title: title, Role: RoleOperator, Risk: RiskLow, Description: desc,
				Params: []Param{scheduleNameParam}},
			parse: func(p params) (plan, error) {
				n, err := parseScheduleName(p)
				return &scheduleChange{name: n, apply: func(v *ScheduleView) { v.Enabled = enable }}, err
			},
		})
	}
	register(definition{
		spec: Spec{
			Name: "schedule.run_now", Title: "Run a schedule now", Role: RoleOperator, Risk: RiskLow,
			Description: "Enqueues one run of the schedule's job now, outside its cron times; one manual run at a " +
				"time. Maintenance runs pace themselves by WAL rate and replica lag.",
			Params: []Param{scheduleNameParam},
		},
		parse: func(p params) (plan, error) {
			n, err := parseScheduleName(p)
			return &scheduleRunNow{name: n}, err
		},
	})
}
