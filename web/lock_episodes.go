package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// episodeSinces are the page's quick windows.
var episodeSinces = []struct {
	key string
	d   time.Duration
}{{"15m", 15 * time.Minute}, {"1h", time.Hour}, {"6h", 6 * time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}}

// episodesPageSize is how many episodes the page shows at once (each with
// its sessions); the API answers up to episodes.ListMax. Either links the
// next page by the last episode's cursor.
const episodesPageSize = 25

// episodeQuery is what a lock-episodes request asks for.
type episodeQuery struct {
	since    string // as given: a quick window or a time
	params   episodes.ListParams
	minGiven string
	// after is the after= cursor as given; empty for the first page.
	after string
}

// parseEpisodeQuery reads since (a window such as 1h or 7d, or a UTC time;
// default 1h), min_duration (a duration such as 2s, or seconds), table,
// application, kind and queue.
func parseEpisodeQuery(c echo.Context, now time.Time) (episodeQuery, error) {
	q := episodeQuery{since: strings.TrimSpace(c.QueryParam("since")), minGiven: strings.TrimSpace(c.QueryParam("min_duration"))}
	if q.since == "" {
		q.since = "1h"
	}
	q.params.Until = now
	found := false
	for _, s := range episodeSinces {
		if s.key == q.since {
			q.params.Since, found = now.Add(-s.d), true
		}
	}
	if !found {
		if d, err := time.ParseDuration(q.since); err == nil && d > 0 {
			q.params.Since = now.Add(-d)
		} else {
			t, err := parseHistoryTime("since", q.since, now, personZone(c))
			if err != nil {
				return q, errBadRequest("since=%q: give a window (15m, 1h, 6h, 24h, 7d, 30d or any Go duration such as 90m) or a time such as \"yesterday 14:05\" or 2026-12-03T03:12:40Z", truncate(q.since, 40))
			}
			q.params.Since = t
		}
	}
	if q.minGiven != "" {
		d, err := time.ParseDuration(q.minGiven)
		if err != nil {
			secs, ferr := strconv.ParseFloat(q.minGiven, 64)
			if ferr != nil || secs > 366*86400 {
				return q, errBadRequest("min_duration=%q: give a duration such as 500ms, 2s or 1m (or a number of seconds)", truncate(q.minGiven, 40))
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d < 0 {
			return q, errBadRequest("min_duration=%q: give a duration of zero or more", truncate(q.minGiven, 40))
		}
		q.params.MinDuration = d
	}
	for _, f := range []struct {
		name string
		into *string
	}{{"table", &q.params.Table}, {"application", &q.params.Application}, {"kind", &q.params.JobKind}, {"queue", &q.params.Queue}} {
		v, err := filterText(paramsOf(c), f.name)
		if err != nil {
			return q, err
		}
		*f.into = v
	}
	if q.after = strings.TrimSpace(c.QueryParam("after")); q.after != "" {
		cur, err := episodes.ParseCursor(q.after)
		if err != nil {
			return q, errBadRequest("after=%q: %v", truncate(q.after, 40), err)
		}
		q.params.After = &cur
	}
	q.params.Limit = episodes.ListMax
	return q, nil
}

// values is the query as URL parameters.
func (q episodeQuery) values() url.Values {
	v := url.Values{"since": {q.since}}
	for k, s := range map[string]string{"min_duration": q.minGiven, "table": q.params.Table, "application": q.params.Application,
		"kind": q.params.JobKind, "queue": q.params.Queue} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// episodesStatus is what the page and the API say about recording.
func (s *Server) episodesStatus() episodes.Status {
	if s.cfg.Episodes == nil {
		return episodes.Status{Reason: "this console does not record lock episodes (episodes recorded by other consoles are still shown)"}
	}
	st := s.cfg.Episodes.Status()
	if st.Reason == "" {
		st.On, st.Reason = true, "starting: the first look is being taken"
	}
	return st
}

// lockEpisodesAnswer is GET /api/v1/lock-episodes's answer.
type lockEpisodesAnswer struct {
	Recording episodes.Status    `json:"recording"`
	Since     time.Time          `json:"since"`
	Until     time.Time          `json:"until"`
	Episodes  []episodes.Episode `json:"episodes"`
	// Limited is true when more episodes match than this answer holds;
	// Next is then the after= of the next page.
	Limited  bool                     `json:"limited"`
	Next     string                   `json:"next,omitempty"`
	Findings []episodes.RepeatBlocker `json:"repeat_blockers"`
}

// lockEpisodesEvidence reads a page of at most size episodes q asks for
// and the repeat blockers of the last hour.
func (s *Server) lockEpisodesEvidence(c echo.Context, q episodeQuery, now time.Time, size int) (lockEpisodesAnswer, error) {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	ans := lockEpisodesAnswer{Recording: s.episodesStatus(), Since: q.params.Since, Until: q.params.Until}
	// One more than the page tells whether a next page exists.
	q.params.Limit = size + 1
	eps, err := episodes.List(ctx, s.cfg.Pool, q.params)
	if err != nil {
		return ans, err
	}
	if len(eps) > size {
		eps, ans.Limited = eps[:size], true
		ans.Next = eps[size-1].Cursor().String()
	}
	ans.Episodes = eps
	if ans.Findings, err = episodes.RepeatBlockers(ctx, s.cfg.Pool, now.Add(-time.Hour), 0); err != nil {
		return ans, err
	}
	return ans, nil
}

// lockEpisodesAPI is GET /api/v1/lock-episodes?since=&min_duration=&table=
// (and application, kind, queue): the episodes, most waited first, each
// with its sessions.
func (s *Server) lockEpisodesAPI(c echo.Context) error {
	now := time.Now().UTC()
	q, err := parseEpisodeQuery(c, now)
	if err != nil {
		return err
	}
	ans, err := s.lockEpisodesEvidence(c, q, now, episodes.ListMax)
	if err != nil {
		return err
	}
	if ans.Episodes == nil {
		ans.Episodes = []episodes.Episode{}
	}
	return c.JSON(http.StatusOK, ans)
}

// lockEpisodesPage is /lock-episodes.
func (s *Server) lockEpisodesPage(c echo.Context) error {
	now := time.Now().UTC()
	q, err := parseEpisodeQuery(c, now)
	if err != nil {
		return err
	}
	ans, err := s.lockEpisodesEvidence(c, q, now, episodesPageSize)
	if err != nil {
		return err
	}
	m := lockEpisodesModel(q, ans)
	return s.render(c, page{Title: "Lock episodes", Nav: "lock-episodes", Model: m, Body: views.LockEpisodesBody(m)})
}

// lockEpisodesModel maps what the page read to its view model; no I/O.
func lockEpisodesModel(q episodeQuery, ans lockEpisodesAnswer) views.LockEpisodesPage {
	m := views.LockEpisodesPage{
		Recording: ans.Recording.On, RecordingWhy: ans.Recording.Reason, Limited: ans.Limited,
		APIHref: "/api/v1/lock-episodes?" + q.values().Encode(),
		Shown:   len(ans.Episodes),
		Filter: views.LockEpisodeFilter{Since: q.since, MinDuration: q.minGiven, Table: q.params.Table,
			Application: q.params.Application, JobKind: q.params.JobKind, Queue: q.params.Queue},
	}
	if ans.Next != "" {
		next := q.values()
		next.Set("after", ans.Next)
		m.NextHref = "/lock-episodes?" + next.Encode()
	}
	if q.after != "" {
		m.FirstHref = "/lock-episodes?" + q.values().Encode()
	}
	custom := true
	for _, s := range episodeSinces {
		m.Filter.Sinces = append(m.Filter.Sinces, views.LockEpisodeOption{Value: s.key, Label: "last " + s.key, Selected: s.key == q.since})
		custom = custom && s.key != q.since
	}
	if custom {
		m.Filter.Sinces = append(m.Filter.Sinces, views.LockEpisodeOption{Value: q.since, Label: "since " + q.since, Selected: true})
	}
	for _, f := range ans.Findings {
		m.Findings = append(m.Findings, views.LockEpisodeFinding{Sentence: f.Sentence("last hour"),
			Targets: strings.Join(f.Targets, ", "), Statements: f.Statements,
			Href: "/lock-episodes?" + url.Values{"since": {"1h"}, "application": {f.RootApplication}}.Encode()})
	}
	for _, e := range ans.Episodes {
		m.Episodes = append(m.Episodes, episodeCard(e))
	}
	return m
}

// episodeCard lays out one episode.
func episodeCard(e episodes.Episode) views.LockEpisodeCard {
	card := views.LockEpisodeCard{
		ID:   strconv.FormatInt(e.ID, 10),
		Lock: strings.TrimSpace(e.LockMode + " on " + orDash(e.LockTarget)), Start: e.Start.UTC().Format("2006-01-02 15:04:05.0Z"),
		Duration: humanize.SecondsTenths(e.Duration().Seconds()), Waiting: strconv.Itoa(e.PeakWaiting),
		Waited:    humanize.SecondsTenths(e.WaitedSeconds),
		Root:      fmt.Sprintf("pid %d · %s", e.RootPID, orDash(e.RootApplication)),
		RootQuery: e.RootQuery,
	}
	if e.RootPID == 0 {
		card.Root = "a prepared transaction"
	}
	end := e.LastSeen
	switch {
	case e.End == nil:
		card.End, card.EndNote = "now", "still waiting at the last look"
	case !e.EndSeen:
		end = *e.End
		card.End, card.EndNote = end.UTC().Format("15:04:05.0Z"), "end not seen: the recording console stopped; it lasted at least this long"
	default:
		end = *e.End
		card.End = end.UTC().Format("15:04:05.0Z")
	}
	if e.ClaimsDelayed > 0 {
		card.Claims = fmt.Sprintf("%d job claims of the engine held up", e.ClaimsDelayed)
		if e.ClaimsDelayed == 1 {
			card.Claims = "1 job claim of the engine held up"
		}
	}
	// The nearest full sample of the flight recorder: the newest at or
	// before the episode's end.
	card.HistoryHref = "/history?" + url.Values{"window": {"custom"}, "from": {e.Start.Add(-30 * time.Minute).UTC().Format(time.RFC3339)},
		"to": {end.Add(30 * time.Minute).UTC().Format(time.RFC3339)}, "at": {end.Add(10 * time.Second).UTC().Format(time.RFC3339Nano)}}.Encode()
	span := end.Sub(e.Start).Seconds()
	seenJob := map[int64]bool{}
	for _, p := range e.Participants {
		row := views.LockEpisodeSession{PID: strconv.Itoa(int(p.PID)), Role: p.Role, App: orDash(p.Application),
			Query: p.Query, Fingerprint: p.Fingerprint}
		if name, _, ok := strings.Cut(p.Fingerprint, ":"); ok && !strings.HasPrefix(p.Query, "--") {
			// One of the console's own statements, by the name its
			// header gives it (JobClaim).
			row.Query = name + " · " + p.Query
		}
		if p.LockMode != "" {
			row.Lock = p.LockMode + " on " + p.LockTarget
		}
		from, to := e.Start, end
		if p.Role != "root" {
			from = p.FirstSeenAt
			if p.WaitStart != nil {
				from = *p.WaitStart
			}
			if p.LastSeenAt.Before(e.LastSeen) {
				to = p.LastSeenAt
			}
			row.Waited = humanize.SecondsTenths(max(to.Sub(from).Seconds(), 0))
		} else {
			row.Waited = "—"
			if len(p.Held) > 0 {
				card.Held = p.Held
			}
		}
		row.BarX, row.BarW = bar(from.Sub(e.Start).Seconds(), to.Sub(from).Seconds(), span)
		if p.JobID != nil {
			row.Job, row.JobHref = fmt.Sprintf("job %d", *p.JobID), fmt.Sprintf("/jobs/%d", *p.JobID)
			if p.Queue != "" {
				row.JobWhere = p.JobKind + " in " + p.Queue
			}
			if p.Role != "root" && !seenJob[*p.JobID] {
				seenJob[*p.JobID] = true
				card.Jobs = append(card.Jobs, views.LockEpisodeLink{Text: row.Job, Href: row.JobHref})
			}
		}
		card.Sessions = append(card.Sessions, row)
	}
	return card
}

// bar places a wait of length secs starting at offset on a timeline of
// span seconds, as percentages (at least 1% wide, so a blip shows).
func bar(offset, secs, span float64) (x, w string) {
	if span <= 0 {
		return "0", "100"
	}
	xf := min(max(offset/span*100, 0), 99)
	wf := min(max(secs/span*100, 1), 100-xf)
	return strconv.FormatFloat(xf, 'f', 1, 64), strconv.FormatFloat(wf, 'f', 1, 64)
}
