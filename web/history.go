package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// historyWindows are the time picker's quick picks.
var historyWindows = []struct {
	key string
	d   time.Duration
}{{"15m", 15 * time.Minute}, {"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

// historyMomentsLimit bounds the moments listed on the history page.
const historyMomentsLimit = 200

// parseHistoryTime reads a time given by an operator (see parseWhen), in
// zone loc unless it names its own; name is the parameter, for the error.
func parseHistoryTime(name, s string, now time.Time, loc *time.Location) (time.Time, error) {
	t, err := parseWhen(s, now, loc)
	if err != nil {
		return time.Time{}, errBadRequest("%s: %v", name, err)
	}
	return t, nil
}

// historyQuery is the window and moment a history request asks for.
type historyQuery struct {
	window   string
	from, to time.Time
	at       time.Time
	// loc is the zone typed times are read and shown in (?tz=, the
	// browser's), UTC when none is given.
	loc *time.Location
	// strip is the scrubber's range: 1h (default) or 24h.
	strip string
}

// parseHistoryQuery reads window (15m, 1h, 24h, 7d or custom, default 1h),
// from, to and at. Quick windows end now; at defaults to the window's end.
func parseHistoryQuery(c echo.Context, now time.Time) (historyQuery, error) {
	q := historyQuery{window: c.QueryParam("window"), to: now, loc: personZone(c), strip: c.QueryParam("strip")}
	switch q.strip {
	case "":
		q.strip = "1h"
	case "1h", "24h":
	default:
		return q, errBadRequest("strip=%q: use 1h or 24h", q.strip)
	}
	from, to, at := c.QueryParam("from"), c.QueryParam("to"), c.QueryParam("at")
	if q.window == "" {
		q.window = "1h"
		if from != "" || to != "" {
			q.window = "custom"
		}
	}
	var err error
	switch q.window {
	case "custom":
		if to != "" {
			if q.to, err = parseHistoryTime("to", to, now, q.loc); err != nil {
				return q, err
			}
		}
		q.from = q.to.Add(-time.Hour)
		if from != "" {
			if q.from, err = parseHistoryTime("from", from, now, q.loc); err != nil {
				return q, err
			}
		}
	default:
		found := false
		for _, w := range historyWindows {
			if w.key == q.window {
				q.from, found = now.Add(-w.d), true
			}
		}
		if !found {
			return q, errBadRequest("window=%q: use 15m, 1h, 24h, 7d or custom (with from and to)", q.window)
		}
	}
	if !q.from.Before(q.to) {
		return q, errBadRequest("from (%s) must be before to (%s)", q.from.Format(time.RFC3339), q.to.Format(time.RFC3339))
	}
	q.at = q.to
	if at != "" {
		if q.at, err = parseHistoryTime("at", at, now, q.loc); err != nil {
			return q, err
		}
	}
	return q, nil
}

// href is the history page for this window showing moment at.
func (q historyQuery) href(window string, at time.Time) string {
	v := url.Values{"window": {window}}
	if window == "custom" {
		v.Set("from", q.from.Format(time.RFC3339))
		v.Set("to", q.to.Format(time.RFC3339))
	}
	if !at.IsZero() {
		v.Set("at", at.UTC().Format(time.RFC3339Nano))
	}
	if q.loc != nil && q.loc != time.UTC {
		v.Set("tz", q.loc.String())
	}
	if q.strip != "" && q.strip != "1h" {
		v.Set("strip", q.strip)
	}
	return "/history?" + v.Encode()
}

// historyStatus is what the page and the API say about recording.
func (s *Server) historyStatus() recorder.HistoryStatus {
	if s.cfg.Recorder == nil {
		return recorder.HistoryStatus{Reason: "history is off: this console does not record (history recorded by other consoles is still shown)"}
	}
	st := s.cfg.Recorder.Status()
	if st.Reason == "" {
		st.On, st.Reason = true, "starting: the first sample is being recorded"
	}
	return st
}

// historyRecord is the evidence of one check of one sample.
type historyRecord struct {
	At         time.Time       `json:"at"`
	RecordedBy string          `json:"recorded_by"`
	Data       json.RawMessage `json:"data"`
}

// historyAnswer is GET /api/v1/history's answer: one sample (at) or the
// samples of a range (from, to), always with whether history is recorded.
type historyAnswer struct {
	Check     string                 `json:"check"`
	History   bool                   `json:"history"`
	Recording recorder.HistoryStatus `json:"recording"`
	At        *time.Time             `json:"at,omitempty"`
	From      *time.Time             `json:"from,omitempty"`
	To        *time.Time             `json:"to,omitempty"`
	Sample    *historyRecord         `json:"sample,omitempty"`
	Samples   []historyRecord        `json:"samples,omitempty"`
}

// historyAPI is GET /api/v1/history?check=...&at=... (the newest sample at
// or before at, within 30s) or ?check=...&from=...&to=... (every sample of
// the range, oldest first, at most a day's worth).
func (s *Server) historyAPI(c echo.Context) error {
	check := c.QueryParam("check")
	if !diagnostics.IsHistoryCheck(check) {
		return errBadRequest("check=%q: use one of %s", check, strings.Join(diagnostics.HistoryChecks, ", "))
	}
	at, from, to := c.QueryParam("at"), c.QueryParam("from"), c.QueryParam("to")
	now, loc := time.Now().UTC(), personZone(c)
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	ans := historyAnswer{Check: check, History: true, Recording: s.historyStatus()}
	switch {
	case at != "" && from == "" && to == "":
		t, err := parseHistoryTime("at", at, now, loc)
		if err != nil {
			return err
		}
		e, err := recorder.HistoryAt(ctx, s.cfg.Pool, check, t, 0)
		if errors.Is(err, recorder.ErrNoHistory) {
			return echo.NewHTTPError(http.StatusNotFound, err.Error()+"; "+ans.Recording.Reason)
		}
		if err != nil {
			return err
		}
		ans.At = &t
		ans.Sample = &historyRecord{At: e.At, RecordedBy: e.RecordedBy, Data: e.Data}
	case at == "" && from != "" && to != "":
		f, err := parseHistoryTime("from", from, now, loc)
		if err != nil {
			return err
		}
		t, err := parseHistoryTime("to", to, now, loc)
		if err != nil {
			return err
		}
		if t.Before(f) {
			return errBadRequest("from (%s) must not be after to (%s)", from, to)
		}
		entries, err := recorder.HistoryRange(ctx, s.cfg.Pool, check, f, t, 0)
		if err != nil {
			return err
		}
		ans.From, ans.To = &f, &t
		ans.Samples = make([]historyRecord, 0, len(entries))
		for _, e := range entries {
			ans.Samples = append(ans.Samples, historyRecord{At: e.At, RecordedBy: e.RecordedBy, Data: e.Data})
		}
	default:
		return errBadRequest("give either at=<time> or both from=<time> and to=<time> (like 2026-12-03T03:12:40Z, \"5m ago\" or \"03:20\" in UTC or ?tz=)")
	}
	return c.JSON(http.StatusOK, ans)
}

// historyPage is /history: the blocking tree and activity as of a moment.
func (s *Server) historyPage(c echo.Context) error {
	now := time.Now().UTC()
	q, err := parseHistoryQuery(c, now)
	var bad badRequest
	problem := ""
	if errors.As(err, &bad) {
		// What was typed stays in the form beside what to type instead;
		// the page shows the last hour meanwhile.
		problem = bad.msg
		q = historyQuery{window: "1h", from: now.Add(-time.Hour), to: now, at: now, loc: personZone(c), strip: "1h"}
	} else if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	ev := historyEvidence{Status: s.historyStatus()}
	ev.Moments, err = recorder.HistoryMoments(ctx, s.cfg.Pool, q.from, q.to, historyMomentsLimit+1)
	if err != nil {
		return err
	}
	ev.Tree, ev.Err = recorder.HistoryAt(ctx, s.cfg.Pool, diagnostics.HistoryBlockingTree, q.at, 0)
	if ev.Err == nil {
		for _, part := range []struct {
			check string
			into  *recorder.HistoryEntry
		}{{diagnostics.HistoryActivity, &ev.Activity}, {diagnostics.HistoryWaitEvents, &ev.Waits}, {diagnostics.HistoryFindings, &ev.Findings}} {
			// The same sample: ask at its exact time.
			if *part.into, err = recorder.HistoryAt(ctx, s.cfg.Pool, part.check, ev.Tree.At, time.Nanosecond); err != nil {
				return err
			}
		}
	} else if !errors.Is(ev.Err, recorder.ErrNoHistory) {
		return ev.Err
	}
	if ev.Strip, err = s.historyStripEvidence(ctx, q); err != nil {
		return err
	}
	m := historyModel(q, ev)
	if problem != "" {
		m.Problem, m.From, m.To, m.At = problem, c.QueryParam("from"), c.QueryParam("to"), c.QueryParam("at")
	}
	return s.render(c, page{Title: "History", Nav: "history", Model: m, Body: views.HistoryBody(m)})
}

// historyEvidence is what the history page read.
type historyEvidence struct {
	Status  recorder.HistoryStatus
	Moments []recorder.HistoryMoment
	// Tree is the sample shown; Err is ErrNoHistory when there is none.
	Tree, Activity, Waits, Findings recorder.HistoryEntry
	Err                             error
	// Strip is what the scrubber marks.
	Strip stripEvidence
}

// historyModel maps what the page read to its view model; no I/O.
func historyModel(q historyQuery, ev historyEvidence) views.HistoryPage {
	m := views.HistoryPage{
		Recording: ev.Status.On, RecordingWhy: ev.Status.Reason,
		Window: q.window, From: inputTime(q.from, q.loc), To: inputTime(q.to, q.loc),
		At: inputTime(q.at, q.loc), Zone: zoneName(q.loc),
		APIHref: "/api/v1/history?" + url.Values{"check": {diagnostics.HistoryBlockingTree}, "at": {q.at.Format(time.RFC3339Nano)}}.Encode(),
	}
	for _, w := range historyWindows {
		m.Windows = append(m.Windows, views.HistoryWindowLink{Label: w.key, Href: q.href(w.key, time.Time{}), Active: q.window == w.key})
	}
	m.Windows = append(m.Windows, views.HistoryWindowLink{Label: "custom", Href: q.href("custom", q.at), Active: q.window == "custom"})
	m.Strip = historyStrip(q, ev.Strip)
	moments := ev.Moments
	if len(moments) > historyMomentsLimit {
		moments, m.MomentsLimit = moments[:historyMomentsLimit], true
	}
	for _, ch := range recorder.HistoryChains(moments) {
		shown := ev.Err == nil && !ev.Tree.At.Before(ch.First) && !ev.Tree.At.After(ch.Last)
		span := ch.First.UTC().Format(time.RFC3339)
		if !ch.First.Equal(ch.Last) {
			span += " → " + ch.Last.UTC().Format("15:04:05Z")
		}
		m.Moments = append(m.Moments, views.HistoryMoment{At: span, Href: q.href(q.window, ch.Worst.At),
			Samples: fmt.Sprint(ch.Samples), Blocked: fmt.Sprint(ch.Worst.Blocked), Root: ch.Worst.Root(), Active: shown})
	}
	if ev.Err != nil {
		m.Missing = "No sample was recorded in the 30 seconds before it. " + ev.Status.Reason
		return m
	}
	m.Found = true
	m.SampleAt = ev.Tree.At.UTC().Format(time.RFC3339)
	m.RecordedBy = ev.Tree.RecordedBy
	var unread []string
	var nodes []diagnostics.BlockingNode
	decodeRecorded("blocking tree", ev.Tree.Data, &nodes, &unread)
	for _, n := range nodes {
		r := views.HistoryTreeRow{PID: fmt.Sprint(n.PID), Indent: strings.Repeat("  ", n.Depth), Root: n.IsRoot,
			Blocked: fmt.Sprint(n.BlockedCount), State: n.State, Wait: waitText(n.WaitEventType, n.WaitEvent),
			Waited: humanize.Seconds(n.WaitSeconds), XactAge: humanize.Seconds(n.XactAgeSeconds), App: n.ApplicationName, Query: n.Query}
		if n.Depth > 0 {
			r.Indent += "└ "
		}
		if n.JobID != nil {
			r.Job, r.JobHref = fmt.Sprintf("job %d", *n.JobID), fmt.Sprintf("/jobs/%d", *n.JobID)
		}
		m.Tree = append(m.Tree, r)
	}
	var act []diagnostics.Backend
	decodeRecorded("activity", ev.Activity.Data, &act, &unread)
	for _, a := range act {
		m.Activity = append(m.Activity, views.HistoryActivityRow{PID: fmt.Sprint(a.PID), State: a.State, Wait: waitText(a.WaitEventType, a.WaitEvent),
			XactAge: humanize.Seconds(a.XactAgeSeconds), QueryAge: humanize.Seconds(a.QueryAgeSeconds), App: a.ApplicationName, Query: a.Query})
	}
	var waits []recorder.WaitEventCount
	decodeRecorded("wait events", ev.Waits.Data, &waits, &unread)
	for _, w := range waits {
		m.Waits = append(m.Waits, views.HistoryWaitRow{Event: waitText(w.WaitEventType, w.WaitEvent), Backends: fmt.Sprint(w.Backends)})
	}
	var list []findings.Finding
	decodeRecorded("findings", ev.Findings.Data, &list, &unread)
	for _, f := range list {
		m.Findings = append(m.Findings, views.HistoryFindingRow{Severity: f.Severity, Title: f.Title, Evidence: f.Evidence})
	}
	if len(unread) > 0 {
		m.Error = "Part of the recorded sample could not be read, so its table is empty here: " + strings.Join(unread, "; ") + "."
	}
	return m
}

// decodeRecorded decodes one recorded document into v; a document that
// does not decode is named in unread (the page says so instead of showing
// an empty table as if nothing had been recorded). A check the sample did
// not keep has no document and is not an error.
func decodeRecorded(what string, data []byte, v any, unread *[]string) {
	if len(data) == 0 {
		return
	}
	if err := json.Unmarshal(data, v); err != nil {
		*unread = append(*unread, "the "+what+" ("+err.Error()+")")
	}
}

// waitText shows a wait event as "Lock: transactionid", or "on CPU" for a
// backend that was not waiting.
func waitText(typ, event string) string {
	if typ == "" && event == "" {
		return "on CPU / not waiting"
	}
	return typ + ": " + event
}

// recordedEvidence is the flight recorder's evidence for an incident's
// timeline: from HistoryLeadTime before its start to its end (or now). A
// history that cannot be read becomes one item that says so, so the
// incident page and its export still work.
func (s *Server) recordedEvidence(ctx context.Context, inc *audit.Incident) []audit.RecordedEvidence {
	from := inc.WindowStart.Add(-recorder.HistoryLeadTime)
	to := time.Now()
	if inc.WindowEnd != nil {
		to = *inc.WindowEnd
	}
	items, err := recorder.HistoryTimeline(ctx, s.cfg.Pool, from, to)
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return []audit.RecordedEvidence{{At: from, Title: "recorded history could not be read", Check: "history", Data: b}}
	}
	out := make([]audit.RecordedEvidence, len(items))
	for i, it := range items {
		out[i] = audit.RecordedEvidence{At: it.At, Title: it.Title, Check: it.Check, Data: it.Data}
	}
	return out
}

// recordedTimelineEntry shows one recorded item on the incident page, with
// a link to the history page at that moment.
func recordedTimelineEntry(r audit.RecordedEvidence, now time.Time) views.TimelineEntry {
	return views.TimelineEntry{At: age(r.At, now), Kind: "recorded", Title: r.Title, Who: "the flight recorder",
		Href: "/history?" + url.Values{"window": {"custom"}, "from": {r.At.Add(-30 * time.Minute).UTC().Format(time.RFC3339)},
			"to": {r.At.Add(30 * time.Minute).UTC().Format(time.RFC3339)}, "at": {r.At.UTC().Format(time.RFC3339Nano)}}.Encode()}
}
