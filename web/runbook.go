package web

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/views"
)

// runbookWait bounds how long a runbook page waits for the diagnostics
// round its findings and filled-in actions come from; past it the page is
// drawn without them (its panels load on their own).
const runbookWait = 3 * time.Second

// runbookIndex lists the twelve steps, each marked when current findings
// point at it, and the targeted runbooks.
func (s *Server) runbookIndex(c echo.Context) error {
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	ev := s.runbookEvidence(c.Request().Context(), t)
	m := views.RunbookIndex{Steps: stepLinks("", ev.findings)}
	for _, rt := range runbookTargets {
		m.Targets = append(m.Targets, views.TargetLink{Slug: rt.Slug, Title: rt.Title, Href: diagnostics.RunbookURL(rt.Slug), Symptoms: rt.Symptoms})
	}
	return s.render(c, page{Title: "Runbook", Nav: "runbook", Model: m, Body: views.RunbookIndexBody(m), Travel: &t})
}

// runbookPage serves /runbook/:slug, a step of the chain or a targeted
// runbook.
func (s *Server) runbookPage(c echo.Context) error {
	slug := c.Param("slug")
	p, _ := principalFrom(c)
	ctx := c.Request().Context()
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	role := p.Role
	if t.history {
		role = historyRole // nobody acts on the past
	}
	if i, ok := runbookStepBySlug(slug); ok {
		ev := s.runbookEvidence(ctx, t)
		m := runbookStepModel(i, role, ev, t)
		guard := s.backendGuard(ctx)
		m.Actions = guardOffers(m.Actions, guard)
		guardFindings(m.Findings, guard)
		// While the database does not answer, the step is drawn without
		// the incident link rather than wait for it.
		if _, down := s.db.down(); !down {
			if inc := s.openIncident(ctx); inc != nil {
				m.Incident = &views.IncidentRef{ID: inc.ID, Title: inc.Title, Href: fmt.Sprintf("/incidents/%d", inc.ID)}
			}
		}
		if !t.history {
			button := s.incidentButton(ctx, c, role)
			withIncidentButtons(m.Findings, button)
			st := runbookSteps[i]
			f := stepIncident(st.Number, st.Title, stepFindings(ev.findings, st.Slug))
			m.OpenIncident = button(f.Code, f.Title, f.Evidence, diagnostics.RunbookURL(st.Slug))
		}
		return s.render(c, page{Title: fmt.Sprintf("Step %d: %s", m.Number, m.Title), Nav: "runbook", Model: m, Body: views.RunbookStepBody(m), Travel: &t})
	}
	if rt, ok := runbookTargetBySlug(slug); ok {
		m := runbookTargetModel(rt, role, s.runbookEvidence(ctx, t), t)
		guard := s.backendGuard(ctx)
		m.Actions = guardOffers(m.Actions, guard)
		guardFindings(m.Findings, guard)
		if !t.history {
			withIncidentButtons(m.Findings, s.incidentButton(ctx, c, role))
		}
		return s.render(c, page{Title: rt.Title, Nav: "runbook", Model: m, Body: views.RunbookTargetBody(m), Travel: &t})
	}
	return fmt.Errorf("%w: no runbook step or targeted runbook named %q", errNotFound, slug)
}

// runbookEvidence is what a runbook page fills itself in from: the shared
// diagnostics round and its findings. It is empty while the database does
// not answer, when no round comes within runbookWait, and when the time
// picker shows the past (the live round says nothing about then, and
// nobody acts on the past).
type runbookEvidence struct {
	round    diagnostics.Round
	findings []findings.Finding
	// guard answers whether the console may signal a pid the evidence
	// names: actions.ErrNotFound when its session has ended since the
	// round read it (the round can be seconds old), actions.ErrInvalid when
	// the console may not signal it; nil asks nothing.
	guard backendGuard
}

func (s *Server) runbookEvidence(outer context.Context, t travel) runbookEvidence {
	if _, down := s.db.down(); down || t.history {
		return runbookEvidence{}
	}
	ctx, cancel := context.WithTimeout(outer, runbookWait)
	defer cancel()
	round, err := s.cfg.Diagnostics.LatestRound(ctx, 0)
	if err != nil {
		return runbookEvidence{}
	}
	return runbookEvidence{round: round, findings: findings.Evaluate(round, s.cfg.Diagnostics.Thresholds()),
		guard: s.backendGuard(outer)}
}

// pointsAt returns the findings whose runbook page is slug.
func pointsAt(list []findings.Finding, slug string) []findings.Finding {
	var out []findings.Finding
	for _, f := range list {
		if f.Runbook == diagnostics.RunbookURL(slug) {
			out = append(out, f)
		}
	}
	return out
}

