package actions

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
)

// OutboxEventSummary is a dead outbox event as the requeue preview shows it.
type OutboxEventSummary struct {
	ID        int64      `json:"id"`
	Topic     string     `json:"topic"`
	EventType string     `json:"event_type"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"last_error,omitempty"`
	DeadAt    *time.Time `json:"dead_at,omitempty"`
}

// OutboxRequeuePreview is the preview of outbox.requeue.
type OutboxRequeuePreview struct {
	Count   int64                `json:"count"`
	Cap     int                  `json:"cap"`
	OverCap bool                 `json:"over_cap"`
	Sample  []OutboxEventSummary `json:"sample"`
	Warning string               `json:"warning,omitempty"`
}

func (OutboxRequeuePreview) actionPreview() {}

type outboxEventRequeue struct {
	ids   []int64
	topic string
}

func (a *outboxEventRequeue) target() string {
	switch {
	case len(a.ids) == 1:
		return fmt.Sprintf("outbox:%d", a.ids[0])
	case len(a.ids) > 1:
		return fmt.Sprintf("outbox ids:%d", len(a.ids))
	case a.topic != "":
		return "topic:" + a.topic
	}
	return "outbox"
}

func (a *outboxEventRequeue) count(ctx context.Context, db DBTX) (int64, error) {
	return queues.OutboxDeadCount(ctx, db, a.ids, a.topic)
}

func (a *outboxEventRequeue) overCap(rc *runContext, n int64) error {
	return fmt.Errorf("%d dead outbox events match, more than the cap of %d one requeue may move; "+
		"requeue by topic or by ids in several steps: %w", n, rc.r.cfg.RequeueCap, ErrInvalid)
}

func (a *outboxEventRequeue) preview(ctx context.Context, rc *runContext) (OutboxRequeuePreview, error) {
	n, err := a.count(ctx, rc.r.pool)
	if err != nil {
		return OutboxRequeuePreview{}, err
	}
	if n == 0 {
		return OutboxRequeuePreview{}, fmt.Errorf("no dead outbox events match %s; they may have been requeued already. Refresh the outbox page: %w", a.target(), ErrNotFound)
	}
	p := OutboxRequeuePreview{Count: n, Cap: rc.r.cfg.RequeueCap, OverCap: n > int64(rc.r.cfg.RequeueCap), Sample: []OutboxEventSummary{}}
	var recs []queues.OutboxRecord
	if len(a.ids) > 0 {
		for _, id := range a.ids[:min(len(a.ids), 10)] {
			r, err := queues.OutboxEventGet(ctx, rc.r.pool, id)
			if err != nil {
				continue
			}
			recs = append(recs, *r)
		}
	} else if recs, err = queues.OutboxList(ctx, rc.r.pool, queues.OutboxListParams{State: queues.OutboxDead, Topic: a.topic, Limit: 10}); err != nil {
		return OutboxRequeuePreview{}, err
	}
	for _, r := range recs {
		if r.State != queues.OutboxDead {
			continue
		}
		s := OutboxEventSummary{ID: r.ID, Topic: r.Topic, EventType: r.EventType, Attempts: r.Attempts, DeadAt: r.DeadAt}
		if r.LastError != nil {
			s.LastError = truncate(*r.LastError, 500)
		}
		p.Sample = append(p.Sample, s)
	}
	if p.OverCap {
		p.Warning = a.overCap(rc, n).Error()
	} else {
		p.Warning = "requeued events are published again; consumers must dedupe on the event id (RB-D)"
	}
	return p, nil
}

func (a *outboxEventRequeue) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ OutboxRequeuePreview) (RequeueResult, error) {
	n, err := a.count(ctx, tx)
	if err != nil {
		return RequeueResult{}, err
	}
	return requeueChecked(rc, a, "dead outbox events", n, deadEventsSkipped, func(limit int) ([]int64, error) {
		return queues.OutboxRequeueTx(ctx, tx, queues.OutboxRequeueParams{IDs: a.ids, Topic: a.topic, Limit: limit})
	})
}

func (a *outboxEventRequeue) filterWords() string {
	switch {
	case len(a.ids) > 0:
		return " among " + counted(len(a.ids), "selected id", "selected ids")
	case a.topic != "":
		return " of topic " + code(a.topic)
	}
	return ""
}

func (a *outboxEventRequeue) sentence(p OutboxRequeuePreview) string {
	s := "Requeue " + counted(p.Count, "dead outbox event", "dead outbox events") + a.filterWords() + "; cap " + humanize.Int(p.Cap)
	if p.OverCap {
		s += ": over the cap, so execution is refused; requeue by ids or topic in steps"
	}
	return s
}

func (a *outboxEventRequeue) done(r RequeueResult) string {
	return requeueDone(counted(r.Requeued, "dead outbox event", "dead outbox events")+a.filterWords(), r.Skipped, deadEventsSkipped)
}

func (a *outboxEventRequeue) state(p OutboxRequeuePreview) any { return p.Count }

// outboxRequeueParams are the parameters of outbox.requeue: ids, or a
// topic.
type outboxRequeueParams struct {
	IDs   []int64
	Topic string
}

func (p *outboxRequeueParams) fields() []field {
	return []field{
		idsParam(&p.IDs, "ids", "Dead outbox event ids."),
		stringParam(&p.Topic, "topic", "Every dead event of this topic (when no ids are given)."),
	}
}

var outboxRequeue = action(Spec{
	Name: "outbox.requeue", Title: "Requeue dead outbox events", Role: auth.RoleOperator, Risk: RiskMedium,
	Description: "Moves dead outbox events (listed ids, or every dead event of a topic) back to pending " +
		"with a fresh attempt budget, so the relay publishes them again. Never delete outbox rows instead " +
		"(extremely high risk). At most the configured cap move in one action.",
}, func(p *outboxRequeueParams) (plan[OutboxRequeuePreview, RequeueResult], error) {
	if len(p.IDs) == 0 && p.Topic == "" {
		return nil, fmt.Errorf("give ids or a topic: %w", ErrInvalid)
	}
	return &outboxEventRequeue{ids: p.IDs, topic: p.Topic}, nil
})
