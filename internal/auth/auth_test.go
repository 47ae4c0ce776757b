package auth

import (
	"context"
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
	for i := 0; i < 2; i++ { // the second lookup takes the untouched path
		tp, err := TokenLookup(ctx, tx, tok)
		require.NoError(t, err)
		require.Equal(t, Principal{ID: tp.ID, Name: "ci", Role: RoleViewer, Kind: "token"}, tp)
	}
	_, err = TokenLookup(ctx, tx, TokenPrefix+"nope")
	require.ErrorIs(t, err, ErrNoSession)
	_, err = TokenCreate(ctx, tx, "ci", RoleViewer)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestLoginLimiter(t *testing.T) {
	l := NewLoginLimiter(3, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		ok, _ := l.Allow("k", now)
		require.True(t, ok)
		l.Fail("k", now)
	}
	ok, wait := l.Allow("k", now.Add(10*time.Second))
	require.False(t, ok)
	require.Equal(t, 50*time.Second, wait)
	ok, _ = l.Allow("k", now.Add(61*time.Second))
	require.True(t, ok, "the window passed")
	l.Fail("k", now)
	l.Succeed("k")
	ok, _ = l.Allow("k", now)
	require.True(t, ok)
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
