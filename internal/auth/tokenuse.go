package auth

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// TokenUsage collects when API tokens were used, so that a request
// authenticated by a token costs no write: Flush records every use noted
// since the last one in a single statement. It is safe for concurrent use
// and holds one entry per token used, however many requests used it.
type TokenUsage struct {
	mu   sync.Mutex
	used map[int64]time.Time
}

// NewTokenUsage returns an empty TokenUsage.
func NewTokenUsage() *TokenUsage {
	return &TokenUsage{used: map[int64]time.Time{}}
}

// Note records that the token with id was used at at.
func (u *TokenUsage) Note(id int64, at time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if at.After(u.used[id]) {
		u.used[id] = at
	}
}

// Discard forgets the pending uses, where they cannot be written (a
// standby).
func (u *TokenUsage) Discard() {
	u.mu.Lock()
	defer u.mu.Unlock()
	clear(u.used)
}

// Pending is the number of tokens whose last use is not written yet.
func (u *TokenUsage) Pending() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.used)
}

// Flush writes the pending uses to api_tokens.last_used_at in one
// statement (token_used.sql) and returns how many tokens it covered. When
// the write fails the uses stay pending for the next Flush; a later use of
// the same token replaces an earlier one, so nothing grows.
func (u *TokenUsage) Flush(ctx context.Context, db DBTX) (int, error) {
	u.mu.Lock()
	batch := u.used
	u.used = map[int64]time.Time{}
	u.mu.Unlock()
	if len(batch) == 0 {
		return 0, nil
	}
	ids := make([]int64, 0, len(batch))
	ats := make([]time.Time, 0, len(batch))
	for id, at := range batch {
		ids = append(ids, id)
		ats = append(ats, at)
	}
	if _, err := db.Exec(ctx, sqlText("token_used"), ids, ats); err != nil {
		for id, at := range batch {
			u.Note(id, at)
		}
		return 0, fmt.Errorf("record the last use of %d API tokens: %w", len(batch), err)
	}
	return len(batch), nil
}
