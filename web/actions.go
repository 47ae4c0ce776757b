package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// actionTimeout bounds one action, including backend.cancel's wait for the
// chain to clear.
const actionTimeout = 30 * time.Second

// actionIndex lists every action with its risk and the role it needs.
func (s *Server) actionIndex(c echo.Context) error {
	p, _ := principalFrom(c)
	m := views.ActionList{}
	for _, spec := range actions.Registry() {
		m.Actions = append(m.Actions, views.ActionSummary{
			Name: spec.Name, Title: spec.Title, Description: spec.Description, Role: spec.Role,
			Risk: riskWord(spec.Risk), Href: "/actions/" + spec.Name,
			Allowed: auth.RoleAtLeast(p.Role, spec.Role),
		})
	}
	return s.render(c, page{Title: "Actions", Nav: "actions", Model: m, Body: views.ActionListBody(m)})
}

// actionForm shows an action's form, prefilled from the query string (the
// buttons on findings and rows link here with their parameters).
func (s *Server) actionForm(c echo.Context) error {
	spec, err := lookupAction(c.Param("name"))
	if err != nil {
		return err
	}
	values := map[string]string{}
	for _, prm := range spec.Params {
		if v := c.QueryParam(prm.Name); v != "" {
			values[prm.Name] = v
		}
	}
	m := s.actionPage(c, spec, values, "")
	m.Stage = "edit"
	return s.renderAction(c, m)
}

// actionPreview runs the action as a dry run and shows what would change,
// with the confirmation form.
func (s *Server) actionPreview(c echo.Context) error { return s.actionPost(c, true) }

// actionExecute runs the action for real, after the typed confirmation when
// the action asks for one.
func (s *Server) actionExecute(c echo.Context) error { return s.actionPost(c, false) }

// actionPost runs the action the form posted, as a dry run (the preview) or
// for real, and shows the next stage; a refusal goes back to the stage it
// came from. Execution needs the signed preview the preview stage gave
// (sealPreview): without it, or with other parameters, nothing runs; when
// the state changed since, the new preview is shown to confirm instead.
func (s *Server) actionPost(c echo.Context, dryRun bool) error {
	spec, err := lookupAction(c.Param("name"))
	if err != nil {
		return err
	}
	values, reason := formParams(c, spec)
	m := s.actionPage(c, spec, values, reason)
	if dryRun {
		out, err := s.runActionRequest(c, spec.Name, actions.Request{Params: stringParams(values), DryRun: true})
		if err != nil {
			return s.actionFailed(c, m, "edit", err)
		}
		return s.renderAction(c, s.showPreview(c, m, spec, values, out))
	}
	// A role that may not run the action is refused (and audited) by the
	// Runner, whatever it posts.
	var seal previewSeal
	var refusal string
	if m.Allowed {
		seal, refusal = s.checkSeal(c, spec, values)
	}
	if refusal != "" {
		m.Stage, m.Error = "edit", refusal
		setRefusal(c, refusal)
		return s.renderActionStatus(c, http.StatusUnprocessableEntity, m)
	}
	req := actions.Request{Params: stringParams(values), Reason: reason, ExpectVersion: seal.Version}
	if id, err := strconv.ParseInt(c.FormValue("incident_id"), 10, 64); err == nil && id > 0 {
		req.IncidentID = &id
	}
	out, err := s.runActionRequest(c, spec.Name, req)
	if errors.Is(err, actions.ErrGuard) {
		return s.previewAgain(c, m, spec, values, seal, err)
	}
	if err != nil {
		m.Stage, m.Summary, m.Seal = "preview", seal.Summary, c.FormValue("preview")
		m.Fields = lockedFields(spec, values)
		return s.actionFailed(c, m, "preview", err)
	}
	s.actionDone(spec.Name)
	p, _ := principalFrom(c)
	m = doneStage(m, values, p.Role, out, time.Now())
	if r, ok := out.Result.(actions.BackendResult); ok {
		m.Follow = signalFollow(r, s.openIncident(c.Request().Context()), p.Role)
	}
	return s.renderAction(c, m)
}

// runActionRequest runs one action for the signed-in operator, bounded by
// actionTimeout.
func (s *Server) runActionRequest(c echo.Context, name string, req actions.Request) (actions.Outcome, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), actionTimeout)
	defer cancel()
	p, _ := principalFrom(c)
	req.RequestID = requestIDOf(c)
	return s.cfg.Actions.Run(ctx, actions.Actor{Name: p.Name, Role: p.Role}, name, req)
}

