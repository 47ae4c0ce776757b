package actions

import (
	"strconv"
	"time"

	"github.com/pgconsole/console/internal/humanize"
)

// The helpers below write the one-sentence summaries of previews and
// results (each plan's sentence and done methods): numbers with thousands
// separators, nouns that agree with them, names in backquotes.

// counted is n and the noun that agrees with it: "1 dead job", "27 dead
// jobs".
func counted[T int | int32 | int64](n T, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return humanize.Int(n) + " " + many
}

// code puts a name in backquotes, which the console shows as code.
func code(s string) string { return "`" + s + "`" }

// limitText is a limit as a sentence says it.
func limitText[T int | float64](v *T) string {
	if v == nil {
		return "no limit"
	}
	switch x := any(*v).(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64) + "/s"
	case int:
		return humanize.Int(x)
	}
	return ""
}

// when is a time as a sentence says it, in UTC to the minute.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
