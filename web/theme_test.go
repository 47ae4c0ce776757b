package web

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

var htmlTagRE = regexp.MustCompile(`<html[^>]*>`)

// TestThemeCookieRendersTheTheme: the toggle's cookie, "dark" or "light",
// is rendered as <html data-theme> on a signed-in page and on the sign-in
// page, so the first paint has it without a script; no cookie or any other
// value renders none (the system's), and no page loads a theme script.
func TestThemeCookieRendersTheTheme(t *testing.T) {
	t.Parallel()
	e := setup(t)
	base, err := url.Parse(e.http.URL)
	require.NoError(t, err)
	viewer := e.signedIn(t, "viewer")
	anonymous := e.client(t)
	for _, tc := range []struct{ cookie, want string }{
		{"dark", `data-theme="dark"`},
		{"light", `data-theme="light"`},
		{"", ""},
		{"system", ""},
		{"Dark", ""},
		{"purple", ""},
		{"dark%22%20onload%3D%22x", ""},
	} {
		for _, page := range []struct {
			c    *client
			path string
		}{{viewer, "/audit"}, {anonymous, "/login"}} {
			if tc.cookie == "" {
				page.c.hc.Jar.SetCookies(base, []*http.Cookie{{Name: themeCookie, Value: "", MaxAge: -1}})
			} else {
				page.c.hc.Jar.SetCookies(base, []*http.Cookie{{Name: themeCookie, Value: tc.cookie}})
			}
			body := page.c.page(page.path)
			tag := htmlTagRE.FindString(body)
			require.NotEmpty(t, tag, "%s: no <html> tag", page.path)
			if tc.want == "" {
				require.NotContains(t, tag, "data-theme", "%s with the cookie %q follows the system", page.path, tc.cookie)
			} else {
				require.Contains(t, tag, tc.want, "%s with the cookie %q", page.path, tc.cookie)
			}
			require.NotContains(t, body, "theme.js", page.path)
		}
	}
	require.Contains(t, htmlTagRE.FindString(viewer.page("/audit")), `class="fold-pending"`,
		"a page with filters starts fold-pending, which app.js takes off")
}

func TestThemeFrom(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{"dark": "dark", "light": "light", "system": "", "": "", "DARK": "", "purple": ""} {
		r, err := http.NewRequest(http.MethodGet, "/", nil)
		require.NoError(t, err)
		r.Header.Set("Cookie", themeCookie+"="+value)
		require.Equal(t, want, themeFrom(r), "cookie %q", value)
	}
	r, err := http.NewRequest(http.MethodGet, "/", nil)
	require.NoError(t, err)
	require.Equal(t, "", themeFrom(r), "no cookie")
}