// previewAgain answers an execution a guard refused (the state changed
// since the preview): nothing was done, and the page shows a new preview,
// taken without the old one's guard values, to confirm instead (409).
func (s *Server) previewAgain(c echo.Context, m views.ActionPage, spec actions.Spec, values map[string]string, seal previewSeal, cause error) error {
	msg := "Nothing was done: what this action would act on changed since your preview"
	if seal.Summary != "" {
		msg += " (you previewed: " + strings.ReplaceAll(seal.Summary, "`", "") + ")"
	}
	if !errors.Is(cause, actions.ErrStale) {
		_, why := statusOf(cause)
		msg += ": " + strings.TrimSuffix(plainMessage(why, spec.Name), ".")
	}
	fresh := withoutGuards(spec, values)
	out, err := s.runActionRequest(c, spec.Name, actions.Request{Params: stringParams(fresh), DryRun: true})
	if err != nil {
		_, why := statusOf(err)
		m.Stage, m.Error = "edit", msg+". A new preview was refused too: "+plainMessage(why, spec.Name)
		if !errors.Is(cause, actions.ErrStale) && errors.Is(err, actions.ErrNotFound) {
			m.Error = msg + "." // the target is gone, which the cause in msg says already
		}
		m.Fields = s.formFields(c.Request().Context(), spec, fresh)
		setRefusal(c, m.Error)
		return s.renderActionStatus(c, http.StatusConflict, m)
	}
	m = s.showPreview(c, m, spec, fresh, out)
	m.Error = msg + ". Read the new preview below and execute again if it is still what you want."
	setRefusal(c, m.Error)
	return s.renderActionStatus(c, http.StatusConflict, m)
}

// showPreview is previewStage with the signed preview the Execute button
// sends back.
func (s *Server) showPreview(c echo.Context, m views.ActionPage, spec actions.Spec, values map[string]string, out actions.Outcome) views.ActionPage {
	m, sealed := previewStage(m, spec, values, out, time.Now())
	m.Seal = s.sealPreview(c, previewSeal{Action: spec.Name, Params: sealed, Summary: out.Summary, Version: out.Version})
	return m
}

// previewStage is the action page showing the preview and the
// confirmation, and the parameters the execution will post (the ones to
// seal). The parameters are shown read-only (changing one means a new
// preview); those the preview fixes for the guards (a backend's
// fingerprint) are added as hidden inputs.
func previewStage(m views.ActionPage, spec actions.Spec, values map[string]string, out actions.Outcome, now time.Time) (views.ActionPage, map[string]string) {
	m.Stage = "preview"
	m.Summary = out.Summary
	m.Preview = previewView(out.Preview, now)
	filled := maps.Clone(values)
	for name, v := range previewParams(out.Preview) {
		if filled[name] == "" && v != "" {
			filled[name] = v
		}
	}
	m.Fields = lockedFields(spec, filled)
	delete(filled, spec.Confirm)
	m.ChangeHref = actionHref(spec.Name, withoutGuards(spec, filled))
	return m, filled
}

// lockedFields are the parameters as a preview shows them: read-only, the
// guards hidden.
func lockedFields(spec actions.Spec, values map[string]string) []views.ActionField {
	fs := actionFields(spec, values)
	for i := range fs {
		if fs[i].Kind != "hidden" {
			fs[i].Locked = true
		}
	}
	return fs
}

// doneStage is the action page after the action ran: its result, its audit
// event, the live panels that show its effect and, when a backend signal did
// not clear the chain, the next step (on the new root when the chain moved,
// else on the same backend).
func doneStage(m views.ActionPage, values map[string]string, role string, out actions.Outcome, now time.Time) views.ActionPage {
	m.Stage = "done"
	m.Summary, m.ResultSummary = out.Summary, out.ResultSummary
	m.Preview = previewView(out.Preview, now)
	m.Result = resultView(out.Result, now)
	m.AuditID = out.AuditID
	m.Watch = watchPanels(out.Action)
	m.Follow = followLinks(out.Result)
	if r, ok := out.Result.(actions.BackendResult); ok && r.NextStep != "" {
		pid := values["pid"]
		if len(r.NewRoots) > 0 {
			pid = strconv.Itoa(int(r.NewRoots[0]))
		}
		m.Next = actionLinks([]string{r.NextStep}, role, map[string]string{"pid": pid})
	}
	return m
}

// followLinks lead from a result to what the action made or changed: the
// job a schedule's run enqueued, the job a job action changed, the
// schedules list after a schedule change.
func followLinks(r actions.Result) []views.ResultLink {
	job := func(j actions.JobSummary) views.ResultLink {
		return views.ResultLink{Label: "Open job " + itoa64(j.ID), Href: "/jobs/" + itoa64(j.ID)}
	}
	switch x := r.(type) {
	case actions.RunNowResult:
		return []views.ResultLink{job(x.Job), {Label: "Back to schedules", Href: "/schedules"}}
	case actions.JobResult:
		return []views.ResultLink{job(x.Job)}
	case actions.ScheduleResult:
		return []views.ResultLink{{Label: "Back to schedules", Href: "/schedules"}}
	}
	return nil
}

