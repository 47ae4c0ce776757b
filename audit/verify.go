package audit

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// VerifyResult is the outcome of checking the whole chain. OK is true when
// every event's hash, recomputed here, is the hash of its contents and its
// predecessor, the sequence has no gaps, the chain head names the last
// event, and the expected head (if given) is in the chain. Otherwise
// BrokenAt is the id of the first event that does not fit (nil when the
// break is after the last event, such as a deleted tail) and Reason says
// why. Head is the last event checked; Keyed counts events hashed under the
// audit key, Unkeyed those hashed without one (anyone who can write the
// table can recompute those: anchor them with an expected head).
type VerifyResult struct {
	Checked  int    `json:"checked"`
	OK       bool   `json:"ok"`
	BrokenAt *int64 `json:"broken_at,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Head     Head   `json:"head"`
	Keyed    int    `json:"keyed"`
	Unkeyed  int    `json:"unkeyed"`
}

// VerifyOpts adds checks to Verify; nil is fine.
type VerifyOpts struct {
	// ExpectHead, when set, is a head written down earlier (SEQ:HASH from
	// `console audit verify` or an action's log line): the event at that
	// seq must still exist and carry that hash. Nothing up to it can then
	// have been rewritten, even by someone who recomputed every hash.
	ExpectHead *Head
	// KeyedFrom, when positive, is the first seq written with the audit
	// key: every event from it on must be keyed. Without it an event
	// relabelled as unkeyed and rehashed passes, since anyone can compute
	// an unkeyed hash.
	KeyedFrom int64
}

// ErrNoKey means the trail holds events hashed under an audit key and
// Verify was not given it (SetKey).
var ErrNoKey = errors.New("the audit trail is keyed (HMAC) and no audit key is set")

// Verify walks the chain in seq order and recomputes every hash in Go, as
// HashSQL, HashSHA256 or HashHMAC (with the key given to SetKey) says. It
// detects an edited row (its hash no longer matches), a deleted row (a seq
// gap and a prev_hash that names nothing), an inserted or reordered row, a
// removed tail (the head is ahead of the last row), and an unkeyed event
// after a keyed one (a downgrade). The database's own arithmetic is never
// trusted. The error is for a failure to read, or ErrNoKey; a broken chain is
// a result with OK false. It reads the table in one streaming query, in a
// REPEATABLE READ snapshot when db is a pool or connection, so rows committed
// during the walk do not confuse it.
func Verify(ctx context.Context, db DBTX) (VerifyResult, error) {
	return VerifyWith(ctx, db, nil)
}

// VerifyWith is Verify with the extra checks of o.
func VerifyWith(ctx context.Context, db DBTX, o *VerifyOpts) (VerifyResult, error) {
	if o == nil {
		o = &VerifyOpts{}
	}
	if b, ok := db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		tx, err := b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
		}
		defer tx.Rollback(ctx)
		db = tx
	}
	head, err := HeadGet(ctx, db)
	if err != nil {
		return VerifyResult{}, err
	}
	rows, err := db.Query(ctx, sqlText("verify"))
	if err != nil {
		return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
	}
	defer rows.Close()
	key := currentKey()
	var res VerifyResult
	lastHash := []byte{}
	expectSeen := false
	broken := func(id int64, format string, args ...any) {
		res.BrokenAt = &id
		res.Reason = fmt.Sprintf(format, args...)
	}
	for rows.Next() {
		var r chainEvent
		if err := rows.Scan(&r.Seq, &r.ID, &r.At, &r.Actor, &r.Role, &r.Action, &r.Target, &r.Params, &r.Reason,
			&r.Preview, &r.Result, &r.Outcome, &r.Error, &r.IncidentID, &r.PrevHash, &r.Hash, &r.Alg); err != nil {
			return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
		}
		res.Checked++
		want, herr := r.expectedHash(key)
		if errors.Is(herr, errNoKey) {
			return VerifyResult{}, fmt.Errorf("event %d (seq %d): %w; give the key the console writes with (CONSOLE_AUDIT_KEY or CONSOLE_AUDIT_KEY_FILE)", r.ID, r.Seq, ErrNoKey)
		}
		switch {
		case herr != nil:
			broken(r.ID, "event %d (seq %d) cannot be checked: %v", r.ID, r.Seq, herr)
		case r.Seq != res.Head.Seq+1:
			broken(r.ID, "event %d has seq %d after seq %d: events are missing", r.ID, r.Seq, res.Head.Seq)
		case !bytes.Equal(r.PrevHash, lastHash):
			broken(r.ID, "event %d (seq %d) does not follow the event before it: prev_hash differs", r.ID, r.Seq)
		case !bytes.Equal(r.Hash, want):
			broken(r.ID, "event %d (seq %d) was changed after it was written: its hash does not match its contents", r.ID, r.Seq)
		case r.Alg != HashHMAC && o.KeyedFrom > 0 && r.Seq >= o.KeyedFrom:
			broken(r.ID, "event %d (seq %d) is not keyed but every event from seq %d must be: the trail was rehashed without the key", r.ID, r.Seq, o.KeyedFrom)
		case r.Alg != HashHMAC && res.Keyed > 0:
			broken(r.ID, "event %d (seq %d) is not keyed but follows keyed events: the trail was rehashed without the key", r.ID, r.Seq)
		case o.ExpectHead != nil && r.Seq == o.ExpectHead.Seq && !bytes.Equal(r.Hash, o.ExpectHead.Hash):
			broken(r.ID, "event %d (seq %d) has hash %s, not the expected %s: the trail up to it was rewritten",
				r.ID, r.Seq, hex.EncodeToString(r.Hash), hex.EncodeToString(o.ExpectHead.Hash))
		}
		if res.BrokenAt != nil {
			return res, nil
		}
		if r.Alg == HashHMAC {
			res.Keyed++
		} else {
			res.Unkeyed++
		}
		if o.ExpectHead != nil && r.Seq == o.ExpectHead.Seq {
			expectSeen = true
		}
		lastHash = r.Hash
		res.Head = Head{Seq: r.Seq, Hash: r.Hash}
	}
	if err := rows.Err(); err != nil {
		return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
	}
	if head.Seq != res.Head.Seq || !bytes.Equal(head.Hash, lastHash) {
		res.Reason = fmt.Sprintf("the chain head is at seq %d but the last event is seq %d: events at the end were removed or the head was changed", head.Seq, res.Head.Seq)
		return res, nil
	}
	if o.ExpectHead != nil && !expectSeen {
		res.Reason = fmt.Sprintf("the expected head seq %d is past the last event (seq %d): events at the end were removed", o.ExpectHead.Seq, res.Head.Seq)
		return res, nil
	}
	res.OK = true
	return res, nil
}

// HeadGet returns the chain head: the seq and hash of the newest event, as
// the chain trigger last moved it (seq 0 and an empty hash for an empty
// trail).
func HeadGet(ctx context.Context, db DBTX) (Head, error) {
	var h Head
	if err := db.QueryRow(ctx, sqlText("head_get")).Scan(&h.Seq, &h.Hash); err != nil {
		return Head{}, fmt.Errorf("read audit chain head: %w", err)
	}
	return h, nil
}

// ErrChainBroken is returned by VerifyErr when the chain does not verify; the
// command-line check exits non-zero on it.
var ErrChainBroken = errors.New("audit chain broken")

// VerifyErr runs VerifyWith and turns a broken chain into an error wrapping
// ErrChainBroken with the reason, for callers that only need pass or fail.
func VerifyErr(ctx context.Context, db DBTX, o *VerifyOpts) (VerifyResult, error) {
	res, err := VerifyWith(ctx, db, o)
	if err != nil {
		return res, err
	}
	if !res.OK {
		return res, fmt.Errorf("%w after %d events: %s", ErrChainBroken, res.Checked, res.Reason)
	}
	return res, nil
}
