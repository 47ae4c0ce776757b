package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func TestOperatorSessionToken(t *testing.T) {
	ctx := context.Background()
	tx := testdb.Tx(t)

	_, err := OperatorAdd(ctx, tx, "ann", RoleOperator, "short")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = OperatorAdd(ctx, tx, "bad name!", RoleOperator, "long enough password")
	require.ErrorIs(t, err, ErrInvalid)
	_, err = OperatorAdd(ctx, tx, "ann", "root", "long enough password")
	require.ErrorIs(t, err, ErrInvalid)

	id, err := OperatorAdd(ctx, tx, "ann", RoleOperator, "correct horse battery")
	require.NoError(t, err)

	_, err = Authenticate(ctx, tx, "ann", "wrong password!")
	require.ErrorIs(t, err, ErrBadCredentials)
	_, err = Authenticate(ctx, tx, "nobody", "correct horse battery")
	require.ErrorIs(t, err, ErrBadCredentials)
	p, err := Authenticate(ctx, tx, "ann", "correct horse battery")
	require.NoError(t, err)
	require.Equal(t, Principal{ID: id, Name: "ann", Role: RoleOperator, Kind: "operator"}, p)

	secret, err := SessionCreate(ctx, tx, id, time.Hour)
	require.NoError(t, err)
	got, err := SessionLookup(ctx, tx, secret)
	require.NoError(t, err)
	require.Equal(t, "ann", got.Name)
	_, err = SessionLookup(ctx, tx, secret+"x")
	require.ErrorIs(t, err, ErrNoSession)
	require.NoError(t, SessionDelete(ctx, tx, secret))
	_, err = SessionLookup(ctx, tx, secret)
	require.ErrorIs(t, err, ErrNoSession)

	tok, err := TokenCreate(ctx, tx, "ci", RoleViewer)
	require.NoError(t, err)
	require.Contains(t, tok, TokenPrefix)
	tp, err := TokenLookup(ctx, tx, tok)
	require.NoError(t, err)
	require.Equal(t, Principal{ID: tp.ID, Name: "ci", Role: RoleViewer, Kind: "token"}, tp)
	_, err = TokenLookup(ctx, tx, TokenPrefix+"nope")
	require.ErrorIs(t, err, ErrNoSession)
	_, err = TokenCreate(ctx, tx, "ci", RoleViewer)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestLoginLimiter(t *testing.T) {
	t.Parallel()
	l := NewLoginLimiter(map[string]LoginLimit{"account": {Burst: 3, Window: time.Minute}, "addr": {Burst: 5, Window: time.Minute}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	acct := LimiterKey{"account", "ann"}
	for i := range 3 {
		_, ok, _ := l.Reserve(now, LimiterKey{"addr", "10.0.0.1"}, acct)
		require.True(t, ok, "attempt %d", i)
	}
	_, ok, wait := l.Reserve(now.Add(10*time.Second), LimiterKey{"addr", "10.0.0.2"}, acct)
	require.False(t, ok, "a new address does not reset the account's limit")
	require.Equal(t, 50*time.Second, wait)
	_, ok, _ = l.Reserve(now.Add(61*time.Second), acct)
	require.True(t, ok, "the window passed")

	// The address limit holds across accounts.
	for i := range 2 {
		_, ok, _ = l.Reserve(now, LimiterKey{"addr", "10.0.0.1"}, LimiterKey{"account", fmt.Sprint("other", i)})
		require.True(t, ok)
	}
	_, ok, _ = l.Reserve(now, LimiterKey{"addr", "10.0.0.1"}, LimiterKey{"account", "fresh"})
	require.False(t, ok, "five attempts from one address")

	// A released (successful) attempt gives its slots back.
	r, ok, _ := l.Reserve(now, LimiterKey{"addr", "10.0.0.9"})
	require.True(t, ok)
	l.Release(r)
	l.Forget(LimiterKey{"addr", "10.0.0.9"})
}

// TestLoginLimiterParallelReservations: attempts in flight count, so 50
// parallel attempts on one account get exactly Burst slots.
func TestLoginLimiterParallelReservations(t *testing.T) {
	t.Parallel()
	l := NewLoginLimiter(map[string]LoginLimit{"account": {Burst: 5, Window: time.Minute}})
	var granted atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, ok, _ := l.Reserve(time.Now(), LimiterKey{"account", "ann"}); ok {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 5, granted.Load())
}

// TestLoginLimiterBoundsMemory: keys are stored as fixed-size digests
// whatever their length, the number of keys is capped, and a timer forgets
// expired keys without any further call.
func TestLoginLimiterBoundsMemory(t *testing.T) {
	t.Parallel()
	l := NewLoginLimiter(map[string]LoginLimit{"account": {Burst: 5, Window: time.Hour}})
	l.MaxKeys = 10
	huge := strings.Repeat("x", 5<<20)
	for i := range 10 {
		_, ok, _ := l.Reserve(time.Now(), LimiterKey{"account", fmt.Sprint(i, huge)})
		require.True(t, ok)
	}
	for d := range l.entries {
		require.Len(t, d, sha256.Size, "a 5 MB name is held as a 32-byte digest")
	}
	_, ok, wait := l.Reserve(time.Now(), LimiterKey{"account", "one too many"})
	require.False(t, ok, "past MaxKeys new keys are refused")
	require.Equal(t, time.Hour, wait)
	l.Sweep(time.Now().Add(time.Hour))
	require.Zero(t, l.Len())

	timed := NewLoginLimiter(map[string]LoginLimit{"account": {Burst: 5, Window: 20 * time.Millisecond}})
	for i := range 100 {
		_, ok, _ := timed.Reserve(time.Now(), LimiterKey{"account", fmt.Sprint(i)})
		require.True(t, ok)
	}
	require.Eventually(t, func() bool { return timed.Len() == 0 }, 10*time.Second, 10*time.Millisecond,
		"the sweep timer forgets expired keys")
}

func TestRoleAtLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		role, min string
		want      bool
	}{
		{RoleAdmin, RoleOperator, true},
		{RoleOperator, RoleOperator, true},
		{RoleOperator, RoleViewer, true},
		{RoleViewer, RoleOperator, false},
		{RoleOperator, RoleAdmin, false},
		{"root", RoleViewer, false},
		{"", "", false},
	} {
		require.Equal(t, c.want, RoleAtLeast(c.role, c.min), "%q at least %q", c.role, c.min)
	}
	require.True(t, ValidRole(RoleAdmin))
	require.False(t, ValidRole("root"))
}