// signalFollow are the next steps after a backend signal: the jobs it
// reached, back to the runbook's blocking step, and, when an incident is
// open, the incident and capturing the blocking tree as it is now into it.
func signalFollow(r actions.BackendResult, inc *audit.Incident, role string) []views.ResultLink {
	var out []views.ResultLink
	jobs := r.WaitingJobs
	if r.Job != nil {
		jobs = append([]actions.SignalJob{*r.Job}, jobs...)
	}
	for i, j := range jobs {
		if i == maxFollowJobs {
			break
		}
		out = append(out, views.ResultLink{Label: "Open job #" + itoa64(j.ID), Href: "/jobs/" + itoa64(j.ID)})
	}
	out = append(out, views.ResultLink{Label: "Back to the runbook: blocking", Href: diagnostics.RunbookURL(diagnostics.StepBlocking)})
	if inc == nil {
		return out
	}
	id := itoa64(inc.ID)
	out = append(out, views.ResultLink{Label: "Open incident #" + id, Href: "/incidents/" + id})
	if l, ok := actionLink("incident.capture", role, map[string]string{"incident_id": id, "panel": diagnostics.CheckBlockingTree}); ok {
		out = append(out, views.ResultLink{Label: "Capture the after-state into incident #" + id, Href: l.Href})
	}
	return out
}

// maxFollowJobs bounds the job links after a backend signal; the result
// lists them all.
const maxFollowJobs = 5

// actionAPI serves POST /api/v1/actions/:name for automation:
// {"params": {...}, "reason": "...", "dry_run": false}.
//
// With an Idempotency-Key (the route's IdempotencyMiddleware) the action
// runs in the middleware's transaction (Runner.RunTx): the change, its audit
// event and the stored answer commit together or not at all, so a client
// that lost the answer and retries with the same key gets the answer
// replayed, or (if nothing committed) runs the action once. A refusal is an
// error: it is not stored, and the retry is refused (and audited) again.
func (s *Server) actionAPI(c echo.Context) error {
	if _, err := lookupAction(c.Param("name")); err != nil {
		return err
	}
	var body struct {
		Params     json.RawMessage `json:"params"`
		Reason     string          `json:"reason"`
		DryRun     bool            `json:"dry_run"`
		IncidentID *int64          `json:"incident_id"`
	}
	if mt, _, err := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "the body must be JSON like {\"params\": {...}, \"reason\": \"...\", \"dry_run\": false}: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return echo.NewHTTPError(http.StatusBadRequest, "the body must be one JSON object with nothing after it")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), actionTimeout)
	defer cancel()
	p, _ := principalFrom(c)
	req := actions.Request{Params: body.Params, Reason: body.Reason, DryRun: body.DryRun, IncidentID: body.IncidentID,
		RequestID: requestIDOf(c)}
	if len(body.Params) == 0 {
		req.Params = nil
	}
	actor := actions.Actor{Name: p.Name, Role: p.Role}
	var out actions.Outcome
	var err error
	if tx, ok := IdempotencyTx(c); ok {
		out, err = s.cfg.Actions.RunTx(ctx, tx, actor, c.Param("name"), req)
	} else {
		out, err = s.cfg.Actions.Run(ctx, actor, c.Param("name"), req)
	}
	if err != nil {
		return err
	}
	s.actionDone(c.Param("name"))
	return c.JSON(http.StatusOK, out)
}

// actionDone drops what an action may have made stale: an incident opened
// or closed shows on the next page, wherever it was run from. (Through an
// idempotent API request the change commits after this, so a page loaded
// in between can cache the old state for openIncidentMaxAge.)
func (s *Server) actionDone(name string) {
	if strings.HasPrefix(name, "incident.") {
		s.openIncidents.Invalidate()
	}
}

func lookupAction(name string) (actions.Spec, error) {
	spec, ok := actions.Lookup(name)
	if !ok {
		return spec, fmt.Errorf("%w: there is no action named %q; /actions lists them", errNotFound, name)
	}
	return spec, nil
}

// actionPage fills the parts of an action page every stage shares.
func (s *Server) actionPage(c echo.Context, spec actions.Spec, values map[string]string, reason string) views.ActionPage {
	p, _ := principalFrom(c)
	m := views.ActionPage{
		Name: spec.Name, Title: spec.Title, Description: spec.Description, Risk: riskWord(spec.Risk), Role: spec.Role,
		Reason: reason, CSRF: csrfToken(c), Allowed: auth.RoleAtLeast(p.Role, spec.Role),
		ReadOnly: s.readOnly(c.Request().Context()),
	}
	ctx, cancel := readContext(c)
	defer cancel()
	m.Fields = s.formFields(ctx, spec, values)
	m.Current = s.currentState(ctx, spec, values)
	if spec.Confirm != "" {
		// The confirmation parameter (confirm_pid) repeats another one
		// (pid); the runner checks they match.
		confirmed := strings.TrimPrefix(spec.Confirm, "confirm_")
		m.ConfirmName = spec.Confirm
		m.ConfirmLabel = "Type the " + confirmed + " (" + values[confirmed] + ") again to confirm"
		m.ConfirmValue = values[confirmed]
	}
	if inc := s.openIncident(c.Request().Context()); inc != nil {
		m.Incident = &views.IncidentRef{ID: inc.ID, Title: inc.Title, Href: fmt.Sprintf("/incidents/%d", inc.ID)}
	}
	return m
}

