package web

import (
	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/views"
)

// tenantLimitsPreviewView shows tenant.throttle's preview: the row before
// and after, and the queue's default an unset limit falls back to.
func tenantLimitsPreviewView(x actions.TenantLimitsPreview) *views.Value {
	return pairs(kv("before", tenantLimitsView(x.Before)), kv("after", tenantLimitsView(x.After)),
		kv("queue default", tenantLimitsView(x.Default)), kv("tenants with their own limits", integer(x.Overrides)),
		kv("note", text(x.Note)))
}

// tenantLimitsView is one tenant_limits row; the default row's tenant
// reads "every tenant (default)".
func tenantLimitsView(l actions.TenantLimitsView) *views.Value {
	tenant := l.TenantID
	if tenant == "" {
		tenant = "every tenant (default)"
	}
	return pairs(kv("queue", text(l.Queue)), kv("tenant", text(tenant)), kv("max in flight", optInteger(l.MaxInFlight)),
		kv("rate per second", optFloat(l.RatePerSecond)), optional("updated by", deref(l.UpdatedBy, "")))
}
