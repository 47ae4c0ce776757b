package web

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// runbookIndex lists the twelve steps and the targeted runbooks.
func (s *Server) runbookIndex(c echo.Context) error {
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	m := views.RunbookIndex{Steps: stepLinks("")}
	for _, t := range runbookTargets {
		m.Targets = append(m.Targets, views.TargetLink{Slug: t.Slug, Title: t.Title, Href: diagnostics.RunbookURL(t.Slug), Symptoms: t.Symptoms})
	}
	return s.render(c, page{Title: "Runbook", Nav: "runbook", Model: m, Body: views.RunbookIndexBody(m), Travel: &t})
}

// runbookPage serves /runbook/:slug, a step of the chain or a targeted
// runbook.
func (s *Server) runbookPage(c echo.Context) error {
	slug := c.Param("slug")
	p, _ := principalFrom(c)
	if i, ok := runbookStepBySlug(slug); ok {
		t, err := parseTravel(c, time.Now().UTC())
		if err != nil {
			return err
		}
		role := p.Role
		if t.history {
			role = historyRole
		}
		m := runbookStepModel(i, role, t)
		// While the database does not answer, the step is drawn without
		// the incident link rather than wait for it.
		if _, down := s.db.down(); !down {
			if inc := s.openIncident(c.Request().Context()); inc != nil {
				m.Incident = &views.IncidentRef{ID: inc.ID, Title: inc.Title, Href: fmt.Sprintf("/incidents/%d", inc.ID)}
			}
		}
		return s.render(c, page{Title: fmt.Sprintf("Step %d: %s", m.Number, m.Title), Nav: "runbook", Model: m, Body: views.RunbookStepBody(m), Travel: &t})
	}
	if t, ok := runbookTargetBySlug(slug); ok {
		m := runbookTargetModel(t, p.Role)
		return s.render(c, page{Title: t.Title, Nav: "runbook", Model: m, Body: views.RunbookTargetBody(m)})
	}
	return fmt.Errorf("%w: no runbook step or targeted runbook named %q", errNotFound, slug)
}

func stepLinks(current string) []views.StepLink {
	out := make([]views.StepLink, len(runbookSteps))
	for i, st := range runbookSteps {
		out[i] = views.StepLink{Number: st.Number, Slug: st.Slug, Title: st.Title, Href: diagnostics.RunbookURL(st.Slug), Current: st.Slug == current}
	}
	return out
}

// runbookStepModel maps step i to its page: content, panel slots that load on
// their own (at the moment t picks), the actions the role may run, and its
// neighbours.
func runbookStepModel(i int, role string, t travel) views.RunbookStep {
	st := runbookSteps[i]
	m := views.RunbookStep{
		Number: st.Number, Slug: st.Slug, Title: st.Title, Purpose: st.Purpose, Safety: st.Safety,
		LookFor: st.LookFor, Traps: st.Traps, Steps: stepLinks(st.Slug),
		Actions: actionLinks(st.Actions, role, nil),
	}
	m.Panels = panelSlots(diagnostics.StepPanels(st.Slug), t)
	m.Evidence = "Live evidence"
	if t.history {
		m.Evidence = "Recorded evidence"
	}
	links := stepLinks(st.Slug)
	if i > 0 {
		m.Prev = &links[i-1]
	}
	if i+1 < len(links) {
		m.Next = &links[i+1]
	}
	return m
}

func runbookTargetModel(t runbookTarget, role string) views.RunbookTarget {
	m := views.RunbookTarget{Slug: t.Slug, Title: t.Title, Symptoms: t.Symptoms, Diagnosis: t.Diagnosis,
		Mitigate: t.Mitigate, Dont: t.Dont, Actions: actionLinks(t.Actions, role, nil)}
	for _, slug := range t.Steps {
		if i, ok := runbookStepBySlug(slug); ok {
			st := runbookSteps[i]
			m.Steps = append(m.Steps, views.StepLink{Number: st.Number, Slug: st.Slug, Title: st.Title, Href: diagnostics.RunbookURL(st.Slug)})
		}
	}
	return m
}
