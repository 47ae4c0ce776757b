package web

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/views"
)

// recordAudit appends n events by actor for action on the test database.
func recordAudit(t *testing.T, e *env, n int, actor, action string, outcome audit.Outcome, incident *int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := audit.RecordTx(t.Context(), e.srv.cfg.Pool, audit.Event{
			Actor: actor, Role: "operator", Action: action, Target: "email", Reason: "backlog",
			Params:  json.RawMessage(`{"queue":"email"}`),
			Preview: json.RawMessage(`{"jobs":12}`), Result: json.RawMessage(`{"paused":true}`),
			Outcome: outcome, IncidentID: incident,
		})
		require.NoError(t, err)
	}
}

func TestAuditPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")

	t.Run("Empty", func(t *testing.T) {
		body := c.page("/audit")
		require.Contains(t, body, `data-testid="audit-chain"`)
		require.Contains(t, body, `data-ok="true"`)
		require.Contains(t, body, "No action has been attempted yet.")
		require.Contains(t, body, "data-search")
	})

	inc, err := audit.IncidentOpen(t.Context(), e.srv.cfg.Pool, audit.IncidentOpenParams{Title: "backlog", OpenedBy: "olga"})
	require.NoError(t, err)
	recordAudit(t, e, 30, "olga", "queue.pause", audit.OutcomeSucceeded, nil)
	recordAudit(t, e, 5, "vera", "queue.pause", audit.OutcomeRefused, &inc.ID)

	t.Run("List", func(t *testing.T) {
		body := c.page("/audit")
		require.Contains(t, body, `data-testid="audit-row"`)
		require.Contains(t, body, `data-testid="audit-preview"`)
		require.Contains(t, body, `data-testid="audit-result"`)
		require.Contains(t, body, "<details")
		require.Contains(t, body, "Chain verified: 35 events")
		require.Contains(t, body, `<span class="sev warning">◆ refused</span>`)

		var m views.AuditPage
		require.Equal(t, http.StatusOK, c.getJSON("/audit", &m))
		require.True(t, m.Chain.OK)
		require.Len(t, m.Events, 35)
		require.Equal(t, "vera", m.Events[0].Actor, "newest first")
		require.Equal(t, "/incidents/"+itoa64(inc.ID), m.Events[0].IncidentHref)
		require.Equal(t, "{\n  \"jobs\": 12\n}", m.Events[0].Preview)
		require.Empty(t, m.OlderHref)
	})

	t.Run("FiltersAndPagination", func(t *testing.T) {
		var m views.AuditPage
		require.Equal(t, http.StatusOK, c.getJSON("/audit?outcome=refused", &m))
		require.Len(t, m.Events, 5)
		require.Equal(t, http.StatusOK, c.getJSON("/audit?incident="+itoa64(inc.ID), &m))
		require.Len(t, m.Events, 5)
		require.Equal(t, http.StatusOK, c.getJSON("/audit?actor=nobody", &m))
		require.Empty(t, m.Events)
		require.True(t, m.Filtered)

		require.Equal(t, http.StatusOK, c.getJSON("/audit?actor=olga&limit=20", &m))
		require.Len(t, m.Events, 20)
		require.Contains(t, m.OlderHref, "actor=olga")
		require.Contains(t, m.OlderHref, "limit=20")
		var older views.AuditPage
		require.Equal(t, http.StatusOK, c.getJSON(m.OlderHref, &older))
		require.Len(t, older.Events, 10)
		require.Less(t, older.Events[0].ID, m.Events[19].ID)
		require.Empty(t, older.OlderHref)
		require.Equal(t, "/audit?actor=olga&limit=20", older.FirstHref)
		require.False(t, older.Chain.OK)
		require.Equal(t, "The chain is verified on the newest page of the log.", older.Chain.Message)

		body := c.page("/audit?actor=nobody")
		require.Contains(t, body, "No audit event matches this filter.")
	})

	t.Run("BadInput", func(t *testing.T) {
		for q, msg := range map[string]string{
			"outcome=won":  "outcome &#34;won&#34; is not one of succeeded, failed, refused",
			"incident=abc": "incident &#34;abc&#34; is not a positive whole number",
			"before=-2":    "before",
			"limit=501":    "limit",
			"target=%1b":   "target contains a control character",
		} {
			resp, body := c.get("/audit?" + q)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
			require.Contains(t, body, msg, q)
		}
	})

	t.Run("Fragment", func(t *testing.T) {
		body := c.page("/audit", "HX-Request", "true")
		require.NotContains(t, body, "<html")
		require.Contains(t, body, `data-testid="audit-events"`)
	})
}

func TestAuditPageShowsBrokenChain(t *testing.T) {
	t.Parallel()
	e := setup(t)
	recordAudit(t, e, 3, "olga", "queue.pause", audit.OutcomeSucceeded, nil)
	// Tamper as the table owner would, bypassing the append-only trigger.
	e.exec(t, `ALTER TABLE audit_events DISABLE TRIGGER USER`)
	e.exec(t, `UPDATE audit_events SET reason = 'edited' WHERE id = (SELECT min(id) FROM audit_events)`)
	e.exec(t, `ALTER TABLE audit_events ENABLE TRIGGER USER`)
	c := e.signedIn(t, "viewer")
	body := c.page("/audit")
	require.Contains(t, body, `data-ok="false"`)
	require.Contains(t, body, "Chain broken")
	var m views.AuditPage
	require.Equal(t, http.StatusOK, c.getJSON("/audit", &m))
	require.False(t, m.Chain.OK)
}

func TestAuditChainModel(t *testing.T) {
	t.Parallel()
	id := int64(4)
	ok := auditChainModel(audit.VerifyResult{Checked: 1200, OK: true}, nil)
	require.Equal(t, views.AuditChain{OK: true, Checked: "1,200", Sev: "ok"}, ok)
	broken := auditChainModel(audit.VerifyResult{Checked: 3, BrokenAt: &id, Reason: "hash mismatch"}, nil)
	require.False(t, broken.OK)
	require.Equal(t, "critical", broken.Sev)
	require.Contains(t, broken.Message, "Chain broken after 3 events: hash mismatch (first event that does not fit: 4)")
	failed := auditChainModel(audit.VerifyResult{}, context_deadline{})
	require.False(t, failed.OK)
	require.Equal(t, "warning", failed.Sev)
	require.Contains(t, failed.Message, "could not be verified")

	m := auditModel([]audit.Event{{ID: 9, At: time.Date(2026, 12, 2, 11, 59, 0, 0, time.UTC), Outcome: audit.OutcomeFailed, Params: json.RawMessage(`{}`)}},
		auditListFilter{Params: audit.ListParams{Limit: 50}}, ok, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	require.Equal(t, "critical", m.Events[0].OutcomeSev)
	require.Empty(t, m.Events[0].Params, "an empty object is not shown")
	require.Equal(t, "1m00s ago", m.Events[0].At.Text)
	require.False(t, m.Filtered)
}

type context_deadline struct{}

func (context_deadline) Error() string { return "context deadline exceeded" }
