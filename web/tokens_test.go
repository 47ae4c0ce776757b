package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

// statementCounter is a pgx tracer that counts the statements a pool sends
// whose text contains any of its patterns.
type statementCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (sc *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for p := range sc.counts {
		if strings.Contains(d.SQL, p) {
			sc.counts[p]++
		}
	}
	return ctx
}

func (sc *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (sc *statementCounter) count(pattern string) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.counts[pattern]
}

// countingPool is a pool on url whose statements matching patterns are
// counted.
func countingPool(t *testing.T, url string, patterns ...string) (*pgxpool.Pool, *statementCounter) {
	t.Helper()
	sc := &statementCounter{counts: map[string]int{}}
	for _, p := range patterns {
		sc.counts[p] = 0
	}
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = sc
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, sc
}

// An API client's requests cost one token lookup per cache lifetime, not
// one write each; the last use is written by one batched statement.
func TestTokenVerdictsAreCached(t *testing.T) {
	t.Parallel()
	const lookup, touch = "FROM api_tokens", "UPDATE api_tokens"
	var counter *statementCounter
	e := setupWith(t, setupOpts{configure: func(cfg *Config) {
		cfg.Pool, counter = countingPool(t, testdb.URL(t), lookup, touch)
	}})
	ctx := context.Background()
	token, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci", auth.RoleViewer)
	require.NoError(t, err)
	e.srv.tokenUses.every = time.Hour // flushed by hand below

	c := e.client(t)
	const n = 25
	for range n {
		resp, body := c.get("/queues", "Authorization", "Bearer "+token, "Accept", "application/json")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
	}
	require.Equal(t, 1, counter.count(lookup), "%d requests with one token, one lookup", n)
	require.Zero(t, counter.count(touch), "no request wrote")
	require.Zero(t, e.queryInt(t, "SELECT count(last_used_at) FROM api_tokens WHERE name = 'ci'"))

	e.srv.flushTokenUses()
	require.Equal(t, 1, counter.count(touch), "one statement records the batch")
	require.Equal(t, 1, e.queryInt(t, "SELECT count(last_used_at) FROM api_tokens WHERE name = 'ci' AND last_used_at > now() - interval '1 minute'"))

	t.Run("TheBatchIsScheduled", func(t *testing.T) {
		e.srv.tokenUses.every = 10 * time.Millisecond
		other, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "cd", auth.RoleViewer)
		require.NoError(t, err)
		resp, body := c.get("/queues", "Authorization", "Bearer "+other, "Accept", "application/json")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		testdb.Eventually(t, 10*time.Second, "the last use of cd is written", func() bool {
			return e.queryInt(t, "SELECT count(last_used_at) FROM api_tokens WHERE name = 'cd'") == 1
		})
	})
}

// A token's verdict is kept for sessionFresh: a revocation takes effect
// within that time, and a stalled database does not refuse a token it
// confirmed.
func TestTokenCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	token, err := auth.TokenCreate(ctx, pool, "ci", auth.RoleOperator)
	require.NoError(t, err)
	down := testdb.Pool(t, url)
	down.Close() // a real pool whose every query fails

	tc := newSessionCache(auth.TokenLookup)
	now := time.Now()
	p, err := tc.lookup(ctx, pool, token, now, false)
	require.NoError(t, err)
	require.Equal(t, auth.Principal{ID: p.ID, Name: "ci", Role: auth.RoleOperator, Kind: "token"}, p)

	p, err = tc.lookup(ctx, down, token, now.Add(sessionFresh+time.Second), false)
	require.NoError(t, err, "a token confirmed a moment ago works while the database stalls")
	require.Equal(t, "ci", p.Name)

	require.NoError(t, auth.TokenRevoke(ctx, pool, "ci"))
	_, err = tc.lookup(ctx, pool, token, now.Add(sessionFresh/2), false)
	require.NoError(t, err, "within sessionFresh the cached verdict stands")
	_, err = tc.lookup(ctx, pool, token, now.Add(sessionFresh+time.Second), false)
	require.ErrorIs(t, err, auth.ErrNoSession, "once the verdict is older than sessionFresh the revocation holds")
}

// A write that reaches a read-only database anyway (a demotion between
// the check and the write; here default_transaction_read_only) is a 409
// with the read-only sentence and code, never a 500, and is not audited.
func TestReadOnlyWriteIsAConflict(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	e := setupWith(t, setupOpts{url: url})
	ctx := context.Background()
	token, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "ci", auth.RoleOperator)
	require.NoError(t, err)
	testdb.SetDatabaseDefault(t, url, "default_transaction_read_only", "on")
	e.srv.cfg.Pool.Reset()

	c := e.client(t)
	resp, body := c.apiPost("/api/v1/actions/incident.open", token, `{"params": {"title": "drill"}, "reason": "drill"}`)
	require.Equal(t, http.StatusConflict, resp.StatusCode, body)
	var refusal struct{ Error, Code string }
	require.NoError(t, json.Unmarshal([]byte(body), &refusal))
	require.Equal(t, "read_only", refusal.Code)
	require.Equal(t, readOnlySentence(""), refusal.Error)
	require.Zero(t, e.queryInt(t, "SELECT count(*) FROM audit_events"))
}
