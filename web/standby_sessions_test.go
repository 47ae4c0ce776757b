package web

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// A sign-in made on a standby lives in this process: it names its operator
// until it expires or signs out, and is checked against the operator's row,
// so an operator disabled on the primary is refused (within the session
// cache's lifetime) however long the sign-in had left.
func TestStandbySessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Pool(t, testdb.URL(t))
	_, err := auth.OperatorAdd(ctx, pool, "bea", auth.RoleOperator, testPassword)
	require.NoError(t, err)
	s := &Server{}
	now := time.Now()
	secret := auth.NewSecret()
	s.standbySessions.add(secret, "bea", now.Add(time.Hour))

	p, err := s.lookupSession(ctx, pool, secret)
	require.NoError(t, err)
	require.Equal(t, "bea", p.Name)
	require.Equal(t, auth.RoleOperator, p.Role)

	_, ok := s.standbySessions.name(secret, now.Add(time.Hour))
	require.False(t, ok, "it ends at its expiry")
	s.standbySessions.add(secret, "bea", now.Add(time.Hour))
	s.standbySessions.forget(secret)
	_, err = s.lookupSession(ctx, pool, secret)
	require.ErrorIs(t, err, auth.ErrNoSession, "sign-out ends it")

	s.standbySessions.add(secret, "bea", now.Add(time.Hour))
	require.NoError(t, auth.OperatorDisable(ctx, pool, "bea"))
	_, err = s.lookupSession(ctx, pool, secret)
	require.ErrorIs(t, err, auth.ErrNoSession, "a disabled operator's sign-in ends")

	for i := range maxStandbySessions + 10 {
		s.standbySessions.add(auth.NewSecret(), "bea", now.Add(time.Duration(i)*time.Second))
	}
	require.Len(t, s.standbySessions.entries, maxStandbySessions, "bounded")
}
