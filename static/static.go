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
	"sync"
)

//go:embed *.js *.css *.svg
var files embed.FS

// FS is the embedded asset tree.
func FS() fs.FS { return files }

var (
	hashOnce sync.Once
	hashes   map[string]string
)

// Path returns the URL of an asset with a content hash in it, so responses can
// be cached as immutable and a new binary still serves new content. An unknown
// name returns the plain path (and a 404 when requested).
func Path(name string) string {
	hashOnce.Do(func() {
		hashes = map[string]string{}
		entries, _ := fs.ReadDir(files, ".")
		for _, e := range entries {
			b, err := fs.ReadFile(files, e.Name())
			if err != nil {
				continue
			}
			sum := sha256.Sum256(b)
			hashes[e.Name()] = hex.EncodeToString(sum[:6])
		}
	})
	if h, ok := hashes[name]; ok {
		return "/static/" + h + "/" + name
	}
	return "/static/_/" + name
}

// HTMX is the file name of the vendored htmx build.
const HTMX = "htmx-2.0.11.min.js"
