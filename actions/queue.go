package actions

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// QueueSettingsView is a queue's fleet-wide settings as previews and results
// show them, the engine's row; nil limits mean none.
type QueueSettingsView = queues.QueueSettings

// FleetInFlight is the fleet's measured in-flight count for one queue, from
// the live workers' heartbeats: what an operator watches fall to a new limit.
type FleetInFlight struct {
	InFlight    int `json:"in_flight"`
	LiveWorkers int `json:"live_workers"`
}

func fleetInFlight(ctx context.Context, db queues.DBTX, queue string) (FleetInFlight, error) {
	ws, err := queues.WorkerList(ctx, db, 0)
	if err != nil {
		return FleetInFlight{}, err
	}
	var f FleetInFlight
	for _, w := range ws {
		if !w.Alive {
			continue
		}
		f.LiveWorkers++
		f.InFlight += w.InFlightByQueue[queue]
	}
	return f, nil
}

// QueueSettingsPreview is the preview of queue.pause, queue.resume and
// queue.throttle: the settings before and after, and the fleet now.
type QueueSettingsPreview struct {
	Before QueueSettingsView `json:"before"`
	After  QueueSettingsView `json:"after"`
	Fleet  FleetInFlight     `json:"fleet"`
	Note   string            `json:"note"`
}

// QueueSettingsResult is the stored settings and the fleet's in-flight count
// at commit; the queue page keeps measuring it.
type QueueSettingsResult struct {
	Settings QueueSettingsView `json:"settings"`
	Fleet    FleetInFlight     `json:"fleet"`
	Note     string            `json:"note"`
}

func (QueueSettingsPreview) actionPreview() {}
func (QueueSettingsResult) actionResult()   {}

type queueSettingsChange struct {
	queue string
	// apply turns the current settings into the wanted ones.
	apply func(s *queues.QueueSettings)
	note  string
	// verb starts the preview's sentence: "Pause", "Throttle".
	verb string
}

func (a *queueSettingsChange) target() string { return "queue:" + a.queue }

func (a *queueSettingsChange) logFields() []slog.Attr {
	return []slog.Attr{slog.String("queue", a.queue)}
}

func (a *queueSettingsChange) preview(ctx context.Context, rc *runContext) (QueueSettingsPreview, error) {
	cur, err := queues.QueueSettingsGet(ctx, rc.r.pool, a.queue)
	if err != nil {
		return QueueSettingsPreview{}, err
	}
	cur.Queue = a.queue
	next := cur
	a.apply(&next)
	fleet, err := fleetInFlight(ctx, rc.r.pool, a.queue)
	if err != nil {
		return QueueSettingsPreview{}, err
	}
	return QueueSettingsPreview{Before: cur, After: next, Fleet: fleet, Note: a.note}, nil
}

func (a *queueSettingsChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ QueueSettingsPreview) (QueueSettingsResult, error) {
	// Lock the row first, then read: a concurrent change commits before this
	// read or waits for this transaction, so a pause and a throttle racing
	// each other both land.
	if err := queues.QueueSettingsLockTx(ctx, tx, a.queue); err != nil {
		return QueueSettingsResult{}, err
	}
	cur, err := queues.QueueSettingsGet(ctx, tx, a.queue)
	if err != nil {
		return QueueSettingsResult{}, err
	}
	cur.Queue = a.queue
	a.apply(&cur)
	by := rc.actor.Name
	cur.UpdatedBy = &by
	stored, err := queues.QueueSettingsSetTx(ctx, tx, cur)
	if err != nil {
		return QueueSettingsResult{}, err
	}
	fleet, err := fleetInFlight(ctx, tx, a.queue)
	if err != nil {
		return QueueSettingsResult{}, err
	}
	return QueueSettingsResult{Settings: stored, Fleet: fleet, Note: a.note}, nil
}

// settingsChanges lists what differs between two settings, as a sentence
// says it ("max workers no limit → 2"), or says nothing changes.
func settingsChanges(before, after QueueSettingsView) string {
	var out []string
	if before.Paused != after.Paused {
		out = append(out, map[bool]string{true: "paused", false: "running again"}[after.Paused])
	}
	if b, a := limitText(before.MaxWorkers), limitText(after.MaxWorkers); b != a {
		out = append(out, "max workers "+b+" → "+a)
	}
	if b, a := limitText(before.RatePerSecond), limitText(after.RatePerSecond); b != a {
		out = append(out, "rate "+b+" → "+a)
	}
	if len(out) == 0 {
		return "no change: it is already " + settingsText(after)
	}
	return strings.Join(out, ", ")
}

