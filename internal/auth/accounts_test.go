package auth

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestTokenExpiryListAndRevoke: an expired or revoked token is refused and
// listed as such; the list never shows a secret.
func TestTokenExpiryListAndRevoke(t *testing.T) {
	ctx := context.Background()
	tx := testdb.Tx(t)

	_, err := TokenCreateWith(ctx, tx, "neg", RoleViewer, TokenOptions{TTL: -time.Hour})
	require.ErrorIs(t, err, ErrInvalid)
	forever, err := TokenCreate(ctx, tx, "ci", RoleOperator)
	require.NoError(t, err)
	brief, err := TokenCreateWith(ctx, tx, "contractor", RoleViewer, TokenOptions{TTL: time.Hour})
	require.NoError(t, err)
	for _, s := range []string{forever, brief} {
		_, err := TokenLookup(ctx, tx, s)
		require.NoError(t, err)
	}

	// The contractor's hour passes.
	_, err = tx.Exec(ctx, "UPDATE api_tokens SET expires_at = clock_timestamp() - interval '1 second' WHERE name = 'contractor'")
	require.NoError(t, err)
	_, err = TokenLookup(ctx, tx, brief)
	require.ErrorIs(t, err, ErrNoSession, "an expired token is refused")

	require.NoError(t, TokenRevoke(ctx, tx, "ci"))
	_, err = TokenLookup(ctx, tx, forever)
	require.ErrorIs(t, err, ErrNoSession, "a revoked token is refused")
	require.ErrorIs(t, TokenRevoke(ctx, tx, "ci"), ErrNotFound, "revoking twice says so")
	require.ErrorIs(t, TokenRevoke(ctx, tx, "nobody"), ErrNotFound)

	list, err := TokenList(ctx, tx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	now := time.Now()
	states := map[string]string{}
	for _, tok := range list {
		states[tok.Name] = tok.State(now)
	}
	require.Equal(t, map[string]string{"ci": "revoked", "contractor": "expired"}, states)
	require.Nil(t, list[1].ExpiresAt, "ci never expires")
	require.NotNil(t, list[0].ExpiresAt)
}

// TestPasswordChangeAndDisableEndSessions: resetting an operator's password
// or disabling the account ends every session it had; other operators keep
// theirs.
func TestPasswordChangeAndDisableEndSessions(t *testing.T) {
	ctx := context.Background()
	tx := testdb.Tx(t)
	ann, err := OperatorAdd(ctx, tx, "ann", RoleOperator, "correct horse battery")
	require.NoError(t, err)
	bob, err := OperatorAdd(ctx, tx, "bob", RoleViewer, "another long password")
	require.NoError(t, err)
	annSession, err := SessionCreate(ctx, tx, ann, time.Hour)
	require.NoError(t, err)
	bobSession, err := SessionCreate(ctx, tx, bob, time.Hour)
	require.NoError(t, err)

	_, err = OperatorAdd(ctx, tx, "ann", RoleOperator, "a brand new password")
	require.NoError(t, err)
	_, err = SessionLookup(ctx, tx, annSession)
	require.ErrorIs(t, err, ErrNoSession, "a password change ends the operator's sessions")
	_, err = SessionLookup(ctx, tx, bobSession)
	require.NoError(t, err, "other operators keep theirs")

	require.NoError(t, OperatorDisable(ctx, tx, "bob"))
	_, err = SessionLookup(ctx, tx, bobSession)
	require.ErrorIs(t, err, ErrNoSession)
	var n int
	require.NoError(t, tx.QueryRow(ctx, "SELECT count(*) FROM operator_sessions WHERE operator_id = $1", bob).Scan(&n))
	require.Zero(t, n, "a disabled operator's sessions are gone, not just hidden")
	_, err = Authenticate(ctx, tx, "bob", "another long password")
	require.ErrorIs(t, err, ErrBadCredentials)
	require.ErrorIs(t, OperatorDisable(ctx, tx, "nobody"), ErrNotFound)
}

// TestAlertsScope: an alerts token needs the operator role, an unknown scope
// is refused, and the scope comes back from lookup and list.
func TestAlertsScope(t *testing.T) {
	ctx := context.Background()
	tx := testdb.Tx(t)
	_, err := TokenCreateWith(ctx, tx, "weak", RoleViewer, TokenOptions{Scope: ScopeAlerts})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, "needs the operator role")
	_, err = TokenCreateWith(ctx, tx, "odd", RoleOperator, TokenOptions{Scope: "everything"})
	require.ErrorIs(t, err, ErrInvalid)
	secret, err := TokenCreateWith(ctx, tx, "alertmanager", RoleOperator, TokenOptions{Scope: ScopeAlerts})
	require.NoError(t, err)
	plain, err := TokenCreate(ctx, tx, "ci", RoleOperator)
	require.NoError(t, err)
	for i := range 2 { // the first lookup touches last_used_at, the second reads
		p, err := TokenLookup(ctx, tx, secret)
		require.NoError(t, err, "lookup %d", i)
		require.Equal(t, ScopeAlerts, p.Scope, "lookup %d", i)
		p, err = TokenLookup(ctx, tx, plain)
		require.NoError(t, err)
		require.Empty(t, p.Scope)
	}
	list, err := TokenList(ctx, tx)
	require.NoError(t, err)
	require.Equal(t, []string{"", ScopeAlerts}, []string{list[0].Scope, list[1].Scope})
}
