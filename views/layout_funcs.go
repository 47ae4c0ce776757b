package views

import (
	"encoding/json"
	"strconv"
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
