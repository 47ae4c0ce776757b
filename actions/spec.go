package actions

import (
	"context"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Risk is an action's risk level in the words of the seed's table of
// mitigations (step 11 of the production runbook).
type Risk string

// Risk levels used by the registry.
const (
	RiskLow       Risk = "low"
	RiskLowMedium Risk = "low-medium"
	RiskMedium    Risk = "medium"
	RiskHigh      Risk = "high"
)

// ParamType says how a parameter is parsed and which form input suits it.
type ParamType string

// Parameter types. Numbers and booleans are also accepted as strings (form
// posts); times are RFC 3339; an int list is a JSON array or a
// comma-separated string; JSON is any JSON value (a job payload).
const (
	ParamString  ParamType = "string"
	ParamInt     ParamType = "int"
	ParamNumber  ParamType = "number"
	ParamBool    ParamType = "bool"
	ParamTime    ParamType = "time"
	ParamIntList ParamType = "int_list"
	ParamJSON    ParamType = "json"
)

// Param describes one parameter, enough for the UI to render an input and
// for the API documentation.
type Param struct {
	Name        string    `json:"name"`
	Type        ParamType `json:"type"`
	Required    bool      `json:"required"`
	Description string    `json:"description"`
	// Enum lists the allowed values of a string parameter, when fixed.
	Enum []string `json:"enum,omitempty"`
}

// Spec describes an action: its API name, the role it needs, its risk, the
// words the UI shows and its parameters. Confirm names a parameter the
// operator must type again to confirm (backend.terminate's pid), or is
// empty.
type Spec struct {
	Name        string  `json:"name"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Role        string  `json:"role"`
	Risk        Risk    `json:"risk"`
	Params      []Param `json:"params"`
	Confirm     string  `json:"confirm,omitempty"`
}

// plan is a validated request for one action, ready to preview and execute.
type plan interface {
	// target names what the action touches for the audit trail, such as
	// "queue:emails" or "backend:4711".
	target() string
	// preview says what would change. It runs outside the execution
	// transaction and must not change anything.
	preview(ctx context.Context, rc *runContext) (any, error)
	// execute re-checks the preview's guards and applies the change in tx,
	// returning the result to show and audit. It must not commit.
	execute(ctx context.Context, rc *runContext, tx pgx.Tx, preview any) (any, error)
}

// logFielder is implemented by plans that name a job or a queue: the
// Runner's log line carries them as fields of their own (job_id, queue), so
// the line can be found next to the engine's lines about the same job.
type logFielder interface {
	logFields() []slog.Attr
}

// definition is one registered action.
type definition struct {
	spec  Spec
	parse func(p params) (plan, error)
}

var definitions = map[string]definition{}

// order is the registry's display order; names not registered (an action
// compiled out) are skipped.
var order = []string{
	"deadletters.requeue",
	"job.cancel", "job.retry_now", "lease.expire",
	"queue.pause", "queue.resume", "queue.throttle",
	"relay.pause", "relay.resume", "relay.throttle",
	"outbox.requeue",
	"backend.cancel", "backend.terminate",
	"schedule.create", "schedule.update", "schedule.enable", "schedule.disable", "schedule.run_now",
	"incident.open", "incident.close", "incident.capture",
}

func register(d definition) {
	if _, dup := definitions[d.spec.Name]; dup {
		panic("actions: " + d.spec.Name + " registered twice")
	}
	definitions[d.spec.Name] = d
}

// Registry returns the spec of every action in display order. The slice is
// a copy the caller may keep.
func Registry() []Spec {
	var out []Spec
	for _, name := range order {
		if d, ok := definitions[name]; ok {
			s := d.spec
			s.Params = slices.Clone(s.Params)
			out = append(out, s)
		}
	}
	return out
}

// Lookup returns the spec of one action.
func Lookup(name string) (Spec, bool) {
	d, ok := definitions[name]
	return d.spec, ok
}
