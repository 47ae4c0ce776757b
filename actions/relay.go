package actions

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/queues"
)

// RelaySettingsPreview is the preview of relay.pause, relay.resume and
// relay.throttle: the settings before and after, and the outbox backlog now.
type RelaySettingsPreview struct {
	Before queues.RelaySettings     `json:"before"`
	After  queues.RelaySettings     `json:"after"`
	Outbox queues.OutboxStatsResult `json:"outbox"`
	Note   string                   `json:"note"`
}

// RelaySettingsResult is the stored relay settings and the backlog at
// commit.
type RelaySettingsResult struct {
	Settings queues.RelaySettings     `json:"settings"`
	Outbox   queues.OutboxStatsResult `json:"outbox"`
	Note     string                   `json:"note"`
}

type relaySettingsChange struct {
	apply func(s *queues.RelaySettings)
	note  string
}

func (a *relaySettingsChange) target() string { return "relay" }

func (a *relaySettingsChange) preview(ctx context.Context, rc *runContext) (any, error) {
	cur, err := queues.RelaySettingsGet(ctx, rc.r.pool)
	if err != nil {
		return nil, err
	}
	next := cur
	a.apply(&next)
	stats, err := queues.OutboxStats(ctx, rc.r.pool)
	if err != nil {
		return nil, err
	}
	return RelaySettingsPreview{Before: cur, After: next, Outbox: stats, Note: a.note}, nil
}

func (a *relaySettingsChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ any) (any, error) {
	cur, err := queues.RelaySettingsGet(ctx, tx)
	if err != nil {
		return nil, err
	}
	a.apply(&cur)
	by := rc.actor.Name
	cur.UpdatedBy = &by
	stored, err := queues.RelaySettingsSetTx(ctx, tx, cur)
	if err != nil {
		return nil, err
	}
	stats, err := queues.OutboxStats(ctx, tx)
	if err != nil {
		return nil, err
	}
	return RelaySettingsResult{Settings: stored, Outbox: stats, Note: a.note}, nil
}

func init() {
	register(definition{
		spec: Spec{
			Name: "relay.pause", Title: "Pause the outbox relay", Role: RoleOperator, Risk: RiskLowMedium,
			Description: "Stops every relay from claiming outbox events within one poll interval. Events keep " +
				"accumulating in the outbox (nothing is lost); watch the oldest pending age (RB-H).",
		},
		parse: func(p params) (plan, error) {
			return &relaySettingsChange{apply: func(s *queues.RelaySettings) { s.Paused = true },
				note: "relays stop claiming within one poll interval; the outbox backlog grows"}, nil
		},
	})
	register(definition{
		spec: Spec{
			Name: "relay.resume", Title: "Resume the outbox relay", Role: RoleOperator, Risk: RiskLow,
			Description: "Lets the relays claim and publish outbox events again, within their batch size and rate.",
		},
		parse: func(p params) (plan, error) {
			return &relaySettingsChange{apply: func(s *queues.RelaySettings) { s.Paused = false },
				note: "relays resume at once (woken by a notification)"}, nil
		},
	})
	register(definition{
		spec: Spec{
			Name: "relay.throttle", Title: "Throttle the outbox relay", Role: RoleOperator, Risk: RiskLow,
			Description: "Lowers the relays' claim batch size and publish rate, fleet-wide, when the relay " +
				"itself loads the database (RB-H). Omitted values stay as they are; clear_limits removes both first.",
			Params: []Param{
				{Name: "batch_size", Type: ParamInt, Description: "Events claimed per relay batch."},
				{Name: "rate_per_second", Type: ParamNumber, Description: "Most events published per second, fleet-wide."},
				{Name: "clear_limits", Type: ParamBool, Description: "Remove both limits before applying the ones given."},
			},
		},
		parse: func(p params) (plan, error) {
			bs, err := p.int("batch_size")
			if err != nil {
				return nil, err
			}
			if bs != nil && (*bs <= 0 || *bs > 100000) {
				return nil, invalid("batch_size", "must be between 1 and 100000")
			}
			rate, err := p.float("rate_per_second")
			if err != nil {
				return nil, err
			}
			if rate != nil && *rate <= 0 {
				return nil, invalid("rate_per_second", "must be above 0")
			}
			clear, err := p.bool("clear_limits")
			if err != nil {
				return nil, err
			}
			if bs == nil && rate == nil && (clear == nil || !*clear) {
				return nil, fmt.Errorf("give batch_size, rate_per_second or clear_limits: %w", ErrInvalid)
			}
			return &relaySettingsChange{apply: func(s *queues.RelaySettings) {
				if clear != nil && *clear {
					s.BatchSize, s.RatePerSecond = nil, nil
				}
				if bs != nil {
					n := int(*bs)
					s.BatchSize = &n
				}
				if rate != nil {
					r := *rate
					s.RatePerSecond = &r
				}
			}, note: "relays apply the new limits within one poll interval"}, nil
		},
	})
}
