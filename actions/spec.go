package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// Risk is an action's risk level, in the words of the production runbook's
// table of mitigations.
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
// for the API documentation. It comes from the action's params struct.
type Param struct {
	Name        string    `json:"name"`
	Type        ParamType `json:"type"`
	Required    bool      `json:"required"`
	Description string    `json:"description"`
	// Enum lists the allowed values of a string parameter, when fixed.
	Enum []string `json:"enum,omitempty"`
	// Guard marks a parameter a preview fills for the execution's guard
	// (a backend's backend_start, a prepared transaction's prepared_at):
	// a form carries it from the preview and never asks for it.
	Guard bool `json:"guard,omitempty"`
}

// Spec describes an action: its API name, the role it needs, its risk, the
// words the UI shows and its parameters. Confirm names a parameter the
// operator must type again to confirm (backend.terminate's confirm_pid), or
// is empty.
type Spec struct {
	Name        string  `json:"name"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	Role        string  `json:"role"`
	Risk        Risk    `json:"risk"`
	Params      []Param `json:"params"`
	Confirm     string  `json:"confirm,omitempty"`
}

// Preview is what an action would change: counts, sample rows, a backend's
// fingerprint, the next cron runs. Every action returns one of the package's
// *Preview types; the set is closed, so a caller can switch on the type.
type Preview interface{ actionPreview() }

// Result is what an action changed, one of the package's *Result types (or
// IncidentView).
type Result interface{ actionResult() }

// plan is a validated request for one action, ready to preview and execute.
type plan[V Preview, R Result] interface {
	// target names what the action touches for the audit trail, such as
	// "queue:emails" or "backend:4711".
	target() string
	// preview says what would change. It runs outside the execution
	// transaction and must not change anything.
	preview(ctx context.Context, rc *runContext) (V, error)
	// execute re-checks the preview's guards and applies the change in tx,
	// returning the result to show and audit. It must not commit.
	execute(ctx context.Context, rc *runContext, tx pgx.Tx, preview V) (R, error)
	// sentence says in one plain sentence, with the key numbers, what the
	// previewed action will do ("Requeue 27 dead jobs of class `timeout`
	// in queue `email`; cap 10,000"). Names are in backquotes.
	sentence(preview V) string
	// done says in one plain sentence what the action did.
	done(result R) string
	// state is the part of a preview the operator's decision rests on and
	// the execution's guards check (a count, a paused flag, a backend's
	// fingerprint), without what moves on its own (ages, in-flight counts).
	// Two previews with equal states are the same decision; see
	// Outcome.Version.
	state(preview V) any
}

// logFielder is implemented by plans that name a job or a queue: the
// Runner's log line carries them as fields of their own (job_id, queue), so
// the line can be found next to the engine's lines about the same job.
type logFielder interface {
	logFields() []slog.Attr
}

// runPlan is a plan as the Runner holds it, its preview and result types
// hidden behind Preview and Result.
type runPlan interface {
	target() string
	preview(ctx context.Context, rc *runContext) (Preview, error)
	execute(ctx context.Context, rc *runContext, tx pgx.Tx, preview Preview) (Result, error)
	sentence(preview Preview) string
	done(result Result) string
	state(preview Preview) any
	logFields() []slog.Attr
}

type typedPlan[V Preview, R Result] struct{ p plan[V, R] }

func (t typedPlan[V, R]) target() string { return t.p.target() }

func (t typedPlan[V, R]) preview(ctx context.Context, rc *runContext) (Preview, error) {
	v, err := t.p.preview(ctx, rc)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// execute gets back the preview this plan returned.
func (t typedPlan[V, R]) execute(ctx context.Context, rc *runContext, tx pgx.Tx, preview Preview) (Result, error) {
	r, err := t.p.execute(ctx, rc, tx, preview.(V))
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (t typedPlan[V, R]) sentence(preview Preview) string { return t.p.sentence(preview.(V)) }

func (t typedPlan[V, R]) done(result Result) string { return t.p.done(result.(R)) }

func (t typedPlan[V, R]) state(preview Preview) any { return t.p.state(preview.(V)) }

func (t typedPlan[V, R]) logFields() []slog.Attr {
	if lf, ok := t.p.(logFielder); ok {
		return lf.logFields()
	}
	return nil
}

// definition is one action of the registry.
type definition struct {
	spec  Spec
	parse func(raw json.RawMessage) (runPlan, error)
}

// paramsOf is the pointer to a params struct P.
type paramsOf[P any] interface {
	*P
	paramSet
}

// action defines one action. spec says what it is, without Params: they
// come from the params struct P. build checks what the types alone do not
// (ranges, combinations; ErrInvalid naming the parameter) and returns the
// plan.
func action[P any, PP paramsOf[P], V Preview, R Result](spec Spec, build func(p *P) (plan[V, R], error)) definition {
	for _, f := range PP(new(P)).fields() {
		spec.Params = append(spec.Params, f.Param)
	}
	return definition{spec: spec, parse: func(raw json.RawMessage) (runPlan, error) {
		p := new(P)
		if err := decodeParams(raw, spec.Name, PP(p).fields()); err != nil {
			return nil, err
		}
		pl, err := build(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		return typedPlan[V, R]{pl}, nil
	}}
}
