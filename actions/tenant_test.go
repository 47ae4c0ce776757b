package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// tenantState renders the tenant_limits rows of queue "emails".
func tenantState(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT tenant_id, coalesce(max_in_flight::text, '-'), coalesce(rate_per_second::text, '-')
		FROM tenant_limits WHERE queue = 'emails' ORDER BY tenant_id`)
	require.NoError(t, err)
	defer rows.Close()
	out := ""
	for rows.Next() {
		var tenant, n, rate string
		require.NoError(t, rows.Scan(&tenant, &n, &rate))
		out += fmt.Sprintf("[%s %s %s]", tenant, n, rate)
	}
	require.NoError(t, rows.Err())
	return out
}

func tenantCases() []actionCase {
	return []actionCase{{
		name: "tenant.throttle", actor: operator, weaker: viewer, state: tenantState,
		setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
			exec(t, pool, "INSERT INTO tenant_limits (queue, tenant_id, max_in_flight) VALUES ('emails', '', 4)")
			return map[string]any{"queue": "emails", "tenant": "acme", "max_in_flight": 2}
		},
	}}
}

// TestTenantThrottle: the preview shows the row before and after and the
// default it falls back to; the change and its audit event commit
// together; an override's unset limit stays unset (it follows the
// default), clear_limits removes the row.
func TestTenantThrottle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})

	out, err := r.Run(ctx, operator, "tenant.throttle", actions.Request{
		Params: map[string]any{"queue": "emails", "max_in_flight": 5, "rate_per_second": 20}, Reason: reason})
	require.NoError(t, err)
	res := out.Result.(actions.TenantLimitsResult)
	require.Equal(t, "", res.Limits.TenantID, "no tenant: the queue's default")
	require.Equal(t, 5, *res.Limits.MaxInFlight)
	require.Equal(t, 20.0, *res.Limits.RatePerSecond)
	require.Equal(t, "[ 5 20]", tenantState(t, pool))

	dry, err := r.Run(ctx, operator, "tenant.throttle", actions.Request{
		Params: map[string]any{"queue": "emails", "tenant": "acme", "max_in_flight": 50}, DryRun: true})
	require.NoError(t, err)
	pv := dry.Preview.(actions.TenantLimitsPreview)
	require.Nil(t, pv.Before.MaxInFlight, "acme has no row yet")
	require.Equal(t, 50, *pv.After.MaxInFlight)
	require.Nil(t, pv.After.RatePerSecond, "unset: follows the default")
	require.Equal(t, 5, *pv.Default.MaxInFlight)
	require.Zero(t, pv.Overrides)
	require.Contains(t, pv.Note, "falls back to the queue's default")
	require.Equal(t, "[ 5 20]", tenantState(t, pool), "a dry run changes nothing")

	out, err = r.Run(ctx, operator, "tenant.throttle", actions.Request{
		Params: map[string]any{"queue": "emails", "tenant": "acme", "max_in_flight": 50}, Reason: reason})
	require.NoError(t, err)
	require.Equal(t, "[ 5 20][acme 50 -]", tenantState(t, pool))
	ev := lastAudit(t, pool)
	require.Equal(t, out.AuditID, ev.ID)
	require.Equal(t, "tenant.throttle", ev.Action)
	require.Equal(t, audit.OutcomeSucceeded, ev.Outcome)
	require.Equal(t, "queue:emails/tenant:acme", ev.Target)
	var stored struct{ Limits actions.TenantLimitsView }
	require.NoError(t, json.Unmarshal(ev.Result, &stored))
	require.Equal(t, 50, *stored.Limits.MaxInFlight, "the audit event holds the stored row")
	require.Equal(t, "olga", *stored.Limits.UpdatedBy)

	_, err = r.Run(ctx, operator, "tenant.throttle", actions.Request{
		Params: map[string]any{"queue": "emails", "tenant": "acme", "clear_limits": true}, Reason: reason})
	require.NoError(t, err)
	require.Equal(t, "[ 5 20]", tenantState(t, pool), "cleared: the override row is gone")

	for _, bad := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"queue": "emails"}, "give max_in_flight"},
		{map[string]any{"queue": "emails", "max_in_flight": -1}, "max_in_flight"},
		{map[string]any{"queue": "emails", "rate_per_second": 0}, "rate_per_second"},
		{map[string]any{"max_in_flight": 1}, `needs "queue"`},
	} {
		_, err := r.Run(ctx, operator, "tenant.throttle", actions.Request{Params: bad.params, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, bad.want)
	}
}
