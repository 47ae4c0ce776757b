package web

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// openIncidentMaxAge is how long openIncident serves its lookup. The
// handlers that open or close an incident drop it at once; a change made
// elsewhere (another console, the CLI) shows within this time.
const openIncidentMaxAge = 5 * time.Second

// openIncident returns the newest open incident, or nil. It is read on pages
// that capture evidence or run actions, so they can link to it; every panel
// refresh of every tab asks, so the lookup is cached (s.openIncidents).
func (s *Server) openIncident(ctx context.Context) *audit.Incident {
	inc, err := s.openIncidents.Get(ctx, 0)
	if err != nil || inc == nil {
		return nil
	}
	c := *inc // the cached incident is shared by every request
	return &c
}

// newOpenIncidentCache caches the open-incident lookup for maxAge.
func (s *Server) newOpenIncidentCache(maxAge time.Duration) *diagnostics.Cache[*audit.Incident] {
	return diagnostics.NewCache(func(ctx context.Context) (*audit.Incident, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		list, err := audit.IncidentList(ctx, s.cfg.Pool, audit.IncidentListParams{Status: audit.IncidentStatusOpen, Limit: 1})
		if err != nil || len(list) == 0 {
			return nil, err
		}
		return &list[0], nil
	}, diagnostics.CacheConfig{MaxAge: maxAge})
}

func (s *Server) incidentList(c echo.Context) error {
	return s.renderIncidentList(c, http.StatusOK, views.IncidentList{})
}

func (s *Server) renderIncidentList(c echo.Context, status int, m views.IncidentList) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	list, err := audit.IncidentList(ctx, s.cfg.Pool, audit.IncidentListParams{Limit: 100})
	if err != nil {
		return err
	}
	p, _ := principalFrom(c)
	now := time.Now()
	for _, inc := range list {
		m.Incidents = append(m.Incidents, views.IncidentRow{ID: inc.ID, Title: inc.Title, Status: inc.Status,
			OpenedBy: inc.OpenedBy, Opened: age(inc.OpenedAt, now), Href: fmt.Sprintf("/incidents/%d", inc.ID)})
	}
	m.CSRF = csrfToken(c)
	m.CanOpen = auth.RoleRank(p.Role) >= auth.RoleRank(auth.RoleOperator)
	return s.render(c, page{Title: "Incidents", Nav: "incidents", Model: m, Body: views.IncidentListBody(m), Status: status})
}

// incidentOpen opens an incident through the incident.open action, so it is
// audited like every other change.
func (s *Server) incidentOpen(c echo.Context) error {
	form := views.IncidentList{Title: c.FormValue("title"), Impact: c.FormValue("impact"), SLO: c.FormValue("slo")}
	params := map[string]any{"title": form.Title, "impact": form.Impact, "slo": form.SLO}
	if started := strings.TrimSpace(c.FormValue("started")); started != "" {
		if _, err := time.Parse(time.RFC3339, started); err != nil {
			form.Error = fmt.Sprintf("Started %q is not a UTC time like 2026-12-02T14:03:00Z.", started)
			return s.renderIncidentList(c, http.StatusBadRequest, form)
		}
		params["window_start"] = started
	}
	out, err := s.runAction(c, "incident.open", params, "opened incident: "+form.Title)
	s.openIncidents.Invalidate()
	if err != nil {
		status, msg := statusOf(err)
		if status >= 500 {
			return err
		}
		form.Error = msg
		return s.renderIncidentList(c, status, form)
	}
	inc, _ := out.Result.(actions.IncidentView)
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/incidents/%d", inc.ID))
}