// actionFailed shows a refused or failed action on its form with the
// status the error maps to; the inputs are kept.
func (s *Server) actionFailed(c echo.Context, m views.ActionPage, stage string, err error) error {
	status, msg := statusOf(err)
	if status >= 500 {
		return err
	}
	if refusedStatus(status) {
		setRefusal(c, msg)
	}
	m.Stage = stage
	m.Error = sentence(plainMessage(msg, m.Name))
	return s.renderActionStatus(c, status, m)
}

// actionSentinels are the actions package's error kinds, whose names end
// the wrapped messages ("...: target changed"): the JSON API keeps them for
// clients to match, a form shows the sentence before them.
var actionSentinels = []error{actions.ErrNotFound, actions.ErrGuard, actions.ErrInvalid, actions.ErrForbidden}

// plainMessage is an action's refusal as a form shows it: the sentence that
// says what happened and what to do, without the runner's "preview <action>:"
// before it (the form names the action) or the error kind's name after it.
func plainMessage(msg, action string) string {
	msg = strings.TrimPrefix(msg, "preview "+action+": ")
	for _, e := range actionSentinels {
		if m, ok := strings.CutSuffix(msg, ": "+e.Error()); ok && m != "" {
			return m
		}
	}
	return msg
}

// sentence makes msg a sentence to show on its own: a capital first (unless
// it starts with a name such as queue.pause), a full stop last.
func sentence(msg string) string {
	first, _, _ := strings.Cut(msg, " ")
	if r, size := utf8.DecodeRuneInString(msg); unicode.IsLower(r) && !strings.ContainsAny(first, "._") {
		msg = string(unicode.ToUpper(r)) + msg[size:]
	}
	if msg != "" && !strings.ContainsAny(msg[len(msg)-1:], ".!?") {
		msg += "."
	}
	return msg
}

func (s *Server) renderAction(c echo.Context, m views.ActionPage) error {
	return s.renderActionStatus(c, http.StatusOK, m)
}

func (s *Server) renderActionStatus(c echo.Context, status int, m views.ActionPage) error {
	if isHTMX(c) && c.Request().Method == http.MethodPost {
		return s.writeComponent(c, status, views.ActionArea(m))
	}
	return s.render(c, page{Title: m.Title, Nav: "actions", Model: m, Body: views.ActionBody(m), Status: status})
}

// formParams reads the action's parameters from p.<name> form fields; empty
// values are left out so the action sees them as not given. A list of ids
// may come as several fields (the checkboxes of a list's selected rows).
func formParams(c echo.Context, spec actions.Spec) (map[string]string, string) {
	values := map[string]string{}
	for _, prm := range spec.Params {
		v := strings.TrimSpace(c.FormValue("p." + prm.Name)) // parses the form into Request().Form
		if prm.Type == actions.ParamIntList {
			var parts []string
			for _, p := range c.Request().Form["p."+prm.Name] {
				if p = strings.TrimSpace(p); p != "" {
					parts = append(parts, p)
				}
			}
			v = strings.Join(parts, ",")
		}
		if v != "" {
			values[prm.Name] = v
		}
	}
	return values, strings.TrimSpace(c.FormValue("reason"))
}

func stringParams(values map[string]string) map[string]any {
	out := make(map[string]any, len(values))
	for k, v := range values {
		out[k] = v
	}
	return out
}

// watchPanels are the live panels that show an action's effect after it
// ran: workers' in-flight counts for queue settings, the outbox for the
// relay, the blocking tree for backend signals.
func watchPanels(action string) []views.PanelSlot {
	var names []string
	switch {
	case strings.HasPrefix(action, "queue."):
		names = []string{"workers", "queue_health"}
	case strings.HasPrefix(action, "relay."), action == "outbox.requeue":
		names = []string{"outbox_health"}
	case strings.HasPrefix(action, "backend."):
		names = []string{"blocking_tree"}
	case action == "deadletters.requeue":
		names = []string{"queue_health"}
	}
	var out []views.PanelSlot
	for _, n := range names {
		ck, _ := catalogCheck(n)
		out = append(out, views.PanelSlot{ID: n, Title: ck.Title + " (live)", URL: "/panels/" + n})
	}
	return out
}
