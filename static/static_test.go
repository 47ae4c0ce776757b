package static

import (
	"io/fs"
	"strings"
	"testing"
)

// TestStylesheetBlocksClose: every block of app.css closes where it
// should. One missing brace (a media query left open, as a merge can leave
// it) turns every rule after it into part of that query, and the pages
// after a phone's width lose them silently; no page test notices.
func TestStylesheetBlocksClose(t *testing.T) {
	css, err := fs.ReadFile(FS(), "app.css")
	if err != nil {
		t.Fatal(err)
	}
	depth, line := 0, 1
	for i := 0; i < len(css); i++ {
		switch {
		case strings.HasPrefix(string(css[i:]), "/*"):
			end := strings.Index(string(css[i+2:]), "*/")
			if end < 0 {
				t.Fatalf("app.css:%d: a comment never closes", line)
			}
			line += strings.Count(string(css[i:i+2+end+2]), "\n")
			i += 2 + end + 1
		case css[i] == '\n':
			line++
		case css[i] == '{':
			depth++
			if depth > 2 {
				t.Fatalf("app.css:%d: a block opens inside a nested block: a brace before it is missing", line)
			}
		case css[i] == '}':
			depth--
			if depth < 0 {
				t.Fatalf("app.css:%d: a brace closes a block that was never opened", line)
			}
		}
	}
	if depth != 0 {
		t.Fatalf("app.css ends with %d block(s) still open", depth)
	}
}