func (s *Server) incidentPage(c echo.Context) error {
	q, err := parseTimelineQuery(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	inc, err := s.incidentInPath(ctx, c)
	if err != nil {
		return err
	}
	id := inc.ID
	evidence, err := audit.EvidenceList(ctx, s.cfg.Pool, id)
	if err != nil {
		return err
	}
	events, err := audit.List(ctx, s.cfg.Pool, audit.ListParams{IncidentID: &id, Limit: 500})
	if err != nil {
		return err
	}
	p, _ := principalFrom(c)
	now := time.Now()
	m := incidentModel(inc, evidence, events, s.recordedEvidence(ctx, inc), q, now, s.incidentEpisodes(ctx, inc, now)...)
	if n, ok := s.incidentNarrative(ctx, inc); ok {
		m.Story = incidentStory(n, p.Role)
	}
	m.CSRF = csrfToken(c)
	m.CanClose = auth.RoleRank(p.Role) >= auth.RoleRank(auth.RoleOperator)
	m.CanNote = m.CanClose
	return s.render(c, page{Title: inc.Title, Nav: "incidents", Model: m, Body: views.IncidentBody(m)})
}

// timelineQuery is how a person asked to see an incident's timeline:
// newest or oldest first (?order=), and whether with what was recorded
// before it opened (?before=1).
type timelineQuery struct {
	newest bool
	before bool
}

func parseTimelineQuery(c echo.Context) (timelineQuery, error) {
	var q timelineQuery
	switch o := c.QueryParam("order"); o {
	case "", "oldest":
	case "newest":
		q.newest = true
	default:
		return q, errBadRequest("order %q is not oldest or newest", o)
	}
	switch b := c.QueryParam("before"); b {
	case "", "0":
	case "1":
		q.before = true
	default:
		return q, errBadRequest("before %q is not 0 or 1 (1 shows what was recorded before the incident opened)", b)
	}
	return q, nil
}

// href is the incident page's address with q's choices.
func (q timelineQuery) href(id int64) string {
	v := url.Values{}
	if q.newest {
		v.Set("order", "newest")
	}
	if q.before {
		v.Set("before", "1")
	}
	h := fmt.Sprintf("/incidents/%d", id)
	if len(v) > 0 {
		h += "?" + v.Encode()
	}
	return h + "#timeline"
}

// incidentModel merges captured evidence, audited actions, notes and what
// the flight recorder kept into one timeline. It starts when the incident
// opened: what the flight recorder kept from before (its lead, an earlier window start)
// is counted and shown only when q.before asks; q.newest puts the newest
// entry first. The extra items (the lock episodes of the window) join it.
func incidentModel(inc *audit.Incident, evidence []audit.Evidence, events []audit.Event, recorded []audit.RecordedEvidence, q timelineQuery, now time.Time, extra ...timelineItem) views.IncidentPage {
	m := views.IncidentPage{ID: inc.ID, Title: inc.Title, Status: inc.Status, Impact: inc.Impact, SLO: inc.SLO,
		WindowStart: utc(inc.WindowStart), OpenedBy: inc.OpenedBy, Summary: inc.Summary,
		ExportHref: fmt.Sprintf("/incidents/%d/export.md", inc.ID), Order: "oldest", Before: q.before}
	if q.newest {
		m.Order = "newest"
	}
	m.OrderHref = timelineQuery{newest: !q.newest, before: q.before}.href(inc.ID)
	m.BeforeHref = timelineQuery{newest: q.newest, before: !q.before}.href(inc.ID)
	if inc.WindowEnd != nil {
		m.WindowEnd = utc(*inc.WindowEnd)
	}
	m.ClosedBy = deref(inc.ClosedBy, "")
	type stamped struct {
		at     time.Time
		e      views.TimelineEntry
		before bool // recorded before the incident opened
	}
	var all []stamped
	why := audit.CaptureReasons(events)
	for _, ev := range evidence {
		p := capturedPanel(ev)
		e := views.TimelineEntry{At: age(ev.CapturedAt, now), Kind: "evidence", Title: ev.Title, Who: ev.CapturedBy, Panel: &p}
		if ck, ok := checkOfEvidence(ev); ok {
			e.Recapture = ck.Name
		}
		e.Detail = why[ev.ID]
		all = append(all, stamped{at: ev.CapturedAt, e: e})
	}
	for _, e := range events {
		switch {
		case e.Action == audit.ActionCapture && e.Outcome == audit.OutcomeSucceeded:
			continue // the evidence it stored is the entry
		case e.Action == audit.ActionNote:
			all = append(all, stamped{at: e.At, e: views.TimelineEntry{At: age(e.At, now), Kind: "note", Title: e.Reason, Who: e.Actor}})
			continue
		}
		detail := e.Reason
		if e.Error != "" {
			detail += " — " + e.Error
		}
		all = append(all, stamped{at: e.At, e: views.TimelineEntry{At: age(e.At, now), Kind: "action",
			Title: e.Action + " " + e.Target, Who: e.Actor, Detail: detail, Outcome: string(e.Outcome)}})
	}
	for _, r := range recorded {
		all = append(all, stamped{at: r.At, e: recordedTimelineEntry(r, now), before: r.At.Before(inc.OpenedAt)})
	}
	for _, x := range extra {
		all = append(all, stamped{at: x.at, e: x.entry, before: x.at.Before(inc.OpenedAt)})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	for _, s := range all {
		if s.before {
			m.BeforeCount++
			if !q.before {
				continue
			}
		}
		m.Timeline = append(m.Timeline, s.e)
	}
	if q.newest {
		slices.Reverse(m.Timeline)
	}
	return m
}

// timelineRows is how many rows of a capture the timeline shows when it
// cannot be drawn as its live panel.
const timelineRows = 10

// incidentNote adds a free-text note to the incident's timeline (an
// audited incident.note; the note is its reason).
func (s *Server) incidentNote(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(c.FormValue("text"))
	if text == "" {
		return errBadRequest("the note is empty: write what was seen, tried or decided")
	}
	if _, err := s.runAction(c, audit.ActionNote, map[string]any{"incident_id": id, "text": text}, text); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/incidents/%d#timeline", id))
}

func (s *Server) incidentClose(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	_, err = s.runAction(c, "incident.close", map[string]any{"id": id, "summary": c.FormValue("summary")},
		"closed incident "+strconv.FormatInt(id, 10))
	s.openIncidents.Invalidate()
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/incidents/%d", id))
}

// incidentCapture stores one diagnostics panel, as the server sees it now,
// in the incident's timeline.
func (s *Server) incidentCapture(c echo.Context) error {
	id, err := incidentID(c)
	if err != nil {
		return err
	}
	panel := c.FormValue("panel")
	if _, ok := catalogCheck(panel); !ok {
		return errBadRequest("there is no diagnostics panel named %q to capture", panel)
	}
	if _, err := s.runAction(c, audit.ActionCapture, map[string]any{"incident_id": id, "panel": panel},
		"captured "+panel+" into incident "+strconv.FormatInt(id, 10)); err != nil {
		if isHTMX(c) {
			_, msg := statusOf(err)
			return c.HTML(http.StatusOK, `<span class="sev critical">capture failed: `+html.EscapeString(msg)+`</span>`)
		}
		return err
	}
	if isHTMX(c) {
		return c.HTML(http.StatusOK, `<span class="sev ok" data-testid="captured">✓ captured</span>`)
	}
	return c.Redirect(http.StatusSeeOther, fmt.Sprintf("/incidents/%d", id))
}

// incidentExport serves the incident as Markdown for a post-mortem:
// compact tables of what the console showed, no SQL or JSON unless
// ?full=1.
func (s *Server) incidentExport(c echo.Context) error {
	full := false
	switch f := c.QueryParam("full"); f {
	case "", "0":
	case "1":
		full = true
	default:
		return errBadRequest("full %q is not 0 or 1 (1 adds the SQL, every column and the actions' results as JSON)", f)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	inc, err := s.incidentInPath(ctx, c)
	if err != nil {
		return err
	}
	opts := audit.MarkdownOpts{Recorded: s.recordedEvidence(ctx, inc), TableFunc: exportTable, Full: full}
	if n, ok := s.incidentNarrative(ctx, inc); ok {
		lead := "As the console saw it at "
		if n.recorded {
			lead = "As the console recorded it when the incident opened, at "
		}
		if text := findings.NewNarrative(n.findings, n.at, n.told()).Text; text != "" {
			opts.Lead = lead + n.at.UTC().Format(time.RFC3339) + ": " + text
		}
	}
	md, err := audit.IncidentReport(ctx, s.cfg.Pool, inc.ID, opts)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="incident-%d.md"`, inc.ID))
	return c.Blob(http.StatusOK, "text/markdown; charset=utf-8", []byte(md))
}

// runAction runs an action for the signed-in principal with a reason the
// handler states.
func (s *Server) runAction(c echo.Context, name string, params map[string]any, reason string) (actions.Outcome, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), actionTimeout)
	defer cancel()
	p, _ := principalFrom(c)
	return s.cfg.Actions.Run(ctx, actions.Actor{Name: p.Name, Role: p.Role}, name,
		actions.Request{Params: params, Reason: reason, RequestID: requestIDOf(c)})
}

// incidentInPath reads the incident whose id the address holds.
func (s *Server) incidentInPath(ctx context.Context, c echo.Context) (*audit.Incident, error) {
	id, err := incidentID(c)
	if err != nil {
		return nil, err
	}
	return audit.IncidentGet(ctx, s.cfg.Pool, id)
}

// roundFindings are a round's findings and when the round started.
type roundFindings struct {
	findings []findings.Finding
	at       time.Time
	// recorded says the findings are the flight recorder's, of the moment
	// a closed incident opened, rather than a live round's.
	recorded bool
}

// told is how the narrative of these findings is told: a recorded moment's
// action is the one that fitted then.
func (n roundFindings) told() *findings.NarrativeOpts {
	if n.recorded {
		return recordedNarrativeOpts
	}
	return narrativeOpts
}

// incidentNarrative reads the findings an incident's narrative is told
// from. While the incident is open they are the shared round's: what the
// console sees now is this incident. Once it is closed, now is another
// story, so they are the flight recorder's sample at or just before the
// moment it opened (recorder.HistoryDocAt): what made someone declare
// it, for the post-mortem. ok is false when neither is available in time
// (no round; no sample in the 30 s before the opening, as when history
// is off): the page shows no paragraph then, rather than a wrong one.
func (s *Server) incidentNarrative(ctx context.Context, inc *audit.Incident) (roundFindings, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if inc.Status != audit.IncidentStatusOpen {
		doc, e, err := recorder.HistoryDocAt(ctx, s.cfg.Pool, inc.OpenedAt)
		if err != nil {
			return roundFindings{}, false
		}
		return roundFindings{findings: doc.Findings, at: e.At, recorded: true}, true
	}
	if s.cfg.Diagnostics == nil {
		return roundFindings{}, false
	}
	r, err := s.cfg.Diagnostics.LatestRound(ctx, 0)
	if err != nil {
		return roundFindings{}, false
	}
	return roundFindings{findings: findings.Evaluate(r, s.cfg.Diagnostics.Thresholds()), at: r.At}, true
}

// incidentStory is the incident page's paragraph. A closed incident's is
// the recorded one of the moment it opened: it says so, and offers no
// action, as every view of the past.
func incidentStory(n roundFindings, role string) views.Story {
	if !n.recorded {
		return storyView(n.findings, n.at, role, n.told())
	}
	st := storyView(n.findings, n.at, historyRole, n.told())
	if st.Text != "" {
		st.Text = "When it opened (recorded " + clock(n.at) + " UTC): " + st.Text
		st.Recorded = true
	}
	return st
}

func incidentID(c echo.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errBadRequest("incident id %q is not a positive number", c.Param("id"))
	}
	return id, nil
}
