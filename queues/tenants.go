package queues

import (
	"context"
	"fmt"
	"time"

	"github.com/pgconsole/console/internal/sqlset"
)

// TenantLimits are an operator's fleet-wide caps on one tenant of a queue,
// stored in tenant_limits and enforced by every fair claim: MaxInFlight
// caps the tenant's running jobs across all processes, RatePerSecond its
// claims per second (one token bucket per tenant, shared by the fleet).
// TenantID "" is the queue's default for every tenant; a tenant's own row
// overrides it field by field, a nil field falling back to the default.
// nil in the default means no limit.
type TenantLimits struct {
	Queue         string    `db:"queue" json:"queue"`
	TenantID      string    `db:"tenant_id" json:"tenant"`
	MaxInFlight   *int      `db:"max_in_flight" json:"max_in_flight"`
	RatePerSecond *float64  `db:"rate_per_second" json:"rate_per_second"`
	UpdatedBy     *string   `db:"updated_by" json:"updated_by,omitempty"`
	UpdatedAt     time.Time `db:"updated_at" json:"updated_at,omitzero"`
}

// Empty reports whether l sets no limit: stored, it would change nothing.
func (l TenantLimits) Empty() bool { return l.MaxInFlight == nil && l.RatePerSecond == nil }

// TenantLimitsList returns queue's tenant limits: its default (TenantID
// "") first when it has one, then the overrides by tenant.
func TenantLimitsList(ctx context.Context, db DBTX, queue string) ([]TenantLimits, error) {
	return collectRows[TenantLimits](ctx, db, "tenant_limits_list", fmt.Sprintf("list tenant limits of %q", queue), queue)
}

// TenantLimitsSetTx writes l in the caller's transaction and returns it as
// stored. Limits that set nothing remove the row instead (an override falls
// back to the default; a queue without rows goes back to plain claims), and
// come back with a zero UpdatedAt.
func TenantLimitsSetTx(ctx context.Context, db DBTX, l TenantLimits) (TenantLimits, error) {
	if l.Queue == "" {
		return TenantLimits{}, fmt.Errorf("set tenant limits: queue is required")
	}
	if l.Empty() {
		if _, err := db.Exec(ctx, sqlText("tenant_limits_delete"), l.Queue, l.TenantID); err != nil {
			return TenantLimits{}, fmt.Errorf("remove limits of tenant %q of %q: %w", l.TenantID, l.Queue, err)
		}
		return TenantLimits{Queue: l.Queue, TenantID: l.TenantID, UpdatedBy: l.UpdatedBy}, nil
	}
	out, err := sqlset.One[TenantLimits](ctx, db, sqlText("tenant_limits_set"), l.Queue, l.TenantID, l.MaxInFlight, l.RatePerSecond, l.UpdatedBy)
	if err != nil {
		return TenantLimits{}, fmt.Errorf("set limits of tenant %q of %q: %w", l.TenantID, l.Queue, err)
	}
	return out, nil
}

// TenantReady is one tenant's backlog in a queue: ready jobs, the age of
// its oldest due one (what a starved tenant shows first) and its running
// jobs. A nil TenantID is the row "other": the Tenants tenants past the top
// N, their ready jobs summed and their oldest age.
type TenantReady struct {
	Queue              string  `db:"queue" json:"queue"`
	TenantID           *string `db:"tenant_id" json:"tenant"`
	Ready              int64   `db:"ready" json:"ready"`
	Running            int64   `db:"running" json:"running"`
	OldestReadySeconds float64 `db:"oldest_ready_seconds" json:"oldest_ready_seconds"`
	Tenants            int64   `db:"tenants" json:"tenants"`
}

// TenantReadyList returns, per queue (queue "" for every queue), the top
// tenants by oldest ready age, at most top per queue, then one "other" row
// per queue for the rest. It reads every ready job that has a tenant once:
// for a page or a scrape, not for a loop.
func TenantReadyList(ctx context.Context, db DBTX, queue string, top int) ([]TenantReady, error) {
	var q *string
	if queue != "" {
		q = &queue
	}
	return collectRows[TenantReady](ctx, db, "tenant_ready", "read the tenants' ready jobs", q, max(top, 0))
}

// TenantReadySQL returns the statement TenantReadyList runs, for pages
// that show operators the exact SQL behind what they see.
func TenantReadySQL() string { return sqlText("tenant_ready") }

// TenantLimitsLockTx serialises changes to the limits of tenant of queue
// ("" the queue's default) until tx ends, so two operators changing the
// same row apply their changes one after the other. It takes a
// transaction-level advisory lock: the row may not exist yet, and creating
// it just to lock it would already change the claims.
func TenantLimitsLockTx(ctx context.Context, tx DBTX, queue, tenant string) error {
	if _, err := tx.Exec(ctx, sqlText("tenant_limits_lock"), queue, tenant); err != nil {
		return fmt.Errorf("lock limits of tenant %q of queue %q: %w", tenant, queue, err)
	}
	return nil
}
