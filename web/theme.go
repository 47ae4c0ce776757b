package web

import "net/http"

// themeCookie keeps the theme chosen with the top bar's toggle (app.js
// writes it): "dark" or "light"; none follows the system's. The server
// renders it as <html data-theme>, so a dark choice is dark from the first
// paint without a script that blocks it.
const themeCookie = "console-theme"

// themeFrom returns the theme r's cookie asks for, "dark" or "light", or ""
// (the system's) for no cookie or any other value.
func themeFrom(r *http.Request) string {
	ck, err := r.Cookie(themeCookie)
	if err != nil {
		return ""
	}
	switch ck.Value {
	case "dark", "light":
		return ck.Value
	}
	return ""
}
