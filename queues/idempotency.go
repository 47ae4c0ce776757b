package queues

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/internal/sqlset"
)

var (
	// ErrIdempotencyConflict reports a key reused with a different request
	// (another hash): the client has a bug or a key collision, and nothing
	// was done. HTTP maps it to 422.
	ErrIdempotencyConflict = errors.New("idempotency key was already used with a different request")
	// ErrIdempotencyInProgress reports that a request with the same key is
	// still running: retry later with the same key. HTTP maps it to 409.
	ErrIdempotencyInProgress = errors.New("a request with this idempotency key is still in progress")
)

// IdempotencyResult is what the first run of a request stored, replayed
// for every retry with the same key and request: a status code whose
// meaning the caller defines (the console's HTTP layer stores the response
// status) and a JSON value.
type IdempotencyResult struct {
	Code  int
	Value json.RawMessage
}

// IdempotencyRecord is one row of idempotency_requests.
type IdempotencyRecord struct {
	Scope       string          `db:"scope" json:"scope"`
	Key         string          `db:"idempotency_key" json:"key"`
	RequestHash []byte          `db:"request_hash" json:"request_hash"`
	State       string          `db:"state" json:"state"`
	ResultCode  *int            `db:"response_code" json:"result_code,omitempty"`
	ResultValue json.RawMessage `db:"response_body" json:"result_value,omitempty"`
	LockedUntil *time.Time      `db:"locked_until" json:"locked_until,omitempty"`
	CreatedAt   time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt   time.Time       `db:"updated_at" json:"updated_at"`
}

// IdempotencyHash hashes the parts of a request that must match for a retry
// to count as the same request (method, path, canonical body...). Parts are
// length-prefixed, so ("ab","c") and ("a","bc") differ.
func IdempotencyHash(parts ...[]byte) []byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// IdempotencyBeginTx claims (scope, key) in the caller's transaction for a
// request with requestHash. It returns (nil, nil) when this transaction now
// owns the key: do the work in the same transaction, then call
// IdempotencyCompleteTx before committing. It returns the stored result
// when the key was completed by the same request (replay it, do nothing),
// ErrIdempotencyConflict when it was completed by a different request, and
// ErrIdempotencyInProgress when another transaction holds the key for longer
// than wait (0 means 5s); after an error the transaction must be rolled back.
//
// The key row is written as 'processing' and completed in the same
// transaction, so other sessions never see a half-done request: a commit
// whose answer was lost either committed both (the retry replays) or
// neither (the retry runs the request once).
func IdempotencyBeginTx(ctx context.Context, tx DBTX, scope, key string, requestHash []byte, wait time.Duration) (*IdempotencyResult, error) {
	if key == "" || len(key) > 255 {
		return nil, fmt.Errorf("idempotency key must be 1 to 255 characters, got %d", len(key))
	}
	if wait <= 0 {
		wait = 5 * time.Second
	}
	var prev, set string
	if err := tx.QueryRow(ctx, sqlText("idempotency_lock_timeout"), fmt.Sprintf("%dms", wait.Milliseconds())).Scan(&prev, &set); err != nil {
		return nil, fmt.Errorf("bound idempotency key wait: %w", err)
	}
	var inserted bool
	err := tx.QueryRow(ctx, sqlText("idempotency_claim"), scope, key, requestHash, wait.Milliseconds()).Scan(&inserted)
	if err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == "55P03" {
			return nil, fmt.Errorf("idempotency key %q: %w", key, ErrIdempotencyInProgress)
		}
		return nil, fmt.Errorf("claim idempotency key %q: %w", key, err)
	}
	if err := tx.QueryRow(ctx, sqlText("idempotency_lock_timeout"), prev).Scan(&set, &set); err != nil {
		return nil, fmt.Errorf("restore lock_timeout: %w", err)
	}
	if inserted {
		return nil, nil
	}
	rec, err := sqlset.One[IdempotencyRecord](ctx, tx, sqlText("idempotency_get"), scope, key)
	if err != nil {
		return nil, fmt.Errorf("read idempotency key %q: %w", key, err)
	}
	if !bytes.Equal(rec.RequestHash, requestHash) {
		return nil, fmt.Errorf("idempotency key %q: %w", key, ErrIdempotencyConflict)
	}
	if rec.State != "completed" || rec.ResultCode == nil {
		return nil, fmt.Errorf("idempotency key %q: %w", key, ErrIdempotencyInProgress)
	}
	return &IdempotencyResult{Code: *rec.ResultCode, Value: rec.ResultValue}, nil
}

