package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/pgconsole/console/audit"
)

// maxRefusalParams is the most of a refused attempt's params the audit
// trail keeps verbatim; longer (or unstorable) params are kept as a digest.
const maxRefusalParams = 2048

// refusalExcerpt is how much of oversized params a digest shows.
const refusalExcerpt = 256

// refusalParams is what the audit trail stores of a refused or failed
// attempt's params: the params themselves when they are small, clean JSON,
// otherwise their size, SHA-256 and a cleaned excerpt, so a viewer posting
// megabytes cannot grow the audit table by more than a small row.
func refusalParams(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) <= maxRefusalParams && storableJSON(raw) {
		return raw
	}
	sum := sha256.Sum256(raw)
	excerpt := raw
	if len(excerpt) > refusalExcerpt {
		excerpt = excerpt[:refusalExcerpt]
	}
	b, _ := json.Marshal(map[string]any{
		"digest":  "sha256:" + hex.EncodeToString(sum[:]),
		"bytes":   len(raw),
		"excerpt": cleanText(string(excerpt)),
	})
	return b
}

// storableJSON reports whether raw is a JSON object PostgreSQL's jsonb takes.
func storableJSON(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw) && checkText("params", raw) == nil
}

// cleanText makes s storable as PostgreSQL text: invalid UTF-8 and NUL
// characters become U+FFFD.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// maxLoggedText bounds each text field of a run's log line: a target,
// reason or refusal quoting what a client sent is cut there, so no attempt
// writes an unbounded log line (the audit row keeps what it may).
const maxLoggedText = 512

// clipLogAttrs cuts each string attribute to maxLoggedText bytes, on a rune
// boundary, marking the cut.
func clipLogAttrs(attrs []slog.Attr) []slog.Attr {
	for i, a := range attrs {
		if v := a.Value; v.Kind() == slog.KindString && len(v.String()) > maxLoggedText {
			s := v.String()
			cut := maxLoggedText
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			attrs[i].Value = slog.StringValue(s[:cut] + "…")
		}
	}
	return attrs
}

// maxRefusalFolds bounds the folder's memory: past it, a refusal of a new
// kind is audited at once, unfolded.
const maxRefusalFolds = 10000

// refusalKind is what folds refused attempts together: one actor, one
// action and one kind of reason (the sentinel error the refusal wraps, or
// "failed").
type refusalKind struct{ actor, action, reason string }

// refusalKindOf is the kind of ev, refused or failed with err.
func refusalKindOf(ev audit.Event, err error) refusalKind {
	reason := "failed"
	for _, s := range []struct {
		err  error
		name string
	}{{ErrForbidden, "forbidden"}, {ErrReasonRequired, "reason_required"}, {ErrInvalid, "invalid"},
		{ErrStale, "stale"}, {ErrGuard, "guard"}, {ErrNotFound, "not_found"}} {
		if errors.Is(err, s.err) {
			reason = s.name
			break
		}
	}
	return refusalKind{actor: ev.Actor, action: ev.Action, reason: reason}
}

// refusalFold is one kind's window: it began with an audited refusal at
// start; count refusals came since, the last of them ev.
type refusalFold struct {
	start, first, last time.Time
	count              int
	ev                 audit.Event
	timer              *time.Timer
}

// refusalFolder folds repeated refusals so a client looping on a refused
// request cannot fill the audit table: the first refusal of a kind is
// audited at once and opens a window; the refusals of that kind within
// the window are only counted, and one row says how many there were when
// the window ends (or at the kind's next refusal after it, or at flush).
// A negative window audits every refusal.
type refusalFolder struct {
	window time.Duration
	// write records a folded window's row; it is called without mu held,
	// from a refusal, a window's timer or flush.
	write func(ctx context.Context, ev audit.Event)

	mu    sync.Mutex
	folds map[refusalKind]*refusalFold
}

func newRefusalFolder(window time.Duration, write func(context.Context, audit.Event)) *refusalFolder {
	return &refusalFolder{window: window, write: write, folds: map[refusalKind]*refusalFold{}}
}

// fold notes a refusal of kind k, whose audit row would be ev, at now. It
// reports whether to audit ev now and returns the row of the kind's ended
// window, if one is pending, to write before it.
func (f *refusalFolder) fold(k refusalKind, ev audit.Event, now time.Time) (auditNow bool, ended *audit.Event) {
	if f.window < 0 {
		return true, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.folds[k]; fd != nil {
		if now.Sub(fd.start) < f.window {
			if fd.count == 0 {
				fd.first = now
				fd.timer = time.AfterFunc(fd.start.Add(f.window).Sub(now), func() { f.end(k, fd) })
			}
			fd.count++
			fd.last, fd.ev = now, ev
			return false, nil
		}
		ended = f.takeLocked(k, fd)
	}
	if len(f.folds) >= maxRefusalFolds {
		return true, ended
	}
	f.folds[k] = &refusalFold{start: now}
	return true, ended
}

// end writes fd's row when its window ends without a refusal of its kind
// after it.
func (f *refusalFolder) end(k refusalKind, fd *refusalFold) {
	f.mu.Lock()
	ev := f.takeLocked(k, fd)
	f.mu.Unlock()
	if ev != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.write(ctx, *ev)
	}
}

// takeLocked removes fd (if it is still k's window) and returns the row
// of its folded refusals, nil when there were none.
func (f *refusalFolder) takeLocked(k refusalKind, fd *refusalFold) *audit.Event {
	if f.folds[k] != fd {
		return nil
	}
	delete(f.folds, k)
	if fd.timer != nil {
		fd.timer.Stop()
	}
	if fd.count == 0 {
		return nil
	}
	ev := fd.ev
	ev.Error = fmt.Sprintf("%d more refusals (%s) of %s by %s from %s to %s, folded into this row; the last: %s",
		fd.count, k.reason, k.action, k.actor, fd.first.UTC().Format(time.RFC3339), fd.last.UTC().Format(time.RFC3339), ev.Error)
	ev.Result, _ = json.Marshal(map[string]any{"folded_refusals": fd.count, "reason": k.reason,
		"first_at": fd.first.UTC(), "last_at": fd.last.UTC()})
	return &ev
}

// flush writes the rows of every window with folded refusals now, ended
// or not (at shutdown).
func (f *refusalFolder) flush(ctx context.Context) {
	f.mu.Lock()
	var rows []audit.Event
	for k, fd := range f.folds {
		if ev := f.takeLocked(k, fd); ev != nil {
			rows = append(rows, *ev)
		}
	}
	f.mu.Unlock()
	for _, ev := range rows {
		f.write(ctx, ev)
	}
}
