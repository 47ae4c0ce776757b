package views

import (
	"sort"
	"strings"
)

// glossary explains, in a sentence, the PostgreSQL and engine words the
// incident path shows as they are: lock modes, lock targets, xmin age,
// the lease generation and what "safe" promises. Every page that renders
// one of them in running text or a table cell wraps it in a Term (hover,
// focus and tap show the sentence), so the explanation is written once.
var glossary = map[string]string{
	"AccessShareLock":          "Lock mode taken by a plain SELECT. Only ACCESS EXCLUSIVE (DROP, most ALTER TABLE, VACUUM FULL) conflicts with it.",
	"RowShareLock":             "Lock mode taken by SELECT … FOR UPDATE/SHARE on the table. Conflicts only with EXCLUSIVE and ACCESS EXCLUSIVE.",
	"RowExclusiveLock":         "Lock mode taken by INSERT, UPDATE and DELETE on the table. Writers do not block each other at this level; DDL and explicit SHARE locks do.",
	"ShareUpdateExclusiveLock": "Lock mode taken by VACUUM, ANALYZE and CREATE INDEX CONCURRENTLY. Two of them conflict, so a second VACUUM waits.",
	"ShareLock":                "Lock mode taken by CREATE INDEX, and by a session waiting for another transaction to finish (on its transactionid). Blocks writers.",
	"ShareRowExclusiveLock":    "Lock mode taken by CREATE TRIGGER and some ALTER TABLE forms. Blocks writers and other SHARE ROW EXCLUSIVE holders.",
	"ExclusiveLock":            "Lock mode that lets only readers through; a transaction also holds it on its own transactionid until it ends.",
	"AccessExclusiveLock":      "The strongest lock mode (DROP, TRUNCATE, most ALTER TABLE, VACUUM FULL): nothing, not even a SELECT, gets past it.",
	"transactionid":            "Lock target: another transaction. A session waits on it until that transaction commits or rolls back, usually because both touched the same row.",
	"relation":                 "Lock target: a whole table or index.",
	"tuple":                    "Lock target: one row version. Sessions queue on it when several want the same row at once.",
	"xmin age":                 "How many transactions ago the oldest snapshot still needed was taken. While it grows, VACUUM cannot remove dead rows, and at about 2 billion the server stops writes.",
	"lease generation":         "A counter bumped by every claim of the job. A worker must present it to finish the job, so a worker whose lease was taken over cannot ack it twice.",
	"safe":                     "This step only reads: its queries are read-only, bounded by a statement timeout, and take no lock that would block the application.",
}

// glossaryWords are the glossary's words, longest first, so "xmin age"
// wins over a shorter word at the same place.
var glossaryWords = func() []string {
	w := make([]string, 0, len(glossary))
	for k := range glossary {
		w = append(w, k)
	}
	sort.Slice(w, func(i, j int) bool { return len(w[i]) > len(w[j]) || len(w[i]) == len(w[j]) && w[i] < w[j] })
	return w
}()

// TextPart is a piece of text; Explain is set when it is a glossary word.
type TextPart struct {
	Text    string
	Explain string
}

// Explain looks a word up in the glossary ("" when it is not there).
func Explain(word string) string { return glossary[word] }

// Terms splits s into plain text and glossary words, each word matched
// whole (not inside a longer word: "relation" in "relations" stays text).
func Terms(s string) []TextPart {
	var out []TextPart
	plain := 0
	for i := 0; i < len(s); {
		if i > 0 && isWordByte(s[i-1]) {
			i++
			continue
		}
		hit := ""
		for _, w := range glossaryWords {
			if strings.HasPrefix(s[i:], w) && (i+len(w) == len(s) || !isWordByte(s[i+len(w)])) {
				hit = w
				break
			}
		}
		if hit == "" {
			i++
			continue
		}
		if plain < i {
			out = append(out, TextPart{Text: s[plain:i]})
		}
		out = append(out, TextPart{Text: hit, Explain: glossary[hit]})
		i += len(hit)
		plain = i
	}
	if plain < len(s) {
		out = append(out, TextPart{Text: s[plain:]})
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// EvidenceShown splits a finding's evidence into what a person reads first
// and the check that measured it: the evidence starts with the check's
// name ("dead_letters: 20 dead in emails…"), which the page shows small,
// after the words, next to the code.
func (f FindingRow) EvidenceShown() (text, check string) {
	name, rest, ok := strings.Cut(f.Evidence, ": ")
	if !ok || name == "" || strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz_0123456789") != "" {
		return f.Evidence, ""
	}
	return rest, name
}

func evidenceText(f FindingRow) string  { t, _ := f.EvidenceShown(); return t }
func evidenceCheck(f FindingRow) string { _, c := f.EvidenceShown(); return c }
