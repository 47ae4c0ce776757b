package web

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

func TestOutboxPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	t.Run("Empty", func(t *testing.T) {
		body := c.page("/outbox")
		for _, id := range []string{"outbox", "outbox-states", "outbox-relay", "panel-outbox-dead", "inbox-lookup", "idempotency-lookup", "action-relay.pause"} {
			require.Contains(t, body, `data-testid="`+id+`"`, id)
		}
		require.Contains(t, body, "No dead events.")
	})

	e.exec(t, `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT 'orders', 'order', g::text, 'order.created', jsonb_build_object('n', g), now() - interval '3 minutes' FROM generate_series(1, 3) g`)
	var deadID int64
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload, state, attempts, max_attempts, last_error, dead_at)
		VALUES ('orders', 'order', '9', 'order.paid', '{"amount": 12}', 'dead', 16, 16, 'broker: 503 unavailable', now()) RETURNING id`).Scan(&deadID))
	var retryID int64
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload, attempts, max_attempts, last_error, created_at, available_at)
		VALUES ('orders', 'order', '7', 'order.shipped', '{}', 5, 16, 'broker: timeout', now() - interval '1 hour', now() + interval '10 minutes') RETURNING id`).Scan(&retryID))
	e.exec(t, `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload)
		VALUES ('orders', 'order', '10', 'order.created', '{}')`)
	e.exec(t, `INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, payload, state, published_at)
		VALUES ('orders', 'order', '8', 'order.closed', '{}', 'published', now())`)
	e.exec(t, `INSERT INTO consumer_inbox (consumer_name, event_id) VALUES ('billing', $1), ('mailer', $1)`, itoa64(deadID))
	e.exec(t, `INSERT INTO idempotency_requests (scope, idempotency_key, request_hash, state, response_code, response_body)
		VALUES ('payments', 'key-1', '\xdeadbeef', 'completed', 201, '{"payment_id": 77}')`)

	t.Run("States", func(t *testing.T) {
		var m views.OutboxPage
		require.Equal(t, http.StatusOK, c.getJSON("/outbox", &m))
		require.Equal(t, "pending", m.States[0].ID)
		require.Equal(t, "5", m.States[0].Value, "four ready and one waiting to retry")
		require.Contains(t, m.States[0].Meta, "oldest waited 1h00m", "the retrying event was written an hour ago")
		require.Equal(t, "1", m.States[2].Value)
		require.Equal(t, "critical", m.States[2].State)
		require.Len(t, m.Dead.Rows, 1)
		require.Equal(t, "outbox.requeue", m.Dead.Rows[0][7].Actions[0].Name)
		require.Equal(t, "/actions/outbox.requeue?ids="+itoa64(deadID), m.Dead.Rows[0][7].Actions[0].Href)
		require.Nil(t, m.Lookup.Inbox, "no lookup asked")

		// The head of the backlog, oldest first, and the newest events of
		// every state.
		require.Len(t, m.Stuck.Rows, 5, "four pending and the one retrying")
		require.Equal(t, itoa64(retryID), m.Stuck.Rows[0][0].Text, "the oldest undelivered first")
		require.Equal(t, "pending", m.Stuck.Rows[0][3].Text)
		require.Equal(t, "5/16", m.Stuck.Rows[0][5].Text)
		require.Regexp(t, `^in \d+m`, m.Stuck.Rows[0][6].Text, "its next try")
		require.Equal(t, "broker: timeout", m.Stuck.Rows[0][7].Text)
		require.Equal(t, "now", m.Stuck.Rows[1][6].Text)
		require.Len(t, m.Recent.Rows, 7)
		require.Equal(t, itoa64(retryID+2), m.Recent.Rows[0][0].Text, "the newest first")
		require.Equal(t, "published", m.Recent.Rows[0][3].Text)
		for _, r := range m.Stuck.Rows {
			require.NotEqual(t, "published", r[3].Text)
			require.NotEqual(t, "dead", r[3].Text)
		}
	})

	t.Run("InboxLookup", func(t *testing.T) {
		body := c.page("/outbox?event_id=" + itoa64(deadID))
		require.Contains(t, body, `data-testid="panel-inbox"`)
		require.Contains(t, body, "mailer")
		require.Contains(t, body, "order.paid")

		var m views.OutboxPage
		require.Equal(t, http.StatusOK, c.getJSON("/outbox?event_id="+itoa64(deadID), &m))
		require.Len(t, m.Lookup.Inbox.Rows, 2)
		require.Contains(t, m.Lookup.Event, views.Fact{Label: "Delivery attempts", Value: "16 of 16",
			Title: "every publish a relay started, answered or not (a consumer may have received each)"})
		require.Equal(t, "{\n  \"amount\": 12\n}", m.Lookup.EventPayload)

		resp, body := c.get("/outbox?event_id=ext-123")
		require.Equal(t, http.StatusOK, resp.StatusCode, "a foreign event id has no outbox row")
		require.Contains(t, body, `data-testid="event-missing"`)
		require.Contains(t, body, "No consumer has applied this event.")
	})

	t.Run("IdempotencyLookup", func(t *testing.T) {
		var m views.OutboxPage
		require.Equal(t, http.StatusOK, c.getJSON("/outbox?scope=payments&key=key-1", &m))
		require.Contains(t, m.Lookup.Idempotency[2].Value, "completed: it took effect")
		require.Equal(t, "deadbeef", m.Lookup.Idempotency[3].Value)
		require.Equal(t, "{\n  \"payment_id\": 77\n}", m.Lookup.Response)

		body := c.page("/outbox?scope=payments&key=key-2")
		require.Contains(t, body, `data-testid="idempotency-missing"`)
		require.Contains(t, body, "No request is stored for key")

		resp, body := c.get("/outbox?scope=payments")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
		require.Contains(t, body, "needs the key as well as the scope")
		resp, _ = c.get("/outbox?event_id=%07")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})

	t.Run("Fragment", func(t *testing.T) {
		body := c.page("/outbox", "HX-Request", "true")
		require.NotContains(t, body, "<html")
		require.Contains(t, body, `data-testid="outbox-states"`)
	})

	t.Run("PausedRelay", func(t *testing.T) {
		e.exec(t, `UPDATE relay_settings SET paused = true, batch_size = 10, updated_by = 'olga'`)
		var m views.OutboxPage
		require.Equal(t, http.StatusOK, c.getJSON("/outbox", &m))
		require.Equal(t, "warning", m.States[0].State, "pending events while paused")
		require.Equal(t, "relay.resume", m.RelayActions[0].Name)
		require.Equal(t, "10", m.Relay[1].Value)
	})
}

