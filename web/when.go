package web

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// whenForms says, in the words an error shows, what a time may be typed as.
const whenForms = `"5m ago", "2h ago", "03:20", "yesterday 14:05", "2026-12-03 03:20" or "2026-12-03T03:20:00Z"`

// whenAgo is a relative time: a number and a unit, then "ago".
var whenAgo = regexp.MustCompile(`^(\d+)\s*(s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)\s+ago$`)

// whenUnits are the units whenAgo accepts, by their first letter.
var whenUnits = map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}

// whenClock are the layouts of a time of day, alone or after "today" or
// "yesterday".
var whenClock = []string{"15:04:05", "15:04"}

// whenDate are the layouts of a date and time without an offset; they are
// read in the person's zone. A layout with an offset or Z (RFC 3339) keeps
// its own.
var whenDate = []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

// parseWhen reads a time as people type it, relative to now and in zone loc
// where it names no zone of its own:
//   - "now", "5m ago", "90 s ago", "2 hours ago", "3 days ago", or a Go
//     duration with "ago" ("1h30m ago");
//   - a time of day: "03:20", "03:20:15" (today, or yesterday when that time
//     has not come yet today), "today 14:05", "yesterday 14:05";
//   - a date and time: "2026-12-03 03:20", "2026-12-03T03:20:15", a date
//     alone (its midnight);
//   - RFC 3339 with its offset: "2026-12-03T03:20:00Z".
//
// The result is in UTC.
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	typed := strings.Join(strings.Fields(s), " ")
	s = strings.ToLower(typed)
	if s == "" {
		return time.Time{}, fmt.Errorf("no time given; type %s", whenForms)
	}
	if s == "now" {
		return now.UTC(), nil
	}
	if rest, ok := strings.CutSuffix(s, " ago"); ok {
		if m := whenAgo.FindStringSubmatch(s); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil && n <= 100000 {
				return now.Add(-time.Duration(n) * whenUnits[m[2][0]]).UTC(), nil
			}
		}
		if d, err := time.ParseDuration(strings.ReplaceAll(rest, " ", "")); err == nil && d >= 0 {
			return now.Add(-d).UTC(), nil
		}
		return time.Time{}, fmt.Errorf("%q is not a time ago: type a number and a unit, like \"5m ago\", \"2 hours ago\" or \"1h30m ago\"", typed)
	}
	local := now.In(loc)
	day, clock := local, s
	switch {
	case strings.HasPrefix(s, "today "):
		clock = strings.TrimPrefix(s, "today ")
	case strings.HasPrefix(s, "yesterday "):
		day, clock = local.AddDate(0, 0, -1), strings.TrimPrefix(s, "yesterday ")
	}
	for _, layout := range whenClock {
		tod, err := time.Parse(layout, clock)
		if err != nil {
			continue
		}
		t := time.Date(day.Year(), day.Month(), day.Day(), tod.Hour(), tod.Minute(), tod.Second(), 0, loc)
		if clock == s && t.After(local) {
			// A bare time of day that has not come yet today is
			// yesterday's: the console looks back.
			t = t.AddDate(0, 0, -1)
		}
		return t.UTC(), nil
	}
	upper := strings.ToUpper(typed)
	if t, err := time.Parse(time.RFC3339Nano, upper); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range whenDate {
		if t, err := time.ParseInLocation(layout, upper, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time; type %s", typed, whenForms)
}

// zoneOf is the zone a person's times are read and shown in: the IANA name
// their browser sends (tz), else UTC. An unknown name is UTC too: the
// picker still works, in UTC, and says so.
func zoneOf(tz string) *time.Location {
	if tz == "" || tz == "UTC" || len(tz) > 64 {
		return time.UTC
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

// tzCookie is the cookie app.js keeps the browser's zone in, so the time
// pickers of every page read and show times in it.
const tzCookie = "tz"

// personZone is the zone of the person asking: ?tz= (the zone a form's
// times were shown in), else the browser's from tzCookie, else UTC.
func personZone(c echo.Context) *time.Location {
	if tz := c.QueryParam("tz"); tz != "" {
		return zoneOf(tz)
	}
	if ck, err := c.Cookie(tzCookie); err == nil && ck.Value != "" {
		return zoneOf(ck.Value)
	}
	return zoneOf("")
}
