package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// VerifyResult is the outcome of checking the whole chain. OK is true when
// every event's hash is the hash of its contents and its predecessor, the
// sequence has no gaps and the chain head names the last event. Otherwise
// BrokenAt is the id of the first event that does not fit (nil when the break
// is after the last event, such as a deleted tail) and Reason says why.
type VerifyResult struct {
	Checked  int    `json:"checked"`
	OK       bool   `json:"ok"`
	BrokenAt *int64 `json:"broken_at,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// chainRow is one row of verify.sql.
type chainRow struct {
	Seq, ID                  int64
	PrevHash, Hash, Expected []byte
}

// Verify walks the chain in seq order and recomputes every hash as
// sha256(prev_hash || canonical text). It detects an edited row (its hash no
// longer matches), a deleted row (a seq gap and a prev_hash that names
// nothing), an inserted or reordered row, and a removed tail (the head is
// ahead of the last row). The error is for a failure to read; a broken chain
// is a result with OK false. It reads the table in one streaming query, in a
// REPEATABLE READ snapshot when db is a pool or connection, so rows committed
// during the walk do not confuse it.
func Verify(ctx context.Context, db DBTX) (VerifyResult, error) {
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
	var headSeq int64
	var headHash []byte
	if err := db.QueryRow(ctx, sqlText("verify_head")).Scan(&headSeq, &headHash); err != nil {
		return VerifyResult{}, fmt.Errorf("read audit chain head: %w", err)
	}
	rows, err := db.Query(ctx, sqlText("verify"))
	if err != nil {
		return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
	}
	defer rows.Close()
	var res VerifyResult
	var lastSeq int64
	lastHash := []byte{}
	broken := func(id int64, format string, args ...any) {
		res.BrokenAt = &id
		res.Reason = fmt.Sprintf(format, args...)
	}
	for rows.Next() {
		var r chainRow
		if err := rows.Scan(&r.Seq, &r.ID, &r.PrevHash, &r.Hash, &r.Expected); err != nil {
			return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
		}
		res.Checked++
		switch {
		case r.Seq != lastSeq+1:
			broken(r.ID, "event %d has seq %d after seq %d: events are missing", r.ID, r.Seq, lastSeq)
		case !bytes.Equal(r.PrevHash, lastHash):
			broken(r.ID, "event %d (seq %d) does not follow the event before it: prev_hash differs", r.ID, r.Seq)
		case !bytes.Equal(r.Hash, r.Expected):
			broken(r.ID, "event %d (seq %d) was changed after it was written: its hash does not match its contents", r.ID, r.Seq)
		}
		if res.BrokenAt != nil {
			return res, nil
		}
		lastSeq, lastHash = r.Seq, r.Hash
	}
	if err := rows.Err(); err != nil {
		return VerifyResult{}, fmt.Errorf("verify audit chain: %w", err)
	}
	if headSeq != lastSeq || !bytes.Equal(headHash, lastHash) {
		res.Reason = fmt.Sprintf("the chain head is at seq %d but the last event is seq %d: events at the end were removed or the head was changed", headSeq, lastSeq)
		return res, nil
	}
	res.OK = true
	return res, nil
}

// ErrChainBroken is returned by VerifyErr when the chain does not verify; the
// command-line check exits non-zero on it.
var ErrChainBroken = errors.New("audit chain broken")

// VerifyErr runs Verify and turns a broken chain into an error wrapping
// ErrChainBroken with the reason, for callers that only need pass or fail.
func VerifyErr(ctx context.Context, db DBTX) (VerifyResult, error) {
	res, err := Verify(ctx, db)
	if err != nil {
		return res, err
	}
	if !res.OK {
		return res, fmt.Errorf("%w after %d events: %s", ErrChainBroken, res.Checked, res.Reason)
	}
	return res, nil
}