func TestOutboxModel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	m := outboxModel(queues.OutboxStat{Pending: 4, PendingLater: 1, Inflight: 2, ExpiredLeases: 1, RowsEstimate: 100, AcceptedUnmarked: 1, OldestPendingSeconds: 61},
		queues.RelaySettings{}, map[string]trend{"outbox.pending": trendOf(1, 3, 5)}, diagnostics.Thresholds{OutboxBacklogAge: time.Minute, OutboxDead: 1}, "viewer", now)
	require.Equal(t, "4 due · oldest waited 1m01s", m.States[0].Meta)
	require.Equal(t, "warning", m.States[0].State, "the oldest pending event waited past the threshold")
	require.NotEmpty(t, m.States[0].Spark.Points)
	require.Equal(t, "warning", m.States[1].State, "expired leases")
	require.Equal(t, "ok", m.States[2].State, "no dead events")
	require.Equal(t, "~93", m.States[3].Value)
	require.Equal(t, "warning", m.States[3].State, "accepted but unmarked may be delivered twice")
	require.Empty(t, m.RelayActions, "a viewer gets no buttons")
	require.Equal(t, "each relay's own setting", m.Relay[1].Value)

	facts, resp, missing := idempotencyFacts(nil, "s", "k", now)
	require.Nil(t, facts)
	require.Empty(t, resp)
	require.Contains(t, missing, `key "k" in scope "s"`)
}
