package web

import (
	"fmt"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// queueTenantsTop is how many tenants the queue page names; the rest are
// one "other" row.
const queueTenantsTop = 20

// tenantPanel is the queue page's per-tenant backlog: the tenants whose
// oldest ready job has waited longest first, with their limits, then
// "other". A tenant starved by a burst shows here before the queue's own
// oldest ready age moves.
func tenantPanel(rows []queues.TenantReady, limits []queues.TenantLimits, queue, role string) views.Panel {
	p := views.Panel{
		ID: "tenants", Title: "Tenants by oldest ready job", Status: "ok",
		Columns: []views.Column{{Label: "Tenant"}, {Label: "Oldest ready", Num: true, Hint: "age of the tenant's oldest due ready job"},
			{Label: "Ready", Num: true}, {Label: "Running", Num: true}, {Label: "Max in flight", Num: true}, {Label: "Rate"}, {Label: ""}},
		EmptyTitle: "No ready job of this queue has a tenant.",
		EmptyWhy:   " Jobs enqueued with a TenantID are claimed fairly between tenants; this queue has none waiting.",
	}
	own := map[string]queues.TenantLimits{}
	var def queues.TenantLimits
	for _, l := range limits {
		if l.TenantID == "" {
			def = l
		} else {
			own[l.TenantID] = l
		}
	}
	if !def.Empty() {
		p.Note = "Default for every tenant: max in flight " + optInt(def.MaxInFlight, "no limit") + ", rate " + optRate(def.RatePerSecond, "no limit") + "."
	}
	for _, r := range rows {
		if r.TenantID == nil {
			p.Rows = append(p.Rows, []views.Cell{
				{Text: fmt.Sprintf("other (%d tenants)", r.Tenants)},
				{Text: humanize.Seconds(r.OldestReadySeconds)}, {Text: humanize.Int(r.Ready)}, {Text: "–"}, {Text: "–"}, {Text: "–"}, {},
			})
			continue
		}
		t := *r.TenantID
		l := own[t]
		maxInFlight, rate := l.MaxInFlight, l.RatePerSecond
		if maxInFlight == nil {
			maxInFlight = def.MaxInFlight
		}
		if rate == nil {
			rate = def.RatePerSecond
		}
		p.Rows = append(p.Rows, []views.Cell{
			{Text: t, Mono: true},
			{Text: humanize.Seconds(r.OldestReadySeconds)}, {Text: humanize.Int(r.Ready)}, {Text: humanize.Int(r.Running)},
			{Text: optInt(maxInFlight, "no limit")}, {Text: optRate(rate, "no limit")},
			{Actions: actionLinks([]string{"tenant.throttle"}, role, map[string]string{"queue": queue, "tenant": t})},
		})
	}
	return p
}
