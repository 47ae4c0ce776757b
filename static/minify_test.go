package static

import (
	"io/fs"
	"strings"
	"testing"
)

// TestAssetsMinify: the stylesheet and the scripts are served minified
// (smaller, still holding their rules and functions), htmx and the icon as
// embedded, and each URL's hash is the served content's.
func TestAssetsMinify(t *testing.T) {
	for name, keep := range map[string]string{"app.css": ":root", "app.js": "addEventListener"} {
		src, err := fs.ReadFile(FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Content(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) >= len(src)*9/10 {
			t.Errorf("%s is served at %d bytes of %d: not minified", name, len(got), len(src))
		}
		if !strings.Contains(string(got), keep) {
			t.Errorf("%s lost %q in minifying", name, keep)
		}
	}
	for _, name := range []string{HTMX, "favicon.svg"} {
		src, _ := fs.ReadFile(FS(), name)
		got, err := Content(name)
		if err != nil || string(got) != string(src) {
			t.Errorf("%s is served as embedded (err %v)", name, err)
		}
	}
	if _, err := Content("nope.js"); err == nil {
		t.Error("an unknown asset is not found")
	}
	a, b := Path("app.css"), Path("app.js")
	if a == b || !strings.HasPrefix(a, "/static/") || strings.Contains(a, "/_/") {
		t.Errorf("hashed paths: %s %s", a, b)
	}
}
