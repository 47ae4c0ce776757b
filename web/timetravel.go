package web

import (
	"errors"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/views"
)

// travel is the time picker's choice for an evidence page: live, or the
// past. In the past, panels and tiles show the newest recorded sample at or
// before at, and charts span from..to.
type travel struct {
	history bool
	q       historyQuery
	// atOnly is a moment picked without a window: charts span the half
	// hour either side of it.
	atOnly bool
	// atGiven is whether the moment was picked, not the window's end.
	atGiven bool
	// problem says why what was typed could not be read; the page is then
	// live, and the picker keeps what was typed (typed) beside the
	// sentence, instead of a page of its own with a 400.
	problem string
	typed   url.Values
	// loc is the zone typed times are read and shown in (?tz=).
	loc *time.Location
}

// historyRole is the role a page in the past acts with: one that may run
// no action, because nobody can act on the past.
const historyRole = ""

// travelPaths are the pages that honour the time picker; app.js carries
// the choice to links to them and to no other page.
const travelPaths = "/ /runbook /database/ /queues /outbox /workers /panels/ /history"

// momentSpan is how far either side of a moment picked alone charts reach.
const momentSpan = 30 * time.Minute

// parseTravel reads ?at=, ?window= and ?from=&to= (see parseHistoryQuery);
// none of them, or window=live, is live.
func parseTravel(c echo.Context, now time.Time) (travel, error) {
	at, window, from, to := c.QueryParam("at"), c.QueryParam("window"), c.QueryParam("from"), c.QueryParam("to")
	loc := personZone(c)
	if window == "live" || (at == "" && window == "" && from == "" && to == "") {
		return travel{loc: loc}, nil
	}
	t, err := readTravel(c, now, loc)
	var bad badRequest
	if errors.As(err, &bad) {
		return travel{loc: loc, problem: bad.msg, typed: url.Values{"from": {from}, "to": {to}, "at": {at}}}, nil
	}
	t.loc = loc
	return t, err
}

// readTravel reads a choice of the past from the request: a moment alone,
// or a window (see parseHistoryQuery).
func readTravel(c echo.Context, now time.Time, loc *time.Location) (travel, error) {
	at, window, from, to := c.QueryParam("at"), c.QueryParam("window"), c.QueryParam("from"), c.QueryParam("to")
	if window == "" && from == "" && to == "" {
		t, err := parseHistoryTime("at", at, now, loc)
		if err != nil {
			return travel{}, err
		}
		q := historyQuery{window: "custom", at: t, from: t.Add(-momentSpan), to: t.Add(momentSpan), loc: loc}
		if q.to.After(now) {
			q.to = now
		}
		if !q.from.Before(q.to) {
			q.to = q.from.Add(momentSpan)
		}
		return travel{history: true, q: q, atOnly: true, atGiven: true}, nil
	}
	q, err := parseHistoryQuery(c, now)
	if err != nil {
		return travel{}, err
	}
	return travel{history: true, q: q, atGiven: at != ""}, nil
}

// query is the choice as URL parameters, to carry to another page.
func (t travel) query() url.Values {
	v := url.Values{}
	if !t.history {
		return v
	}
	if t.loc != nil && t.loc != time.UTC {
		v.Set("tz", t.loc.String())
	}
	if !t.atOnly {
		v.Set("window", t.q.window)
		if t.q.window == "custom" {
			v.Set("from", t.q.from.Format(time.RFC3339))
			v.Set("to", t.q.to.Format(time.RFC3339))
		}
	}
	if t.atGiven {
		v.Set("at", t.q.at.Format(time.RFC3339Nano))
	}
	return v
}

// with appends the choice to path.
func (t travel) with(path string) string {
	if v := t.query(); len(v) > 0 {
		return path + "?" + v.Encode()
	}
	return path
}

// clock shows a time of day in UTC.
func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

// marker says, on a page in the past, what moment it shows.
func (t travel) marker() string {
	if t.atOnly || t.atGiven {
		return "History · at " + clock(t.q.at) + " UTC, " + t.q.at.UTC().Format("2 Jan")
	}
	return "History · " + windowLabel(t.q.window) + " (" + clock(t.q.from) + " to " + clock(t.q.to) + " UTC), evidence as of " + clock(t.q.at)
}

// windowLabel names a window for people: "last 1 h".
func windowLabel(w string) string {
	for _, h := range historyWindows {
		if h.key == w {
			return "last " + pickLabel(w)
		}
	}
	return "custom range"
}

// pickLabel is a quick pick as the picker shows it: "15 m", "1 h".
func pickLabel(key string) string { return key[:len(key)-1] + " " + key[len(key)-1:] }

// inputTime is a time as the picker's inputs show it, in the person's zone,
// so it can be typed back: "2026-12-03 03:12:40".
func inputTime(t time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04:05")
}

// zoneName is the zone the picker's inputs are in, as its label says it.
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String()
}

// timeBar is the time picker of an evidence page at path; no I/O.
func timeBar(path string, t travel) views.TimeBar {
	b := views.TimeBar{Path: path, History: t.history, LiveHref: path, Paths: travelPaths, Zone: zoneName(t.loc)}
	b.Choices = append(b.Choices, views.HistoryWindowLink{Label: "Live", Href: path, Active: !t.history})
	for _, w := range historyWindows {
		b.Choices = append(b.Choices, views.HistoryWindowLink{Label: pickLabel(w.key), Href: path + "?window=" + w.key,
			Active: t.history && !t.atOnly && t.q.window == w.key})
	}
	if t.problem != "" {
		b.Problem, b.Custom = t.problem, true
		b.From, b.To, b.At = t.typed.Get("from"), t.typed.Get("to"), t.typed.Get("at")
		return b
	}
	if !t.history {
		return b
	}
	b.Marker = t.marker()
	b.Query = t.query().Encode()
	b.From, b.To = inputTime(t.q.from, t.loc), inputTime(t.q.to, t.loc)
	if t.atGiven {
		b.At = inputTime(t.q.at, t.loc)
	}
	b.Custom = !t.atOnly && t.q.window == "custom"
	return b
}
