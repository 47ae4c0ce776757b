package actions

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/time/rate"
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

// maxRefusalActors bounds the limiter's memory: past it, the buckets start
// over (a flood of distinct actor names is already refused by auth).
const maxRefusalActors = 10000

// refusalLimiter is a token bucket per actor for audited refusals.
type refusalLimiter struct {
	mu         sync.Mutex
	rate       rate.Limit
	burst      int
	buckets    map[string]*rate.Limiter
	suppressed map[string]int
}

func newRefusalLimiter(perSecond float64, burst int) *refusalLimiter {
	return &refusalLimiter{rate: rate.Limit(perSecond), burst: burst,
		buckets: map[string]*rate.Limiter{}, suppressed: map[string]int{}}
}

// allow reports whether actor's refusal may be audited now and, if so, how
// many of its refusals were left out since the last one audited.
func (l *refusalLimiter) allow(actor string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[actor]
	if b == nil {
		if len(l.buckets) >= maxRefusalActors {
			l.buckets = map[string]*rate.Limiter{}
		}
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[actor] = b
	}
	if !b.Allow() {
		l.suppressed[actor]++
		return false, 0
	}
	suppressed = l.suppressed[actor]
	delete(l.suppressed, actor)
	return true, suppressed
}
