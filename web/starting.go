package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/static"
	"github.com/pgconsole/console/views"
)

// StartingState is what a console that cannot serve yet is waiting for.
type StartingState struct {
	// Step says what the console is doing, after "It is": "connecting to
	// the database". Anyone who reaches the console reads it: it names no
	// address or user.
	Step string
	// Reason is the last refusal in words ("the server has no free
	// connection slot: too many clients already (SQLSTATE 53300)"); empty
	// while the first try runs.
	Reason string
	// Hint says what the operator can do about Reason; HintSQL, when set,
	// is a statement that helps, shown as code.
	Hint     string
	HintSQL  string
	Since    time.Time // when the first try failed
	Attempts int       // tries so far
	Next     time.Time // when the next try starts
}

// StartingConfig configures Starting.
type StartingConfig struct {
	Database  string               // the redacted target, as Config.Database
	Version   string               // the console's version
	StateFunc func() StartingState // read at every request; never nil
	NowFunc   func() time.Time     // the clock; nil is time.Now
}

// startingRefresh is how often the starting page reloads itself.
const startingRefresh = 5

// Starting returns the handler that answers while the console cannot serve
// yet (the database refuses connections, the schema is being checked): every
// page shows what the console waits on and why, and reloads itself; /healthz
// says the process is up, /readyz and the API say 503 with the same sentence,
// and the static assets are served so the page keeps its look. It reads
// nothing from the database and needs no sign-in: it shows only what the
// console's own log prints.
func Starting(cfg StartingConfig) http.Handler {
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		setSecurityHeaders(h, r.TLS != nil)
		st := cfg.StateFunc()
		switch path := r.URL.Path; {
		case strings.HasPrefix(path, "/static/"):
			serveStartingAsset(w, r)
		case path == "/healthz":
			startingJSON(w, http.StatusOK, map[string]any{"status": "starting", "version": cfg.Version})
		case path == "/readyz", strings.HasPrefix(path, "/api/"), r.Method != http.MethodGet && r.Method != http.MethodHead,
			strings.Contains(r.Header.Get("Accept"), "application/json"):
			h.Set("Retry-After", fmt.Sprint(startingRefresh))
			startingJSON(w, http.StatusServiceUnavailable, map[string]any{
				"status": "starting", "error": "starting", "message": startingSentence(st),
			})
		default:
			h.Set("Cache-Control", "no-store")
			// 200, not 503: a reverse proxy with error pages of its own would
			// replace the one page that says what is wrong.
			h.Set("Refresh", fmt.Sprint(startingRefresh))
			page := startingPage(st, cfg.NowFunc())
			ch := views.Chrome{
				Title: "Starting", Version: cfg.Version,
				Now: cfg.NowFunc().UTC().Format(time.RFC3339),
				CSS: static.Path("app.css"), Favicon: static.Path("favicon.svg"), Theme: themeFrom(r),
			}
			var buf bytes.Buffer
			if err := views.Bare(ch, views.StartingBody(page)).Render(r.Context(), &buf); err != nil {
				http.Error(w, startingSentence(st), http.StatusInternalServerError)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			w.Write(buf.Bytes())
		}
	})
}

// startingSentence is the one-line answer of the API while starting.
func startingSentence(st StartingState) string {
	s := "The console is starting: it is " + st.Step
	if st.Reason != "" {
		s += "; " + st.Reason
	}
	return s + ". Try again in a few seconds."
}

// startingPage maps the state to its view, with ages against now.
func startingPage(st StartingState, now time.Time) views.StartingPage {
	p := views.StartingPage{Step: st.Step, Reason: st.Reason, Hint: st.Hint, HintSQL: st.HintSQL}
	if st.Reason == "" {
		return p
	}
	p.Since = utc(st.Since) + " (" + humanize.Seconds(now.Sub(st.Since).Seconds()) + " ago)"
	p.Attempts = fmt.Sprintf("%d tries", st.Attempts)
	if st.Attempts == 1 {
		p.Attempts = "1 try"
	}
	if wait := st.Next.Sub(now); wait > 0 {
		p.Next = fmt.Sprintf("next try in %ds", int(math.Ceil(wait.Seconds())))
	} else {
		p.Next = "trying again now"
	}
	return p
}

func startingJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// serveStartingAsset serves /static/{hash}/{name} as the console does.
func serveStartingAsset(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/static/"), "/", 2)
	if len(parts) != 2 {
		http.NotFound(w, r)
		return
	}
	b, ctype, err := assetContent(parts[1])
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if parts[0] != "_" {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}
