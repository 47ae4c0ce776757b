package web

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// Plain formatting functions from domain values to display strings; no I/O,
// table-tested in format_test.go.

// humanRate: 1234.5 -> "1,234/s"; small rates keep a decimal.
func humanRate(perSecond float64) string { return humanPer(perSecond, "/s") }

// humanPer writes a rate with its unit ("/s", "/min"): one decimal below
// ten, whole and grouped above.
func humanPer(v float64, unit string) string {
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + unit
	}
	return humanize.Int(int64(math.Round(v))) + unit
}

// age shows a time as "4m12s ago" with its absolute UTC time for the
// tooltip; the zero time shows "never".
func age(t time.Time, now time.Time) views.Age {
	if t.IsZero() {
		return views.Age{Text: "never"}
	}
	d := now.Sub(t).Seconds()
	text := humanize.Seconds(d) + " ago"
	if d < 0 {
		text = "in " + humanize.Seconds(-d)
	}
	return views.Age{Text: text, UTC: t.UTC().Format(time.RFC3339)}
}

// agePtr is age for optional times.
func agePtr(t *time.Time, now time.Time) views.Age {
	if t == nil {
		return views.Age{Text: "never"}
	}
	return age(*t, now)
}

// ageCell is a table cell that shows an age and keeps it ticking.
func ageCell(t *time.Time, now time.Time) views.Cell {
	a := agePtr(t, now)
	if a.UTC == "" {
		return views.Cell{Text: a.Text}
	}
	return views.Cell{Text: a.Text, TS: a.UTC}
}

// utc formats a time for display and JSON.
func utc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// deref returns the pointed-to string, or def.
func deref(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

// truncate shortens s to n runes with an ellipsis.
func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