// stepFindings returns the findings that point at a step: at the step's
// page, or at a targeted runbook whose evidence starts with the step.
func stepFindings(list []findings.Finding, step string) []findings.Finding {
	out := pointsAt(list, step)
	for _, t := range runbookTargets {
		if len(t.Steps) > 0 && t.Steps[0] == step {
			out = append(out, pointsAt(list, t.Slug)...)
		}
	}
	return out
}

// findingMark counts findings for a step's mark: "1 finding", "3 findings",
// or "" for none.
func findingMark(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 finding"
	}
	return strconv.Itoa(n) + " findings"
}

// worstSeverity is the most severe of findings' severities.
func worstSeverity(list []findings.Finding) string {
	worst := ""
	for _, f := range list {
		switch {
		case f.Severity == findings.SeverityCritical:
			return f.Severity
		case f.Severity == findings.SeverityWarning || worst == "":
			worst = f.Severity
		}
	}
	return worst
}

func stepLinks(current string, list []findings.Finding) []views.StepLink {
	out := make([]views.StepLink, len(runbookSteps))
	for i, st := range runbookSteps {
		out[i] = views.StepLink{Number: st.Number, Slug: st.Slug, Title: st.Title, Short: st.Short, Href: diagnostics.RunbookURL(st.Slug),
			Mark: findingMark(len(stepFindings(list, st.Slug))), Current: st.Slug == current}
	}
	return out
}

// findingRows maps findings to the rows a runbook page lists them in.
func findingRows(list []findings.Finding, role string) []views.FindingRow {
	var out []views.FindingRow
	for _, f := range list {
		out = append(out, views.FindingRow{Code: f.Code, Severity: f.Severity, Title: f.Title, Evidence: f.Evidence,
			RunbookHref: f.Runbook, Actions: actionLinks(f.Actions, role, subjectParams(f.Subject)), Jobs: findingJobs(f),
			EvidenceLink: findingEvidenceLink(f)})
	}
	return out
}

// evidenceParams fills a page's actions in from its evidence: the subjects
// of its findings first, then the largest dead-letter group (its queue and
// error class) of the round; the pid is pickPID's. from says, for the
// page, what was filled in that one of the named actions takes, and which
// pids named by the evidence were passed over and why.
func evidenceParams(ev runbookEvidence, list []findings.Finding, names []string) (params map[string]string, from string) {
	r := ev.round
	params = map[string]string{}
	for _, f := range list {
		for k, v := range subjectParams(f.Subject) {
			if _, ok := params[k]; !ok && k != "pid" {
				params[k] = v
			}
		}
	}
	var passed []string
	if takes(names, "pid") {
		var pid string
		pid, passed = pickPID(ev, list)
		if pid != "" {
			params["pid"] = pid
		}
	}
	if _, ok := params["queue"]; !ok {
		var top *diagnostics.DeadLetterGroup
		for i, g := range r.DeadLetters {
			if top == nil || g.Dead > top.Dead {
				top = &r.DeadLetters[i]
			}
		}
		if top != nil {
			params["queue"], params["error_class"] = top.Queue, top.ErrorClass
		}
	}
	var said []string
	for _, p := range []struct{ key, label string }{{"pid", "pid %s"}, {"queue", "queue %s"}, {"error_class", "error class %s"}} {
		if v := params[p.key]; v != "" && takes(names, p.key) {
			said = append(said, fmt.Sprintf(p.label, v))
		}
	}
	if len(said) > 0 {
		from = "filled in from the evidence: " + strings.Join(said, ", ")
	}
	for _, p := range passed {
		from = strings.TrimPrefix(from+" · "+p, " · ")
	}
	return params, from
}

// pidCandidates bounds how many pids pickPID asks the guard about.
const pidCandidates = 8

