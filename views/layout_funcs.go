package views

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// csrfHeader is the hx-headers value that makes every htmx request carry the
// CSRF token.
func csrfHeader(token string) string {
	b, _ := json.Marshal(map[string]string{"X-CSRF-Token": token})
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

func alertRole(kind string) string {
	if kind == "error" {
		return "alert"
	}
	return "status"
}

// sevIcon is the shape that goes with a severity, so it never rests on colour
// alone.
func sevIcon(sev string) string {
	switch sev {
	case "critical":
		return "▲"
	case "warning":
		return "◆"
	case "ok":
		return "✓"
	}
	return "●"
}

// indent draws the tree guide of a blocking chain.
func indent(depth int) string {
	if depth <= 0 {
		return ""
	}
	s := ""
	for i := 1; i < depth; i++ {
		s += "  "
	}
	return s + "└ "
}

// tileState says a tile's state in words, so it does not rest on colour.
func tileState(state string) string {
	switch state {
	case "critical":
		return "▲ critical"
	case "warning":
		return "◆ warning"
	case "ok":
		return "✓ normal"
	}
	return "● no data"
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func orDash(s string) string { return orText(s, "—") }

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// shortcutKeys splits a shortcut into the keys pressed one after another.
func shortcutKeys(key string) []string { return strings.Fields(key) }

// hoverTime is the absolute time shown on hover next to every relative
// time: "2026-12-03 06:57:26 UTC". A value that is not RFC 3339 is shown
// as it is.
func hoverTime(rfc3339 string) string {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		return rfc3339
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}