// IdempotencyCompleteTx stores the result of the request that owns (scope,
// key) in the caller's transaction; it commits with the work. A nil or empty
// value is stored as JSON null.
func IdempotencyCompleteTx(ctx context.Context, tx DBTX, scope, key string, res IdempotencyResult) error {
	value := res.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	tag, err := tx.Exec(ctx, sqlText("idempotency_complete"), scope, key, res.Code, value)
	if err != nil {
		return fmt.Errorf("complete idempotency key %q: %w", key, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("complete idempotency key %q: not held by this transaction: %w", key, ErrNotFound)
	}
	return nil
}

// IdempotencyParams names a request for IdempotencyDo.
type IdempotencyParams struct {
	Scope       string
	Key         string
	RequestHash []byte
	// Wait bounds how long to wait for a concurrent holder of the key
	// (default 5s) before answering ErrIdempotencyInProgress.
	Wait time.Duration
}

// IdempotencyDo runs fn at most once per (scope, key): in one transaction it
// claims the key, runs fn, stores fn's result and commits. A retry with the
// same key and hash gets the stored result with replayed=true and fn is not
// called. When the commit fails the outcome is unknown: the error says so,
// and the caller (or its client) must retry with the same key, which either
// replays the committed result or runs fn once.
func IdempotencyDo(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, p IdempotencyParams, fn func(ctx context.Context, tx pgx.Tx) (IdempotencyResult, error)) (res IdempotencyResult, replayed bool, err error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return IdempotencyResult{}, false, fmt.Errorf("begin idempotent request: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	stored, err := IdempotencyBeginTx(ctx, tx, p.Scope, p.Key, p.RequestHash, p.Wait)
	if err != nil {
		return IdempotencyResult{}, false, err
	}
	if stored != nil {
		return *stored, true, tx.Commit(ctx)
	}
	res, err = fn(ctx, tx)
	if err != nil {
		return IdempotencyResult{}, false, err
	}
	if err := IdempotencyCompleteTx(ctx, tx, p.Scope, p.Key, res); err != nil {
		return IdempotencyResult{}, false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return IdempotencyResult{}, false, fmt.Errorf("commit idempotent request %q (outcome unknown, retry with the same key): %w", p.Key, err)
	}
	return res, false, nil
}

// IdempotencyLookup returns the stored request for (scope, key), or
// ErrNotFound, so an operator can tell a client whether a commit-unknown
// request took effect (RB-M).
func IdempotencyLookup(ctx context.Context, db DBTX, scope, key string) (*IdempotencyRecord, error) {
	return collectOne[IdempotencyRecord](ctx, db, "idempotency_lookup",
		fmt.Sprintf("look up idempotency key %q", key), fmt.Sprintf("idempotency key %q", key), scope, key)
}

// StuckIdempotencyKey is an idempotency key claimed longer ago than a
// threshold and never completed: a retry with the same key is refused until
// the claim's lock expires.
type StuckIdempotencyKey struct {
	Scope       string     `db:"scope" json:"scope"`
	Key         string     `db:"idempotency_key" json:"key"`
	CreatedAt   time.Time  `db:"created_at" json:"created_at"`
	LockedUntil *time.Time `db:"locked_until" json:"locked_until"`
	AgeSeconds  float64    `db:"age_seconds" json:"age_seconds"`
	// Total is how many keys are stuck, capped at the count cap.
	Total int64 `db:"total" json:"total"`
}

// IdempotencyStuck returns the twenty oldest keys in 'processing' for
// longer than olderThan (idempotency_stuck.sql); every row carries the
// total, counted up to countCap (zero means DefaultCountCap).
func IdempotencyStuck(ctx context.Context, db DBTX, olderThan time.Duration, countCap int64) ([]StuckIdempotencyKey, error) {
	if countCap <= 0 {
		countCap = DefaultCountCap
	}
	return collectRows[StuckIdempotencyKey](ctx, db, "idempotency_stuck", "list stuck idempotency keys", olderThan, countCap)
}

// IdempotencyStuckSQL is the statement IdempotencyStuck runs.
func IdempotencyStuckSQL() string { return sqlText("idempotency_stuck") }
