package web

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/views"
)

// TestQueueTenantsPanel: the queue page lists tenants by the age of their
// oldest ready job, with their limits (an override, else the default),
// folds the tenants past the top into "other", and offers tenant.throttle.
func TestQueueTenantsPanel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")
	ctx := context.Background()
	_, err := e.srv.cfg.Pool.Exec(ctx, `
		INSERT INTO jobs (queue, kind, tenant_id, available_at)
		SELECT 'shared', 'k', 't-' || lpad(g::text, 2, '0'), clock_timestamp() - g * interval '1 second'
		FROM generate_series(1, 25) g;
		INSERT INTO jobs (queue, kind, tenant_id, available_at)
		SELECT 'shared', 'k', 'starved', clock_timestamp() - interval '1 hour' FROM generate_series(1, 3);
		INSERT INTO tenant_limits (queue, tenant_id, max_in_flight, rate_per_second)
		VALUES ('shared', '', 4, NULL), ('shared', 'starved', 10, 2.5)`)
	require.NoError(t, err)

	var m views.QueueDetail
	require.Equal(t, http.StatusOK, c.getJSON("/queues/shared", &m))
	rows := m.Tenants.Rows
	require.Len(t, rows, queueTenantsTop+1, "the top tenants and one row for the rest")
	require.Equal(t, "starved", rows[0][0].Text, "longest wait first")
	require.Equal(t, "1h00", rows[0][1].Text[:4], "an hour")
	require.Equal(t, "3", rows[0][2].Text, "ready")
	require.Equal(t, "10", rows[0][4].Text, "its own max in flight")
	require.Equal(t, "t-25", rows[1][0].Text)
	require.Equal(t, "4", rows[1][4].Text, "the default max in flight")
	require.Equal(t, "other (6 tenants)", rows[queueTenantsTop][0].Text)
	require.Contains(t, m.Tenants.Note, "max in flight 4")

	resp, body := c.get("/queues/shared")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="panel-tenants"`)
	require.Contains(t, body, `data-testid="action-tenant.throttle"`)
	require.Contains(t, body, "tenant=starved")
}
