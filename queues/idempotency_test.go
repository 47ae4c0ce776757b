package queues

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// obOrders creates the table obCreateOrder writes to.
func obOrders(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), "CREATE TABLE ob_orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, amount int NOT NULL)")
	require.NoError(t, err)
}

// obOrderCount counts the orders obCreateOrder wrote.
func obOrderCount(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM ob_orders").Scan(&n))
	return n
}

// obCreateOrder is the business request of the idempotency tests: an order
// row and its outbox event, with the order id as the response.
func obCreateOrder(amount int) func(ctx context.Context, tx pgx.Tx) (IdempotencyResult, error) {
	return func(ctx context.Context, tx pgx.Tx) (IdempotencyResult, error) {
		var id int64
		if err := tx.QueryRow(ctx, "INSERT INTO ob_orders (amount) VALUES ($1) RETURNING id", amount).Scan(&id); err != nil {
			return IdempotencyResult{}, err
		}
		if _, err := EnqueueEventTx(ctx, tx, OutboxEvent{Topic: "orders", AggregateType: "order",
			AggregateID: fmt.Sprint(id), EventType: "order.created", Payload: map[string]any{"order_id": id, "amount": amount}}); err != nil {
			return IdempotencyResult{}, err
		}
		body, _ := json.Marshal(map[string]int64{"order_id": id})
		return IdempotencyResult{Code: 201, Value: body}, nil
	}
}

// Commit-unknown: a proxy between client and PostgreSQL forwards COMMIT and
// cuts the connection before the answer. The server committed; the client
// only knows it lost the connection. The retry with the same key returns
// the original response and creates nothing twice.
func TestIdempotencyCommitUnknownResolvedByRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	pool := testdb.Pool(t, dbURL)
	obOrders(t, pool)

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	proxy := obStartProxy(t, u.Host)
	u.Host = proxy.addr()
	viaProxy := func() *pgx.Conn {
		cfg, err := pgx.ParseConfig(u.String())
		require.NoError(t, err)
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
		conn, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close(ctx) })
		return conn
	}
	p := IdempotencyParams{Scope: "orders:acct-7", Key: "req-42", RequestHash: IdempotencyHash([]byte("POST /orders"), []byte(`{"amount":500}`))}

	conn := viaProxy()
	proxy.armed.Store(true)
	_, _, err = IdempotencyDo(ctx, conn, p, obCreateOrder(500))
	require.Error(t, err)
	require.Contains(t, err.Error(), "outcome unknown")
	require.Equal(t, int64(1), proxy.cuts.Load())

	// The server did commit (the client could not know).
	testdb.Eventually(t, 10*time.Second, "the cut commit to be visible", func() bool {
		rec, err := IdempotencyLookup(ctx, pool, p.Scope, p.Key)
		return err == nil && rec.State == "completed"
	})
	rec, err := IdempotencyLookup(ctx, pool, p.Scope, p.Key)
	require.NoError(t, err)
	require.Equal(t, 201, *rec.ResultCode)

	// The client retries with the same key on a new connection.
	resp, replayed, err := IdempotencyDo(ctx, viaProxy(), p, obCreateOrder(500))
	require.NoError(t, err)
	require.True(t, replayed)
	require.Equal(t, 201, resp.Code)
	require.JSONEq(t, string(rec.ResultValue), string(resp.Value))

	var events int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_events").Scan(&events))
	require.Equal(t, 1, obOrderCount(t, pool))
	require.Equal(t, 1, events)

	// Same key, different request: a clear conflict, nothing done.
	other := p
	other.RequestHash = IdempotencyHash([]byte("POST /orders"), []byte(`{"amount":900}`))
	_, _, err = IdempotencyDo(ctx, pool, other, obCreateOrder(900))
	require.ErrorIs(t, err, ErrIdempotencyConflict)
	require.Equal(t, 1, obOrderCount(t, pool))
}

// A cut before COMMIT reaches the server: nothing committed, and the retry
// with the same key runs the request once.
func TestIdempotencyRollbackThenRetryRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	obOrders(t, pool)
	p := IdempotencyParams{Key: "k1", RequestHash: IdempotencyHash([]byte("a"))}
	_, _, err := IdempotencyDo(ctx, pool, p, func(ctx context.Context, tx pgx.Tx) (IdempotencyResult, error) {
		if _, err := obCreateOrder(1)(ctx, tx); err != nil {
			return IdempotencyResult{}, err
		}
		return IdempotencyResult{}, fmt.Errorf("connection lost before commit")
	})
	require.Error(t, err)
	_, err = IdempotencyLookup(ctx, pool, "", "k1")
	require.ErrorIs(t, err, ErrNotFound)
	resp, replayed, err := IdempotencyDo(ctx, pool, p, obCreateOrder(1))
	require.NoError(t, err)
	require.False(t, replayed)
	require.Equal(t, 201, resp.Code)
	require.Equal(t, 1, obOrderCount(t, pool))
}

// While one request holds the key, the same key answers "in progress"
// after the bounded wait; once it commits, the retry replays.
func TestIdempotencyInProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	hash := IdempotencyHash([]byte("same"))
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	stored, err := IdempotencyBeginTx(ctx, tx, "s", "busy", hash, time.Second)
	require.NoError(t, err)
	require.Nil(t, stored)

	start := time.Now()
	_, _, err = IdempotencyDo(ctx, pool, IdempotencyParams{Scope: "s", Key: "busy", RequestHash: hash, Wait: 200 * time.Millisecond},
		func(context.Context, pgx.Tx) (IdempotencyResult, error) {
			t.Fatal("ran while the key was held")
			return IdempotencyResult{}, nil
		})
	require.ErrorIs(t, err, ErrIdempotencyInProgress)
	require.Less(t, time.Since(start), 10*time.Second)

	require.NoError(t, IdempotencyCompleteTx(ctx, tx, "s", "busy", IdempotencyResult{Code: 200, Value: json.RawMessage(`{"ok":true}`)}))
	require.NoError(t, tx.Commit(ctx))
	resp, replayed, err := IdempotencyDo(ctx, pool, IdempotencyParams{Scope: "s", Key: "busy", RequestHash: hash},
		func(context.Context, pgx.Tx) (IdempotencyResult, error) {
			t.Fatal("ran again")
			return IdempotencyResult{}, nil
		})
	require.NoError(t, err)
	require.True(t, replayed)
	require.JSONEq(t, `{"ok":true}`, string(resp.Value))
	// The lock_timeout set for the wait does not leak into the work.
	var lt string
	require.NoError(t, pool.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt))
	require.Equal(t, "0", lt)
}
