package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/crypto/bcrypt"

	"github.com/pgconsole/console/internal/sqlset"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

var queries = sqlset.New("auth", sqlFiles)

// sqlText returns the statement in sql/name.sql; it panics on a name with
// no file.
func sqlText(name string) string { return queries.Text(name) }

// DBTX is what the store needs of a pool, connection or transaction.
type DBTX = sqlset.DBTX

var (
	// ErrBadCredentials is returned for an unknown name, a wrong password or a
	// disabled account alike, so a login form does not reveal which.
	ErrBadCredentials = errors.New("wrong name or password")
	// ErrNoSession means the cookie or token names no live session.
	ErrNoSession = errors.New("not signed in or session expired")
	// ErrInvalid wraps input that cannot be stored (bad name, weak password).
	ErrInvalid = errors.New("invalid")
	// ErrNotFound means no operator or live token has that name.
	ErrNotFound = errors.New("not found")
)

// Principal is who a request acts as.
type Principal struct {
	ID   int64
	Name string
	Role string
	// Kind is "operator" for a browser session, "token" for an API token,
	// "proxy" for a trusted reverse-proxy header.
	Kind string
	// Scope narrows what Role allows: "" for everything, ScopeAlerts for
	// Alertmanager's webhook only. Only API tokens have one.
	Scope string
}

// ScopeAlerts is the scope of a token that may only post Alertmanager
// notifications: the secret an Alertmanager configuration holds opens
// incidents and reads nothing.
const ScopeAlerts = "alerts"

// TokenOptions are a new token's optional settings.
type TokenOptions struct {
	// TTL is the token's lifetime; zero means it never expires.
	TTL time.Duration
	// Scope is "" (everything the role allows) or ScopeAlerts, which needs
	// the operator role or above.
	Scope string
}

// MinPasswordLength is the shortest password OperatorAdd accepts.
const MinPasswordLength = 10

