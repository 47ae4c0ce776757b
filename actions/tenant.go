package actions

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/queues"
)

// TenantLimitsView is one tenant_limits row as previews and results show
// it, the engine's row: TenantID "" is the queue's default; nil limits
// mean none set here (an override then falls back to the default).
type TenantLimitsView = queues.TenantLimits

// TenantLimitsPreview is the preview of tenant.throttle: the row before and
// after, the queue's default (what an override falls back to), and how
// many of the queue's tenants have their own row.
type TenantLimitsPreview struct {
	Before    TenantLimitsView `json:"before"`
	After     TenantLimitsView `json:"after"`
	Default   TenantLimitsView `json:"default"`
	Overrides int              `json:"overrides"`
	Note      string           `json:"note"`
}

// TenantLimitsResult is the row as stored at commit.
type TenantLimitsResult struct {
	Limits TenantLimitsView `json:"limits"`
	Note   string           `json:"note"`
}

func (TenantLimitsPreview) actionPreview() {}
func (TenantLimitsResult) actionResult()   {}

// tenantLimitsParams are the parameters of tenant.throttle.
type tenantLimitsParams struct {
	queueParams
	Tenant string
	limits
}

func (p *tenantLimitsParams) fields() []field {
	return append(append(p.queueParams.fields(),
		stringParam(&p.Tenant, "tenant", "The tenant; empty sets the queue's default for every tenant without its own limits.")),
		p.limits.fields("max_in_flight",
			"Most jobs of the tenant running at once in the queue, fleet-wide (0 stops its claims).",
			"Most of the tenant's jobs claimed per second, fleet-wide.")...)
}

type tenantLimitsChange struct {
	queue, tenant string
	p             *tenantLimitsParams
}

func (a *tenantLimitsChange) target() string { return "queue:" + a.queue + "/tenant:" + a.tenant }

func (a *tenantLimitsChange) logFields() []slog.Attr {
	return []slog.Attr{slog.String("queue", a.queue), slog.String("tenant", a.tenant)}
}

// current reads the queue's default and the row of a.tenant (empty when
// it has none) and counts the overrides.
func (a *tenantLimitsChange) current(ctx context.Context, db queues.DBTX) (row, def queues.TenantLimits, overrides int, err error) {
	all, err := queues.TenantLimitsList(ctx, db, a.queue)
	if err != nil {
		return row, def, 0, err
	}
	row = queues.TenantLimits{Queue: a.queue, TenantID: a.tenant}
	def = queues.TenantLimits{Queue: a.queue}
	for _, l := range all {
		if l.TenantID == "" {
			def = l
		} else {
			overrides++
		}
		if l.TenantID == a.tenant {
			row = l
		}
	}
	return row, def, overrides, nil
}

func (a *tenantLimitsChange) apply(l *queues.TenantLimits) {
	a.p.apply(&l.MaxInFlight, &l.RatePerSecond)
}

func (a *tenantLimitsChange) note(after queues.TenantLimits) string {
	switch {
	case a.tenant == "" && after.Empty():
		return "tenants without their own limits are no longer limited; a queue with no tenant limits left goes back to plain claims within one poll interval"
	case a.tenant == "":
		return "every tenant without its own limits gets these; workers switch the queue to fair, fleet-wide limited claims within one poll interval; running jobs are not interrupted"
	case after.Empty():
		return "the tenant falls back to the queue's default limits on the next claim"
	}
	return "the next fair claim applies these to the tenant (a limit not set here falls back to the queue's default); running jobs are not interrupted, so its in-flight count falls as they finish"
}

func (a *tenantLimitsChange) preview(ctx context.Context, rc *runContext) (TenantLimitsPreview, error) {
	cur, def, overrides, err := a.current(ctx, rc.r.pool)
	if err != nil {
		return TenantLimitsPreview{}, err
	}
	next := cur
	a.apply(&next)
	return TenantLimitsPreview{Before: cur, After: next, Default: def,
		Overrides: overrides, Note: a.note(next)}, nil
}

// who names the tenant row a change is about: a tenant, or the queue's
// default for tenants without their own limits.
func (a *tenantLimitsChange) who() string {
	if a.tenant == "" {
		return "every tenant of queue " + code(a.queue) + " without its own limits"
	}
	return "tenant " + code(a.tenant) + " of queue " + code(a.queue)
}

func (a *tenantLimitsChange) sentence(p TenantLimitsPreview) string {
	return fmt.Sprintf("Limit %s: max in flight %s → %s, rate %s → %s", a.who(),
		limitText(p.Before.MaxInFlight), limitText(p.After.MaxInFlight),
		limitText(p.Before.RatePerSecond), limitText(p.After.RatePerSecond))
}

func (a *tenantLimitsChange) done(r TenantLimitsResult) string {
	return fmt.Sprintf("Limited %s: max in flight %s, rate %s", a.who(), limitText(r.Limits.MaxInFlight), limitText(r.Limits.RatePerSecond))
}

// state is the row the change starts from: another operator's change in
// between is a different decision.
func (a *tenantLimitsChange) state(p TenantLimitsPreview) any {
	return limitsState{Count: p.Before.MaxInFlight, RatePerSecond: p.Before.RatePerSecond}
}

func (a *tenantLimitsChange) execute(ctx context.Context, rc *runContext, tx pgx.Tx, _ TenantLimitsPreview) (TenantLimitsResult, error) {
	// Lock first, then read: a concurrent change to the same row commits
	// before this read or waits for this transaction.
	if err := queues.TenantLimitsLockTx(ctx, tx, a.queue, a.tenant); err != nil {
		return TenantLimitsResult{}, err
	}
	cur, _, _, err := a.current(ctx, tx)
	if err != nil {
		return TenantLimitsResult{}, err
	}
	a.apply(&cur)
	by := rc.actor.Name
	cur.UpdatedBy = &by
	stored, err := queues.TenantLimitsSetTx(ctx, tx, cur)
	if err != nil {
		return TenantLimitsResult{}, err
	}
	return TenantLimitsResult{Limits: stored, Note: a.note(stored)}, nil
}

func checkTenant(t string) error {
	if len(t) > 128 {
		return invalid("tenant", "is longer than 128 characters")
	}
	return nil
}

var tenantThrottle = action(Spec{
	Name: "tenant.throttle", Title: "Limit tenants", Role: auth.RoleOperator, Risk: RiskLow,
	Description: "Caps how many of one tenant's jobs run at once in a queue across the whole fleet " +
		"(max_in_flight) and how many are claimed per second (rate_per_second); with no tenant, sets the " +
		"queue's default for every tenant without limits of its own. A tenant's limit left unset falls back " +
		"to the default. Running jobs are not killed. Omitted limits stay as they are; clear_limits removes " +
		"both first (an override then follows the default again).",
}, func(p *tenantLimitsParams) (plan[TenantLimitsPreview, TenantLimitsResult], error) {
	if err := checkQueue(p.Queue); err != nil {
		return nil, err
	}
	if err := checkTenant(p.Tenant); err != nil {
		return nil, err
	}
	if err := p.check("max_in_flight", 0, math.MaxInt32); err != nil {
		return nil, err
	}
	return &tenantLimitsChange{queue: p.Queue, tenant: p.Tenant, p: p}, nil
})
