package diagnostics

import (
	"context"
	"fmt"

	"github.com/pgconsole/console/queues"
)

// TenantBacklog is one tenant's backlog in a queue (a nil TenantID is the
// tenants past the top, folded into one row).
type TenantBacklog = queues.TenantReady

// TenantTop is how many tenants per queue the check names; the rest are
// one "other" row, so the metrics' tenant label stays bounded.
const TenantTop = 10

// TenantBacklogs reads, per queue, the TenantTop tenants whose oldest ready
// job has waited longest, then "other" (queues.TenantReadyList).
func TenantBacklogs(ctx context.Context, db DBTX, _ int) ([]TenantBacklog, error) {
	return queues.TenantReadyList(ctx, db, "", TenantTop)
}

// TenantBacklog runs the tenant backlog check as a panel.
func (d *Diagnostics) TenantBacklog(ctx context.Context) Result[TenantBacklog] {
	return panel(ctx, d, CheckTenantBacklog, TenantBacklogs)
}

func readTenantBacklogs(ctx context.Context, db DBTX, s *roundState) ([]TenantBacklog, error) {
	return TenantBacklogs(ctx, db, s.version)
}

// tenantStarvationFindings: a tenant's oldest ready job has waited
// QueueBacklogAge while the queue runs other tenants' jobs and none of
// its own: claims serve the others, not it (a burst ahead of it, limits
// too tight, or a claim that is not fair).
func tenantStarvationFindings(r Round, t Thresholds) []Finding {
	running := map[string]int64{}
	for _, q := range r.Queues {
		running[q.Queue] = q.Running
	}
	var out []Finding
	for _, b := range r.Tenants {
		if b.TenantID == nil || b.OldestReadySeconds < t.QueueBacklogAge.Seconds() || b.Running > 0 || running[b.Queue] == 0 {
			continue
		}
		out = append(out, Finding{Severity: SeverityWarning,
			Title: fmt.Sprintf("Tenant %s of queue %s: oldest ready job waiting %s while %d other jobs run",
				*b.TenantID, b.Queue, seconds(b.OldestReadySeconds), running[b.Queue]),
			Subject: map[string]any{"queue": b.Queue, "tenant": *b.TenantID, "ready": b.Ready, "seconds": round1(b.OldestReadySeconds)},
			Evidence: fmt.Sprintf("%s: tenant %q of %s has %d ready jobs, the oldest due %s ago, and none running; %s: %d jobs of the queue running",
				CheckTenantBacklog, *b.TenantID, b.Queue, b.Ready, seconds(b.OldestReadySeconds), CheckQueueHealth, running[b.Queue]),
			Actions: []string{ActionTenantThrottle}})
	}
	return out
}

// TenantLabel is a backlog row's tenant as the panel and the metrics show
// it: "other" for the folded row; a real tenant named "other" gets quotes so
// it never collides with it.
func TenantLabel(b TenantBacklog) string {
	switch {
	case b.TenantID == nil:
		return "other"
	case *b.TenantID == "other":
		return `"other"`
	}
	return *b.TenantID
}
