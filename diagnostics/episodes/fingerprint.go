package episodes

import (
	"fmt"
	"hash/fnv"
	"strings"
	"unicode"
)

// Fingerprint returns the shape of a statement, so the same statement with
// other values reads as the same: comments dropped, string and number
// literals folded to ?, whitespace collapsed and letters lowered, then
// hashed (FNV-1a, 16 hex digits). A statement whose first line is a header
// comment naming it ("-- JobClaim: ...", as the console's own SQL files
// start) is prefixed with that name ("JobClaim:9f…"), so the page can say
// which of the engine's statements waited. An empty statement has an
// empty fingerprint.
func Fingerprint(query string) string {
	name, norm := statementName(query), normalize(query)
	if norm == "" && name == "" {
		return ""
	}
	h := fnv.New64a()
	h.Write([]byte(norm))
	fp := fmt.Sprintf("%016x", h.Sum64())
	if name != "" {
		return name + ":" + fp
	}
	return fp
}

// statementName is the name in a leading "-- Name: ..." header comment,
// or "".
func statementName(query string) string {
	rest, ok := strings.CutPrefix(strings.TrimSpace(query), "--")
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, " ")
	name, _, ok := strings.Cut(rest, ":")
	if !ok || name == "" || len(name) > 64 {
		return ""
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			return ""
		}
	}
	return name
}

// normalize folds a statement to its shape (see Fingerprint).
func normalize(q string) string {
	var b strings.Builder
	space := false
	emit := func(c byte) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(c)
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			space = true
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 4
			}
			space = true
		case c == '\'':
			i++
			for i < len(q) {
				if q[i] == '\'' {
					if i+1 < len(q) && q[i+1] == '\'' {
						i += 2
						continue
					}
					break
				}
				i++
			}
			i++
			emit('?')
		case c >= '0' && c <= '9' && (b.Len() == 0 || !isWordByte(lastByte(&b)) || space):
			for i < len(q) && (q[i] >= '0' && q[i] <= '9' || q[i] == '.') {
				i++
			}
			emit('?')
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = true
			i++
		default:
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			emit(c)
			i++
		}
	}
	return b.String()
}

func lastByte(b *strings.Builder) byte {
	s := b.String()
	return s[len(s)-1]
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// statementText is the statement without its leading comment lines: the
// header of a named statement says what it does at length, and its name
// is already in the fingerprint.
// The server keeps only the first track_activity_query_size bytes (1kB by
// default) of a statement, which a long header can fill: the header's
// first line then stands for it.
func statementText(query string) string {
	s := strings.TrimSpace(query)
	first, _, _ := strings.Cut(s, "\n")
	for strings.HasPrefix(s, "--") {
		_, rest, ok := strings.Cut(s, "\n")
		if !ok {
			s = ""
			break
		}
		s = strings.TrimSpace(rest)
	}
	if s == "" {
		return first
	}
	return s
}
