package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Hash algorithms, as stored in audit_events.hash_alg.
const (
	// HashSQL marks events written before the console hashed them itself:
	// sha256 over the database's canonical text, which Verify reproduces.
	HashSQL = "sql-sha256"
	// HashSHA256 is sha256(prev_hash || canonical text), computed in Go.
	HashSHA256 = "sha256"
	// HashHMAC is HMAC-SHA256 under the audit key of the same input.
	HashHMAC = "hmac-sha256"
)

// MinKeyLength is the shortest audit key SetKey accepts.
const MinKeyLength = 32

var auditKey atomic.Pointer[[]byte]

// SetKey sets the process's audit key: events are then hashed as
// HMAC-SHA256 under it, and Verify checks them with it. Without a key (nil)
// events are plain sha256, which anyone who can write the table can
// recompute: anchor the chain with the head `console audit verify` prints
// instead. The key must never be stored in the database; keep it in a file
// or the environment of the processes that write and verify the trail.
func SetKey(key []byte) error {
	if key == nil {
		auditKey.Store(nil)
		return nil
	}
	if len(key) < MinKeyLength {
		return fmt.Errorf("the audit key is %d bytes; use at least %d (for example: head -c 32 /dev/urandom | base64): %w",
			len(key), MinKeyLength, ErrInvalid)
	}
	k := append([]byte(nil), key...)
	auditKey.Store(&k)
	return nil
}

func currentKey() []byte {
	if k := auditKey.Load(); k != nil {
		return *k
	}
	return nil
}

// Head is a position in the chain: an event's sequence number and hash.
// The newest event's is the chain head; an operator who writes it down
// somewhere the database's owner cannot reach can later prove that nothing
// up to it was rewritten (Verify's ExpectHead).
type Head struct {
	Seq  int64  `json:"seq"`
	Hash []byte `json:"hash"`
}

// String renders h as SEQ:HEX, the form ParseHead reads.
func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Seq, hex.EncodeToString(h.Hash)) }

// ParseHead reads SEQ:HEX (as printed by `console audit verify`).
func ParseHead(s string) (Head, error) {
	seqText, hashText, ok := strings.Cut(strings.TrimSpace(s), ":")
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if !ok || err != nil || seq < 1 {
		return Head{}, fmt.Errorf("head %q: expected SEQ:HASH as printed by `console audit verify`, e.g. 42:9f86d0…: %w", s, ErrInvalid)
	}
	h, err := hex.DecodeString(hashText)
	if err != nil || len(h) != sha256.Size {
		return Head{}, fmt.Errorf("head %q: the hash must be %d hex digits: %w", s, 2*sha256.Size, ErrInvalid)
	}
	return Head{Seq: seq, Hash: h}, nil
}

// Recorded is what RecordTx wrote: the event's id and the chain head as of
// that event.
type Recorded struct {
	ID   int64
	Head Head
}

// LogAttrs returns the log fields audit_seq and audit_head of r, or none
// for the zero Recorded, so an action's log line carries the chain head it
// moved the trail to: copied off the machine, those lines anchor the trail
// the way `console audit verify --expect-head` checks.
func (r Recorded) LogAttrs() []slog.Attr {
	if r.ID == 0 {
		return nil
	}
	return []slog.Attr{slog.Int64("audit_seq", r.Head.Seq), slog.String("audit_head", hex.EncodeToString(r.Head.Hash))}
}

// chainEvent is an event as hashed: its stored fields, with the JSON
// documents in the text form the database renders them in.
type chainEvent struct {
	ID, Seq                 int64
	At                      time.Time
	Actor, Role, Action     string
	Target                  string
	Params, Preview, Result string
	Reason, Outcome, Error  string
	IncidentID              *int64
	PrevHash, Hash          []byte
	Alg                     string
}

// canonical is the text the console hashes (HashSHA256 and HashHMAC): a
// JSON object with a fixed field order, the JSON documents compacted.
func (e chainEvent) canonical() ([]byte, error) {
	return json.Marshal(struct {
		V          int             `json:"v"`
		ID         int64           `json:"id"`
		Seq        int64           `json:"seq"`
		At         string          `json:"at"`
		Actor      string          `json:"actor"`
		Role       string          `json:"role"`
		Action     string          `json:"action"`
		Target     string          `json:"target"`
		Params     json.RawMessage `json:"params"`
		Reason     string          `json:"reason"`
		Preview    json.RawMessage `json:"preview"`
		Result     json.RawMessage `json:"result"`
		Outcome    string          `json:"outcome"`
		Error      string          `json:"error"`
		IncidentID *int64          `json:"incident_id"`
	}{2, e.ID, e.Seq, stampUS(e.At), e.Actor, e.Role, e.Action, e.Target, json.RawMessage(e.Params), e.Reason,
		json.RawMessage(e.Preview), json.RawMessage(e.Result), e.Outcome, e.Error, e.IncidentID})
}

// canonicalSQL reproduces, byte for byte, the text the pre-005 trigger
// hashed: audit_event_canonical(), a jsonb object rendered by PostgreSQL
// (keys ordered by length, then bytes; ", " and ": " separators).
func (e chainEvent) canonicalSQL() []byte {
	var b strings.Builder
	str := func(k, v string) { b.WriteString(pgJSONString(k) + ": " + pgJSONString(v)) }
	num := func(k string, v int64) { b.WriteString(pgJSONString(k) + ": " + strconv.FormatInt(v, 10)) }
	raw := func(k, v string) { b.WriteString(pgJSONString(k) + ": " + v) }
	sep := func() { b.WriteString(", ") }
	b.WriteString("{")
	str("at", stampUS(e.At))
	sep()
	num("id", e.ID)
	sep()
	num("seq", e.Seq)
	sep()
	str("role", e.Role)
	sep()
	str("actor", e.Actor)
	sep()
	str("error", e.Error)
	sep()
	str("action", e.Action)
	sep()
	raw("params", e.Params)
	sep()
	str("reason", e.Reason)
	sep()
	raw("result", e.Result)
	sep()
	str("target", e.Target)
	sep()
	str("outcome", e.Outcome)
	sep()
	raw("preview", e.Preview)
	sep()
	if e.IncidentID == nil {
		raw("incident_id", "null")
	} else {
		num("incident_id", *e.IncidentID)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// pgJSONString quotes s as PostgreSQL's escape_json does.
func pgJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < ' ' {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func stampUS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// errNoKey means an event is keyed and Verify was given no key.
var errNoKey = errors.New("no audit key")

// expectedHash is the hash e should carry under its algorithm.
func (e chainEvent) expectedHash(key []byte) ([]byte, error) {
	var h hash.Hash
	var text []byte
	switch e.Alg {
	case HashSQL:
		h, text = sha256.New(), e.canonicalSQL()
	case HashSHA256, HashHMAC:
		if e.Alg == HashHMAC {
			if key == nil {
				return nil, errNoKey
			}
			h = hmac.New(sha256.New, key)
		} else {
			h = sha256.New()
		}
		var err error
		if text, err = e.canonical(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown hash algorithm %q", e.Alg)
	}
	h.Write(e.PrevHash)
	h.Write(text)
	return h.Sum(nil), nil
}
