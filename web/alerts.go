package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
)

// alertmanagerWebhook is Alertmanager's webhook payload (version 4); only
// the fields the console acts on.
type alertmanagerWebhook struct {
	Version string              `json:"version"`
	Status  string              `json:"status"`
	Alerts  []alertmanagerAlert `json:"alerts"`
}

// alertmanagerAlert is one alert of a notification.
type alertmanagerAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// alertOutcome is what the console did with one alert of a notification.
type alertOutcome struct {
	Alert       string `json:"alert"`
	Status      string `json:"status"`
	Fingerprint string `json:"fingerprint"`
	// Result is "opened", "joined", "noted" or "duplicate".
	Result     string   `json:"result"`
	IncidentID int64    `json:"incident_id,omitempty"`
	Captured   []string `json:"captured,omitempty"`
}

// alertsPath is Alertmanager's webhook, the one route an alerts-scoped
// token may call.
const alertsPath = "/api/v1/alerts"

// alertsMaxBody bounds a notification (Alertmanager groups alerts; a few
// hundred fit easily).
const alertsMaxBody = 1 << 20

// alertsWebhook is POST /api/v1/alerts: Alertmanager's webhook. A firing
// alert opens an incident (or joins the open one) with the alert's labels
// in the audited reason, and captures the panels of its runbook step
// (from the runbook_url annotation) at that moment; a resolved alert
// captures them again, noted as resolved. Each alert's firing and resolved
// notices are acted on once (alert_notifications), however often
// Alertmanager repeats them. Only API tokens of the operator role or above
// may call it.
func (s *Server) alertsWebhook(c echo.Context) error {
	p, _ := principalFrom(c)
	if p.Kind != "token" {
		return fmt.Errorf("%w: POST /api/v1/alerts takes an API token (Authorization: Bearer); create one with `console token create --name alertmanager --scope alerts`", errForbidden)
	}
	if auth.RoleRank(p.Role) < auth.RoleRank(auth.RoleOperator) {
		return fmt.Errorf("%w: opening incidents from alerts needs an operator token and %s is %s", errForbidden, p.Name, p.Role)
	}
	var hook alertmanagerWebhook
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, alertsMaxBody))
	if err := dec.Decode(&hook); err != nil {
		return errBadRequest("the body is not an Alertmanager webhook notification (JSON, version 4): %v", err)
	}
	if len(hook.Alerts) == 0 {
		return errBadRequest("the notification has no alerts")
	}
	var out []alertOutcome
	for _, a := range hook.Alerts {
		o, err := s.alertHandle(c, a)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	return c.JSON(http.StatusOK, map[string]any{"alerts": out})
}

// alertHandle acts on one alert once: the notice is recorded in the same
// transaction that decides to act, committed only when the actions
// succeeded, so a repeat waits for a notice in flight and then skips it,
// and a failed one is retried by Alertmanager's next attempt.
func (s *Server) alertHandle(c echo.Context, a alertmanagerAlert) (alertOutcome, error) {
	name := a.Labels["alertname"]
	o := alertOutcome{Alert: name, Status: a.Status, Fingerprint: a.Fingerprint}
	if name == "" || a.Fingerprint == "" || a.StartsAt.IsZero() || (a.Status != "firing" && a.Status != "resolved") {
		return o, errBadRequest("each alert needs labels.alertname, fingerprint, startsAt and a status of firing or resolved")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), actionTimeout)
	defer cancel()
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return o, err
	}
	defer tx.Rollback(context.Background())
	labels, _ := json.Marshal(a.Labels)
	tag, err := tx.Exec(ctx, sqlText("alert_notification_insert"), a.Fingerprint, a.StartsAt, a.Status, name, labels)
	if err != nil {
		return o, fmt.Errorf("record alert %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		o.Result = "duplicate"
		return o, nil
	}
	labelText := alertLabelText(a.Labels)
	var incidentID int64
	if a.Status == "firing" {
		if inc := s.openIncident(ctx); inc != nil {
			incidentID, o.Result = inc.ID, "joined"
		} else {
			title := "alert " + name
			if sum := a.Annotations["summary"]; sum != "" {
				title += ": " + sum
			}
			params := map[string]any{"title": truncate(title, 200), "impact": a.Annotations["description"],
				"window_start": a.StartsAt.UTC().Format(time.RFC3339)}
			res, err := s.runAction(c, "incident.open", params, "alert "+name+" firing: "+labelText)
			s.openIncidents.Invalidate()
			if err != nil {
				return o, err
			}
			inc, _ := res.Result.(actions.IncidentView)
			incidentID, o.Result = inc.ID, "opened"
		}
	} else {
		// A resolved alert is noted on the incident it joined.
		var id *int64
		if err := tx.QueryRow(ctx, sqlText("alert_notification_incident"), a.Fingerprint, a.StartsAt).Scan(&id); err != nil || id == nil {
			if inc := s.openIncident(ctx); inc != nil {
				incidentID = inc.ID
			}
		} else {
			incidentID = *id
		}
		o.Result = "noted"
		if incidentID == 0 {
			o.Result = "noted (no incident)"
		}
	}
	if incidentID != 0 {
		reason := fmt.Sprintf("alert %s %s: %s", name, a.Status, labelText)
		for _, panel := range alertPanels(a.Annotations["runbook_url"]) {
			if _, err := s.runAction(c, "incident.capture", map[string]any{"incident_id": incidentID, "panel": panel}, reason); err != nil {
				return o, err
			}
			o.Captured = append(o.Captured, panel)
		}
		if _, err := tx.Exec(ctx, sqlText("alert_notification_incident_set"), a.Fingerprint, a.StartsAt, a.Status, incidentID); err != nil {
			return o, fmt.Errorf("record alert %s: %w", name, err)
		}
	}
	o.IncidentID = incidentID
	if err := tx.Commit(ctx); err != nil {
		return o, fmt.Errorf("record alert %s: %w", name, err)
	}
	return o, nil
}

// alertLabelText shows an alert's labels sorted, as the audit reason and
// the timeline show them: {alertname="X", queue="billing"}.
func alertLabelText(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// alertPanelsDefault is captured for an alert whose runbook_url names no
// runbook page of this console.
var alertPanelsDefault = []string{"activity", "blocking_tree"}

// alertPanels returns the diagnostics panels of the runbook page an alert's
// runbook_url opens (/runbook/<step> or /runbook/rb-<letter>), at most
// three.
func alertPanels(runbookURL string) []string {
	u, err := url.Parse(runbookURL)
	if err != nil || !strings.Contains(u.Path, "/runbook/") {
		return alertPanelsDefault
	}
	slug := path.Base(u.Path)
	var panels []string
	if _, ok := runbookStepBySlug(slug); ok {
		panels = diagnostics.StepPanels(slug)
	} else if tgt, ok := runbookTargetBySlug(slug); ok {
		for _, st := range tgt.Steps {
			panels = append(panels, diagnostics.StepPanels(st)...)
		}
	}
	var out []string
	for _, p := range panels {
		if _, ok := catalogCheck(p); ok && len(out) < 3 {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return alertPanelsDefault
	}
	return out
}
