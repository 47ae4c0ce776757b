// Package static holds the console's vendored front-end assets (htmx at a
// pinned version, the stylesheet and the small script for keyboard shortcuts
// and local times), embedded in the binary. Nothing is loaded from a CDN:
// consoles run in closed networks.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"path"
	"sync"

	"github.com/tdewolff/minify/v2"
	"github.com/tdewolff/minify/v2/css"
	"github.com/tdewolff/minify/v2/js"
)

//go:embed *.js *.css *.svg
var files embed.FS

// FS is the embedded asset tree.
func FS() fs.FS { return files }

var (
	servedOnce sync.Once
	served     map[string][]byte // what /static serves: the CSS and JS minified
	hashes     map[string]string
)

// load minifies the stylesheet and the scripts once (htmx ships minified,
// the SVG as written) and hashes what is served.
func load() {
	servedOnce.Do(func() {
		served, hashes = map[string][]byte{}, map[string]string{}
		m := minify.New()
		m.AddFunc("text/css", css.Minify)
		m.AddFunc("text/javascript", js.Minify)
		entries, _ := fs.ReadDir(files, ".")
		for _, e := range entries {
			b, err := fs.ReadFile(files, e.Name())
			if err != nil {
				continue
			}
			if kind := mediaType(e.Name()); kind != "" && e.Name() != HTMX {
				// The embedded files are tested to minify (TestAssetsMinify);
				// on an error the file is served as written.
				if small, err := m.Bytes(kind, b); err == nil {
					b = small
				}
			}
			served[e.Name()] = b
			sum := sha256.Sum256(b)
			hashes[e.Name()] = hex.EncodeToString(sum[:6])
		}
	})
}

func mediaType(name string) string {
	switch path.Ext(name) {
	case ".css":
		return "text/css"
	case ".js":
		return "text/javascript"
	}
	return ""
}

// Content returns the bytes /static serves for an asset: the stylesheet
// and the scripts minified, the rest as embedded. An unknown name is
// fs.ErrNotExist.
func Content(name string) ([]byte, error) {
	load()
	b, ok := served[name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

// Path returns the URL of an asset with a hash of its served content in it,
// so responses can be cached as immutable and a new binary still serves new
// content. An unknown name returns the plain path (and a 404 when
// requested).
func Path(name string) string {
	load()
	if h, ok := hashes[name]; ok {
		return "/static/" + h + "/" + name
	}
	return "/static/_/" + name
}

// HTMX is the file name of the vendored htmx build.
const HTMX = "htmx-2.0.11.min.js"
