package web

import (
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
	if window == "live" || (at == "" && window == "" && from == "" && to == "") {
		return travel{}, nil
	}
	if window == "" && from == "" && to == "" {
		t, err := parseHistoryTime("at", at)
		if err != nil {
			return travel{}, err
		}
		q := historyQuery{window: "custom", at: t, from: t.Add(-momentSpan), to: t.Add(momentSpan)}
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

// inputTime is a time as the picker's inputs show it, so it can be typed
// back: "2026-12-03 03:12:40".
func inputTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// timeBar is the time picker of an evidence page at path; no I/O.
func timeBar(path string, t travel) views.TimeBar {
	b := views.TimeBar{Path: path, History: t.history, LiveHref: path, Paths: travelPaths}
	b.Choices = append(b.Choices, views.HistoryWindowLink{Label: "Live", Href: path, Active: !t.history})
	for _, w := range historyWindows {
		b.Choices = append(b.Choices, views.HistoryWindowLink{Label: pickLabel(w.key), Href: path + "?window=" + w.key,
			Active: t.history && !t.atOnly && t.q.window == w.key})
	}
	if !t.history {
		return b
	}
	b.Marker = t.marker()
	b.Query = t.query().Encode()
	b.From, b.To = inputTime(t.q.from), inputTime(t.q.to)
	if t.atGiven {
		b.At = inputTime(t.q.at)
	}
	b.Custom = !t.atOnly && t.q.window == "custom"
	return b
}