// settingsText says a queue's settings: "paused, max workers 2, rate no
// limit".
func settingsText(v QueueSettingsView) string {
	return limitsText(v.Paused, "max workers", v.MaxWorkers, v.RatePerSecond)
}

func (a *queueSettingsChange) sentence(p QueueSettingsPreview) string {
	return fmt.Sprintf("%s queue %s: %s; %s in flight on %s", a.verb, code(a.queue), settingsChanges(p.Before, p.After),
		counted(p.Fleet.InFlight, "job", "jobs"), counted(p.Fleet.LiveWorkers, "live worker", "live workers"))
}

func (a *queueSettingsChange) done(r QueueSettingsResult) string {
	return fmt.Sprintf("Queue %s is now %s; %s in flight", code(a.queue), settingsText(r.Settings),
		counted(r.Fleet.InFlight, "job", "jobs"))
}

func (a *queueSettingsChange) state(p QueueSettingsPreview) any {
	return limitsState{Paused: p.Before.Paused, Count: p.Before.MaxWorkers, RatePerSecond: p.Before.RatePerSecond}
}

type queuePlan = plan[QueueSettingsPreview, QueueSettingsResult]

// queueParams are the parameters of queue.pause and queue.resume.
type queueParams struct{ Queue string }

func (p *queueParams) fields() []field {
	return []field{stringParam(&p.Queue, "queue", "The queue's name.").required()}
}

func checkQueue(q string) error {
	if len(q) > 128 {
		return invalid("queue", "is longer than 128 characters")
	}
	return nil
}

var queuePause = action(Spec{
	Name: "queue.pause", Title: "Pause a queue", Role: auth.RoleOperator, Risk: RiskLowMedium,
	Description: "Stops every worker in the fleet from claiming new jobs of the queue within one poll " +
		"interval. Running jobs finish. The backlog grows while paused: watch the oldest ready age.",
}, func(p *queueParams) (queuePlan, error) {
	return &queueSettingsChange{queue: p.Queue, apply: func(s *queues.QueueSettings) { s.Paused = true },
		note: "workers stop claiming within one poll interval; running jobs finish; the backlog grows", verb: "Pause"}, checkQueue(p.Queue)
})

var queueResume = action(Spec{
	Name: "queue.resume", Title: "Resume a queue", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Lets the fleet claim the queue's jobs again, within its max workers and rate.",
}, func(p *queueParams) (queuePlan, error) {
	return &queueSettingsChange{queue: p.Queue, apply: func(s *queues.QueueSettings) { s.Paused = false },
		note: "workers resume claiming within one poll interval, within the queue's limits", verb: "Resume"}, checkQueue(p.Queue)
})

// queueThrottleParams are the parameters of queue.throttle.
type queueThrottleParams struct {
	queueParams
	limits
}

func (p *queueThrottleParams) fields() []field {
	return append(p.queueParams.fields(), p.limits.fields("max_workers",
		"Most jobs of the queue running at once, fleet-wide (0 stops claims).", "Most claims per second, fleet-wide.")...)
}

var queueThrottle = action(Spec{
	Name: "queue.throttle", Title: "Throttle a queue", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Caps how many of the queue's jobs run at once across the whole fleet (max_workers) " +
		"and how many are claimed per second (rate_per_second). Lowering concurrency restores backpressure " +
		"and is usually the first mitigation; running jobs are not killed, so in-flight falls as they finish. " +
		"Omitted limits stay as they are; clear_limits removes both first.",
}, func(p *queueThrottleParams) (queuePlan, error) {
	if err := checkQueue(p.Queue); err != nil {
		return nil, err
	}
	if err := p.check("max_workers", 0, math.MaxInt32); err != nil {
		return nil, err
	}
	return &queueSettingsChange{queue: p.Queue, apply: func(s *queues.QueueSettings) {
		p.apply(&s.MaxWorkers, &s.RatePerSecond)
	}, note: "workers apply the new limits within one poll interval; running jobs are not interrupted, " +
		"so the fleet's in-flight count falls to max_workers as they finish", verb: "Throttle"}, nil
})