// MaxNameLength and MaxPasswordLength bound what a sign-in attempt may
// send. No account has a longer name (the table's check says so), and
// bcrypt reads only the first 72 bytes of a password, so longer input is
// refused as wrong before it reaches the database or bcrypt.
const (
	MaxNameLength     = 64
	MaxPasswordLength = 1024
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// OperatorAdd creates an operator, or resets the password and role of an
// existing one (enabling it again); a reset ends every session the
// operator had.
func OperatorAdd(ctx context.Context, db DBTX, name, role, password string) (int64, error) {
	if !nameRE.MatchString(name) {
		return 0, fmt.Errorf("%w: operator name %q: use letters, digits, _ . @ - (up to 64)", ErrInvalid, name)
	}
	if !ValidRole(role) {
		return 0, fmt.Errorf("%w: role %q: use viewer, operator or admin", ErrInvalid, role)
	}
	if len(password) < MinPasswordLength {
		return 0, fmt.Errorf("%w: password must be at least %d characters", ErrInvalid, MinPasswordLength)
	}
	if len(password) > 72 {
		return 0, fmt.Errorf("%w: password must be at most 72 bytes (bcrypt reads no more)", ErrInvalid)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return 0, fmt.Errorf("hash password: %w", err)
	}
	var id int64
	if err := db.QueryRow(ctx, sqlText("operator_add"), name, string(hash), role).Scan(&id); err != nil {
		return 0, fmt.Errorf("store operator %s: %w", name, err)
	}
	return id, nil
}

// OperatorDisable disables an operator account and ends its sessions: it
// can no longer sign in until OperatorAdd sets a new password.
func OperatorDisable(ctx context.Context, db DBTX, name string) error {
	return changeNamed(ctx, db, "operator_disable", name,
		fmt.Sprintf("no operator is named %q", name), "disable operator "+name)
}

// changeNamed runs the statement in sql/query.sql, which changes the row
// called name and returns its id. No row is ErrNotFound said as missing; any
// other failure is wrapped with what.
func changeNamed(ctx context.Context, db DBTX, query, name, missing, what string) error {
	var id int64
	err := db.QueryRow(ctx, sqlText(query), name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", missing, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// OperatorCount returns the number of enabled operators.
func OperatorCount(ctx context.Context, db DBTX) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, sqlText("operator_count")).Scan(&n)
	return n, err
}

// dummyHash is compared against when the name is unknown, so a login takes as
// long for a missing account as for a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("not a real password"), bcrypt.DefaultCost)

// Authenticate checks a name and password and records the sign-in
// (last_login_at). A name or password longer than MaxNameLength or
// MaxPasswordLength is ErrBadCredentials at once.
func Authenticate(ctx context.Context, db DBTX, name, password string) (Principal, error) {
	p, err := CheckPassword(ctx, db, name, password)
	if err != nil {
		return p, err
	}
	if _, err := db.Exec(ctx, sqlText("operator_login_touch"), p.ID); err != nil {
		return Principal{}, fmt.Errorf("record login: %w", err)
	}
	return p, nil
}

// CheckPassword is Authenticate without the write: it only reads, so it
// works on a standby.
func CheckPassword(ctx context.Context, db DBTX, name, password string) (Principal, error) {
	if len(name) > MaxNameLength || len(password) > MaxPasswordLength {
		return Principal{}, ErrBadCredentials
	}
	var (
		p        Principal
		hash     string
		disabled bool
	)
	err := db.QueryRow(ctx, sqlText("operator_by_name"), name).Scan(&p.ID, &p.Name, &hash, &p.Role, &disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return Principal{}, ErrBadCredentials
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up operator: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil || disabled {
		return Principal{}, ErrBadCredentials
	}
	p.Kind = "operator"
	return p, nil
}

// OperatorActive returns the operator named name while it may sign in
// (ErrNoSession once it is disabled or gone): how a session that lives
// outside the database (a sign-in on a standby) is checked again, with a
// read.
func OperatorActive(ctx context.Context, db DBTX, name string) (Principal, error) {
	p := Principal{Kind: "operator"}
	var (
		hash     string
		disabled bool
	)
	err := db.QueryRow(ctx, sqlText("operator_by_name"), name).Scan(&p.ID, &p.Name, &hash, &p.Role, &disabled)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && disabled) {
		return Principal{}, ErrNoSession
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up operator: %w", err)
	}
	return p, nil
}

// SessionCreate starts a browser session and returns its secret (the cookie
// value).
func SessionCreate(ctx context.Context, db DBTX, operatorID int64, ttl time.Duration) (string, error) {
	secret := NewSecret()
	if _, err := db.Exec(ctx, sqlText("session_create"), hashSecret(secret), operatorID, ttl.Seconds()); err != nil {
		return "", fmt.Errorf("store session: %w", err)
	}
	return secret, nil
}

// SessionLookup returns the operator behind a session secret.
func SessionLookup(ctx context.Context, db DBTX, secret string) (Principal, error) {
	if secret == "" {
		return Principal{}, ErrNoSession
	}
	p := Principal{Kind: "operator"}
	err := db.QueryRow(ctx, sqlText("session_lookup"), hashSecret(secret)).Scan(&p.ID, &p.Name, &p.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrNoSession
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up session: %w", err)
	}
	return p, nil
}

// SessionDelete ends a session.
func SessionDelete(ctx context.Context, db DBTX, secret string) error {
	_, err := db.Exec(ctx, sqlText("session_delete"), hashSecret(secret))
	return err
}

// TokenPrefix starts every API token, so a leaked one is easy to grep for.
const TokenPrefix = "pgc_"

// TokenCreate creates an API token that does not expire and returns its
// secret, which is shown once: only its hash is stored.
func TokenCreate(ctx context.Context, db DBTX, name, role string) (string, error) {
	return TokenCreateWith(ctx, db, name, role, TokenOptions{})
}

// TokenCreateWith is TokenCreate with a lifetime (after it the token is
// refused like a revoked one) and a scope.
func TokenCreateWith(ctx context.Context, db DBTX, name, role string, o TokenOptions) (string, error) {
	ttl := o.TTL
	if ttl < 0 {
		return "", fmt.Errorf("%w: token lifetime %s: give a positive duration, or none for a token that does not expire", ErrInvalid, ttl)
	}
	var seconds *float64
	if ttl > 0 {
		s := ttl.Seconds()
		seconds = &s
	}
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("%w: token name %q: use letters, digits, _ . @ - (up to 64)", ErrInvalid, name)
	}
	if !ValidRole(role) {
		return "", fmt.Errorf("%w: role %q: use viewer, operator or admin", ErrInvalid, role)
	}
	var scope *string
	switch o.Scope {
	case "":
	case ScopeAlerts:
		if !RoleAtLeast(role, RoleOperator) {
			return "", fmt.Errorf("%w: an alerts token opens incidents, which needs the operator role; %s has %s", ErrInvalid, name, role)
		}
		scope = &o.Scope
	default:
		return "", fmt.Errorf("%w: scope %q: use %s, or none for everything the role allows", ErrInvalid, o.Scope, ScopeAlerts)
	}
	secret := TokenPrefix + NewSecret()
	var id int64
	if err := db.QueryRow(ctx, sqlText("token_create"), name, hashSecret(secret), role, seconds, scope).Scan(&id); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return "", fmt.Errorf("%w: a token named %q exists already", ErrInvalid, name)
		}
		return "", fmt.Errorf("store token: %w", err)
	}
	return secret, nil
}

// TokenLookup returns the principal behind a bearer secret. It only
// reads (a token works on a standby); the caller records the use with a
// TokenUsage.
func TokenLookup(ctx context.Context, db DBTX, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return Principal{}, ErrNoSession
	}
	p := Principal{Kind: "token"}
	err := db.QueryRow(ctx, sqlText("token_get"), hashSecret(secret)).Scan(&p.ID, &p.Name, &p.Role, &p.Scope)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, ErrNoSession
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up token: %w", err)
	}
	return p, nil
}

// Token is an API token as listed: never its secret or hash.
type Token struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	Scope      string     `json:"scope,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// State is "revoked", "expired" (at now) or "live".
func (t Token) State(now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked"
	case t.ExpiresAt != nil && !t.ExpiresAt.After(now):
		return "expired"
	}
	return "live"
}

// TokenList returns every API token, newest first, revoked and expired ones
// included.
func TokenList(ctx context.Context, db DBTX) ([]Token, error) {
	rows, err := db.Query(ctx, sqlText("token_list"))
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Token, error) {
		var t Token
		err := r.Scan(&t.ID, &t.Name, &t.Role, &t.Scope, &t.CreatedAt, &t.LastUsedAt, &t.ExpiresAt, &t.RevokedAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// TokenRevoke revokes the live token called name: it is refused from the
// next request on.
func TokenRevoke(ctx context.Context, db DBTX, name string) error {
	return changeNamed(ctx, db, "token_revoke", name,
		fmt.Sprintf("no live token is named %q (see `console token list`)", name), "revoke token "+name)
}

// NewSecret returns 32 random bytes, URL-safe base64.
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
