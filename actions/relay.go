package actions

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
)

// RelaySettingsPreview is the preview of relay.pause, relay.resume and
// relay.throttle: the settings before and after, and the outbox backlog now.
type RelaySettingsPreview struct {
	Before queues.RelaySettings `json:"before"`
	After  queues.RelaySettings `json:"after"`
	Outbox queues.OutboxStat    `json:"outbox"`
	Note   string               `json:"note"`
}

// RelaySettingsResult is the stored relay settings and the backlog at
// commit.
type RelaySettingsResult struct {
	Settings queues.RelaySettings `json:"settings"`
	Outbox   queues.OutboxStat    `json:"outbox"`
	Note     string               `json:"note"`
}

func (RelaySettingsPreview) actionPreview() {}
func (RelaySettingsResult) actionResult()   {}

type relaySettingsChange struct {
	apply func(s *queues.RelaySettings)
	note  string
	// verb starts the preview's sentence: "Pause", "Throttle".
	verb string
}

// relayText says the relay's settings: "paused, batch size 100, rate no
// limit".
func relayText(s queues.RelaySettings) string {
	return limitsText(s.Paused, "batch size", s.BatchSize, s.RatePerSecond)
}

func (a *relaySettingsChange) sentence(p RelaySettingsPreview) string {
	change := relayText(p.Before) + " → " + relayText(p.After)
	if relayText(p.Before) == relayText(p.After) {
		change = "no change: it is already " + relayText(p.After)
	}
	return fmt.Sprintf("%s the outbox relay: %s; %s pending, %s dead", a.verb, change,
		counted(p.Outbox.PendingTotal(), "event", "events"), humanize.Int(p.Outbox.Dead))
}

func (a *relaySettingsChange) done(r RelaySettingsResult) string {
	return fmt.Sprintf("The outbox relay is now %s; %s pending", relayText(r.Settings), counted(r.Outbox.PendingTotal(), "event", "events"))
}

func (a *relaySettingsChange) state(p RelaySettingsPreview) any {
	return limitsState{Paused: p.Before.Paused, Count: p.Before.BatchSize, RatePerSecond: p.Before.RatePerSecond}
}

func (a *relaySettingsChange) target() string { return "relay" }

func (a *relaySettingsChange) preview(ctx context.Context, rc *runContext) (RelaySettingsPreview, error) {
	cur, err := queues.RelaySettingsGet(ctx, rc.r.pool)
	if err != nil {
		return RelaySettingsPreview{}, err
	}
	next := cur
	a.apply(&next)
	stats, err := queues.OutboxHealth(ctx, rc.r.pool, 0)
	if err != nil {
		return RelaySettingsPreview{}, err
	}
	return RelaySettingsPreview{Before: cur, After: next, Outbox: stats, Note: a.note}, nil
}

func (a *relaySettingsChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ RelaySettingsPreview) (RelaySettingsResult, error) {
	// Lock, then read: concurrent changes apply one after the other.
	if err := queues.RelaySettingsLockTx(ctx, tx); err != nil {
		return RelaySettingsResult{}, err
	}
	cur, err := queues.RelaySettingsGet(ctx, tx)
	if err != nil {
		return RelaySettingsResult{}, err
	}
	a.apply(&cur)
	by := rc.actor.Name
	cur.UpdatedBy = &by
	stored, err := queues.RelaySettingsSetTx(ctx, tx, cur)
	if err != nil {
		return RelaySettingsResult{}, err
	}
	stats, err := queues.OutboxHealth(ctx, tx, 0)
	if err != nil {
		return RelaySettingsResult{}, err
	}
	return RelaySettingsResult{Settings: stored, Outbox: stats, Note: a.note}, nil
}

type relayPlan = plan[RelaySettingsPreview, RelaySettingsResult]

var relayPause = action(Spec{
	Name: "relay.pause", Title: "Pause the outbox relay", Role: auth.RoleOperator, Risk: RiskLowMedium,
	Description: "Stops every relay from claiming outbox events within one poll interval. Events keep " +
		"accumulating in the outbox (nothing is lost); watch the oldest pending age (RB-H).",
}, func(*noParams) (relayPlan, error) {
	return &relaySettingsChange{apply: func(s *queues.RelaySettings) { s.Paused = true },
		note: "relays stop claiming within one poll interval; the outbox backlog grows", verb: "Pause"}, nil
})

var relayResume = action(Spec{
	Name: "relay.resume", Title: "Resume the outbox relay", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Lets the relays claim and publish outbox events again, within their batch size and rate.",
}, func(*noParams) (relayPlan, error) {
	return &relaySettingsChange{apply: func(s *queues.RelaySettings) { s.Paused = false },
		note: "relays resume at once (woken by a notification)", verb: "Resume"}, nil
})

// relayThrottleParams are the parameters of relay.throttle.
type relayThrottleParams struct{ limits }

func (p *relayThrottleParams) fields() []field {
	return p.limits.fields("batch_size", "Events claimed per relay batch.", "Most events published per second, fleet-wide.")
}

var relayThrottle = action(Spec{
	Name: "relay.throttle", Title: "Throttle the outbox relay", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Lowers the relays' claim batch size and publish rate, fleet-wide, when the relay " +
		"itself loads the database (RB-H). Omitted values stay as they are; clear_limits removes both first.",
}, func(p *relayThrottleParams) (relayPlan, error) {
	if err := p.check("batch_size", 1, 100000); err != nil {
		return nil, err
	}
	return &relaySettingsChange{apply: func(s *queues.RelaySettings) { p.apply(&s.BatchSize, &s.RatePerSecond) },
		note: "relays apply the new limits within one poll interval", verb: "Throttle"}, nil
})
