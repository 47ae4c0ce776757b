package findings

import (
	"fmt"

	"github.com/pgconsole/console/diagnostics"
)

// tenantStarvationFindings: a tenant's oldest ready job has waited
// QueueBacklogAge while the queue runs other tenants' jobs and none of
// its own: claims serve the others, not it (a burst ahead of it, limits
// too tight, or a claim that is not fair).
func tenantStarvationFindings(r diagnostics.Round, t diagnostics.Thresholds) []Finding {
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
				diagnostics.CheckTenantBacklog, *b.TenantID, b.Queue, b.Ready, seconds(b.OldestReadySeconds), diagnostics.CheckQueueHealth, running[b.Queue]),
			Actions: []string{ActionTenantThrottle}})
	}
	return out
}
