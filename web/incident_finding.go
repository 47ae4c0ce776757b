package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// incidentFromFinding serves the "Open incident" / "Add to incident"
// button of a finding or a runbook step: with no incident open it opens one
// titled after the finding (the title can be edited later), otherwise it
// notes the finding on the open one; then it captures the panels of the
// finding's runbook page, so the evidence is kept from that moment. One
// click, nothing to type; every step is an audited action.
func (s *Server) incidentFromFinding(c echo.Context) error {
	f := findingForm{Code: strings.TrimSpace(c.FormValue("code")), Title: strings.TrimSpace(c.FormValue("title")),
		Evidence: strings.TrimSpace(c.FormValue("evidence")), Runbook: strings.TrimSpace(c.FormValue("runbook"))}
	if f.Title == "" {
		return errBadRequest("the finding came without a title: reload the page and use its button again, or open the incident on the Incidents page")
	}
	reason := f.reason()
	s.openIncidents.Invalidate() // act on the incident open now, not a cached one
	var id int64
	if inc := s.openIncident(c.Request().Context()); inc != nil {
		id = inc.ID
		if _, err := s.runAction(c, audit.ActionNote, map[string]any{"incident_id": id, "text": "Added " + reason}, "Added "+reason); err != nil {
			return err
		}
	} else {
		out, err := s.runAction(c, "incident.open", map[string]any{"title": truncate(f.Title, audit.MaxIncidentTitle)}, reason)
		s.openIncidents.Invalidate()
		if err != nil {
			return err
		}
		inc, _ := out.Result.(actions.IncidentView)
		id = inc.ID
	}
	for _, panel := range alertPanels(f.Runbook) {
		if _, err := s.runAction(c, audit.ActionCapture, map[string]any{"incident_id": id, "panel": panel}, f.short()); err != nil {
			return err
		}
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/incidents/%d#timeline", id))
}

// findingForm is what a finding's incident button posts: its code, title,
// evidence and runbook page, as the page showed them.
type findingForm struct {
	Code, Title, Evidence, Runbook string
}

// reason is the audited reason of what the button does: the finding in
// one line ("finding lock.root_blocker: Root blocker pid 4242 …: evidence").
func (f findingForm) reason() string {
	r := f.Title
	if f.Code != "" {
		r = "finding " + f.Code + ": " + r
	}
	if f.Evidence != "" {
		r += " (" + f.Evidence + ")"
	}
	return truncate(r, audit.MaxIncidentField)
}

// short names the finding without its evidence, for the captures it
// asks for ("finding lock.root_blocker: Root blocker pid 4242 …").
func (f findingForm) short() string {
	if f.Code == "" {
		return truncate(f.Title, audit.MaxIncidentTitle)
	}
	return truncate("finding "+f.Code+": "+f.Title, audit.MaxIncidentTitle)
}

// incidentButton is the button a finding or step offers, or nil when the
// role may not open incidents or the page shows the past.
func (s *Server) incidentButton(ctx context.Context, c echo.Context, role string) func(code, title, evidence, runbook string) *views.IncidentButton {
	if auth.RoleRank(role) < auth.RoleRank(auth.RoleOperator) {
		return func(string, string, string, string) *views.IncidentButton { return nil }
	}
	label := "Open incident"
	if _, down := s.db.down(); !down {
		if inc := s.openIncident(ctx); inc != nil {
			label = fmt.Sprintf("Add to incident #%d", inc.ID)
		}
	}
	csrf := csrfToken(c)
	return func(code, title, evidence, runbook string) *views.IncidentButton {
		return &views.IncidentButton{Label: label, CSRF: csrf, Code: code, Title: title, Evidence: evidence, Runbook: runbook}
	}
}

// withIncidentButtons gives each finding row its incident button.
func withIncidentButtons(rows []views.FindingRow, button func(code, title, evidence, runbook string) *views.IncidentButton) {
	for i, f := range rows {
		rows[i].Incident = button(f.Code, f.Title, f.Evidence, f.RunbookHref)
	}
}

// stepIncident is what an incident opened from a runbook step is about:
// the worst finding that points at the step, else the step itself.
func stepIncident(number int, title string, found []findings.Finding) findingForm {
	for _, sev := range []string{findings.SeverityCritical, findings.SeverityWarning} {
		for _, f := range found {
			if f.Severity == sev {
				return findingForm{Code: f.Code, Title: f.Title, Evidence: f.Evidence}
			}
		}
	}
	return findingForm{Title: fmt.Sprintf("Step %d: %s", number, title)}
}