// pickPID chooses the pid a page's signal buttons are filled in with: the
// first one the evidence names (the findings' subjects, then the blocking
// tree's roots, each the one blocking the most backends first) that the
// console may still signal. A session that has finished since, or one the
// guard refuses (another database's, a background process), is passed over
// for the next, and passed says so. When none is left, a finished pid
// fills nothing (the form asks for one) and a refused one is kept, so that
// its button says why it is not offered.
func pickPID(ev runbookEvidence, list []findings.Finding) (pid string, passed []string) {
	var named []int32
	seen := map[int32]bool{}
	add := func(p int32) {
		if p != 0 && !seen[p] && len(named) < pidCandidates {
			seen[p] = true
			named = append(named, p)
		}
	}
	type candidate struct {
		pid     int32
		blocked int64
	}
	var subjects, roots []candidate
	for _, f := range list {
		sp := subjectParams(f.Subject)
		if v, err := strconv.ParseInt(sp["pid"], 10, 32); err == nil {
			blocked, _ := strconv.ParseInt(sp["blocked_count"], 10, 64)
			subjects = append(subjects, candidate{int32(v), blocked})
		}
	}
	for _, n := range ev.round.Blocking {
		if n.IsRoot && n.PID != 0 {
			roots = append(roots, candidate{n.PID, int64(n.BlockedCount)})
		}
	}
	for _, c := range [][]candidate{subjects, roots} {
		sort.SliceStable(c, func(i, j int) bool { return c[i].blocked > c[j].blocked })
		for _, n := range c {
			add(n.pid)
		}
	}
	if len(named) == 0 {
		return "", nil
	}
	if ev.guard == nil {
		return strconv.Itoa(int(named[0])), nil
	}
	var finished []string
	var refused []int32
	var why string
	say := func() []string {
		out := finished
		switch len(refused) {
		case 0:
		case 1:
			out = append(out, fmt.Sprintf("pid %d, named by the evidence, is passed over: %s", refused[0], why))
		default:
			out = append(out, fmt.Sprintf("pid %d, named by the evidence, is passed over: %s (and %d more the console may not signal)",
				refused[0], why, len(refused)-1))
		}
		return out
	}
	for _, p := range named {
		err := ev.guard(p)
		switch {
		case errors.Is(err, actions.ErrNotFound):
			finished = append(finished, fmt.Sprintf("pid %d, named by the evidence, has finished since", p))
		case errors.Is(err, actions.ErrInvalid):
			if len(refused) == 0 {
				why = strings.TrimSuffix(strings.TrimPrefix(refusalText(err), "Not offered: "), ".")
			}
			refused = append(refused, p)
		default:
			// A failed lookup is no refusal: execution checks again.
			return strconv.Itoa(int(p)), say()
		}
	}
	if len(refused) > 0 {
		// Its button says why; the page need not say it twice.
		return strconv.Itoa(int(refused[0])), nil
	}
	finished[len(finished)-1] += ": pick one from the live blocking tree"
	return "", finished
}

// takes reports whether one of the named actions has the parameter.
func takes(names []string, param string) bool {
	for _, n := range names {
		spec, _ := actions.Lookup(n)
		for _, p := range spec.Params {
			if p.Name == param {
				return true
			}
		}
	}
	return false
}

// runbookStepModel maps step i to its page: content, the findings that
// point at it, panel slots that load on their own, the actions the role may
// run filled in from the evidence, and its neighbours.
func runbookStepModel(i int, role string, ev runbookEvidence, t travel) views.RunbookStep {
	st := runbookSteps[i]
	found := stepFindings(ev.findings, st.Slug)
	params, from := evidenceParams(ev, found, st.Actions)
	links := stepLinks(st.Slug, ev.findings)
	m := views.RunbookStep{
		Number: st.Number, Slug: st.Slug, Title: st.Title, Purpose: st.Purpose, Safety: st.Safety,
		LookFor: st.LookFor, Traps: st.Traps, Steps: links,
		Mark: findingMark(len(found)), MarkSev: worstSeverity(found), Findings: findingRows(found, role),
		Actions: actionLinks(st.Actions, role, params),
	}
	if len(m.Actions) > 0 {
		m.ActionsFrom = from
	}
	m.Panels = panelSlots(diagnostics.StepPanels(st.Slug), t)
	m.Evidence = evidenceHeading(t)
	if i > 0 {
		m.Prev = &links[i-1]
	}
	if i+1 < len(links) {
		m.Next = &links[i+1]
	}
	return m
}

// evidenceHeading heads a runbook page's panels: live, or recorded when the
// time picker shows the past.
func evidenceHeading(t travel) string {
	if t.history {
		return "Recorded evidence"
	}
	return "Live evidence"
}

// targetPanels is how many panels a targeted runbook shows of the steps it
// refers to: the first ones of its first step, enough to see the evidence
// without the page becoming the step.
const targetPanels = 3

func runbookTargetModel(t runbookTarget, role string, ev runbookEvidence, at travel) views.RunbookTarget {
	found := pointsAt(ev.findings, t.Slug)
	params, _ := evidenceParams(ev, found, t.Actions)
	m := views.RunbookTarget{Slug: t.Slug, Title: t.Title, Symptoms: t.Symptoms, Diagnosis: t.Diagnosis,
		Mitigate: t.Mitigate, Dont: t.Dont, Actions: actionLinks(t.Actions, role, params), Findings: findingRows(found, role)}
	for _, slug := range t.Steps {
		if i, ok := runbookStepBySlug(slug); ok {
			st := runbookSteps[i]
			m.Steps = append(m.Steps, views.StepLink{Number: st.Number, Slug: st.Slug, Title: st.Title, Href: diagnostics.RunbookURL(st.Slug)})
		}
	}
	if len(t.Steps) > 0 {
		panels := diagnostics.StepPanels(t.Steps[0])
		m.Panels = panelSlots(panels[:min(len(panels), targetPanels)], at)
	}
	m.Evidence = evidenceHeading(at)
	return m
}
