package diagnostics

import (
	"context"

	"github.com/pgconsole/console/queues"
)

// TenantBacklog is one tenant's backlog in a queue (a nil TenantID is the
// tenants past the top, folded into one row).
type TenantBacklog = queues.TenantReady

// tenantTop is how many tenants per queue the check names; the rest are
// one "other" row, so the metrics' tenant label stays bounded.
const tenantTop = 10

// TenantBacklogs reads, per queue, the tenantTop tenants whose oldest ready
// job has waited longest, then "other" (queues.TenantReadyList).
func TenantBacklogs(ctx context.Context, db DBTX, _ int) ([]TenantBacklog, error) {
	return queues.TenantReadyList(ctx, db, "", tenantTop)
}

// TenantBacklog runs the tenant backlog check as a panel.
func (d *Diagnostics) TenantBacklog(ctx context.Context) Result[TenantBacklog] {
	return panel(ctx, d, CheckTenantBacklog, TenantBacklogs)
}

func readTenantBacklogs(ctx context.Context, db DBTX, s *roundState) ([]TenantBacklog, error) {
	return TenantBacklogs(ctx, db, s.version)
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
