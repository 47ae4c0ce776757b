package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestIdempotencyMiddleware(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := t.Context()
	_, err := pool.Exec(ctx, "CREATE TABLE idem_orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text)")
	require.NoError(t, err)
	e := echo.New()
	var calls atomic.Int64
	e.POST("/api/orders", func(c echo.Context) error {
		calls.Add(1)
		var db interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		} = pool
		if tx, ok := IdempotencyTx(c); ok {
			db = tx
		}
		var id int64
		if err := db.QueryRow(c.Request().Context(), "INSERT INTO idem_orders (body) VALUES ('x') RETURNING id").Scan(&id); err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]int64{"order_id": id})
	}, IdempotencyMiddleware(pool, IdempotencyScope(func(echo.Context) string { return "tenant-1" })))
	do := func(key, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set(IdempotencyKeyHeader, key)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	first := do("k-1", `{"amount":5}`)
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	again := do("k-1", `{"amount":5}`)
	require.Equal(t, http.StatusCreated, again.Code)
	require.Equal(t, "true", again.Header().Get(IdempotencyReplayedHeader))
	require.JSONEq(t, first.Body.String(), again.Body.String())
	require.Equal(t, int64(1), calls.Load())

	conflict := do("k-1", `{"amount":6}`)
	require.Equal(t, http.StatusUnprocessableEntity, conflict.Code)
	require.Contains(t, conflict.Body.String(), "different request")

	require.Equal(t, http.StatusCreated, do("", `{"amount":5}`).Code)
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM idem_orders").Scan(&n))
	require.Equal(t, 2, n)
}
