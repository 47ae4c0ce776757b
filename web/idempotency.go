package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/queues"
)

// IdempotencyKeyHeader is the request header that makes an unsafe JSON API
// request idempotent.
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotencyReplayedHeader is set on a response replayed from storage.
const IdempotencyReplayedHeader = "Idempotent-Replayed"

const idempotencyTxKey = "queues.idempotency.tx"

// idempotencyOptions are the settings IdempotencyOption functions change.
type idempotencyOptions struct {
	scope    func(c echo.Context) string
	wait     time.Duration
	required bool
	maxBody  int64
	outcomes *prometheus.CounterVec
}

// The outcomes of a request that carries an Idempotency-Key, the values of
// console_idempotency_requests_total's outcome label: the key was new and
// the handler ran; the stored answer was replayed; the key was used with a
// different request (422); a request with the key was still running (409);
// the key store did not answer (503).
const (
	idempotencyNew        = "new"
	idempotencyReplayed   = "replayed"
	idempotencyMismatch   = "mismatch"
	idempotencyInProgress = "in_progress"
	idempotencyError      = "error"
)

var idempotencyOutcomes = []string{idempotencyNew, idempotencyReplayed, idempotencyMismatch, idempotencyInProgress, idempotencyError}

// IdempotencyOption configures IdempotencyMiddleware.
type IdempotencyOption func(*idempotencyOptions)

// IdempotencyScope sets the key namespace per request (default: the route
// path), typically the authenticated principal, so two clients' keys never
// collide.
func IdempotencyScope(f func(c echo.Context) string) IdempotencyOption {
	return func(o *idempotencyOptions) { o.scope = f }
}

// IdempotencyWait bounds how long a request waits for a concurrent request
// holding the same key before answering 409 (default 2s).
func IdempotencyWait(d time.Duration) IdempotencyOption {
	return func(o *idempotencyOptions) { o.wait = d }
}

// IdempotencyRequired makes unsafe requests without a key fail with 400.
func IdempotencyRequired() IdempotencyOption {
	return func(o *idempotencyOptions) { o.required = true }
}

// idempotencyCounted counts each request that carries a key in outcomes, by
// its outcome label (idempotencyOutcomes), once: at the claim of the key.
func idempotencyCounted(outcomes *prometheus.CounterVec) IdempotencyOption {
	return func(o *idempotencyOptions) { o.outcomes = outcomes }
}

func (o idempotencyOptions) count(outcome string) {
	if o.outcomes != nil {
		o.outcomes.WithLabelValues(outcome).Inc()
	}
}

// IdempotencyTx returns the transaction the middleware opened for this
// request. A handler that does its writes in it makes them commit exactly
// when the stored response does, which is what makes a retry after a lost
// answer safe; writes made elsewhere are not covered.
func IdempotencyTx(c echo.Context) (pgx.Tx, bool) {
	tx, ok := c.Get(idempotencyTxKey).(pgx.Tx)
	return tx, ok
}

// IdempotencyMiddleware makes POST, PUT, PATCH and DELETE requests that carry
// an Idempotency-Key header run at most once per (scope, key) for JSON APIs:
//
//   - the first request runs the handler in a transaction (IdempotencyTx)
//     that also stores the response, and commits both together;
//   - a retry with the same key and the same method, path and body gets the
//     stored status and body, with Idempotent-Replayed: true;
//   - the same key with a different request is 422 (queues.ErrIdempotencyConflict);
//   - a retry while the first is still running is 409 with Retry-After;
//   - if the commit fails the outcome is unknown: 503, and the client must
//     retry with the same key, which replays or runs the request once.
//
// Handler errors and 5xx answers roll back and are not stored, so they can
// be retried. Responses must be JSON (anything else is stored as a JSON
// string). pool is the caller's.
func IdempotencyMiddleware(pool *pgxpool.Pool, opts ...IdempotencyOption) echo.MiddlewareFunc {
	o := idempotencyOptions{wait: 2 * time.Second, maxBody: 1 << 20}
	for _, f := range opts {
		f(&o)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			switch req.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				return next(c)
			}
			key := req.Header.Get(IdempotencyKeyHeader)
			if key == "" {
				if o.required {
					return echo.NewHTTPError(http.StatusBadRequest, "an Idempotency-Key header is required")
				}
				return next(c)
			}
			if err := checkIdempotencyKey(key); err != nil {
				return err
			}
			body, err := io.ReadAll(io.LimitReader(req.Body, o.maxBody+1))
			if err != nil {
				return echo.NewHTTPError(http.StatusBadRequest, "read request body").SetInternal(err)
			}
			if int64(len(body)) > o.maxBody {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "request body too large for an idempotent request")
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			scope := c.Path()
			if o.scope != nil {
				scope = o.scope(c)
			}
			hash := queues.IdempotencyHash([]byte(req.Method), []byte(req.URL.Path), []byte(req.URL.RawQuery), body)
			return idempotentServe(c, next, pool, o, scope, key, hash)
		}
	}
}

// maxIdempotencyKey is the longest Idempotency-Key the key store takes.
const maxIdempotencyKey = 255

// checkIdempotencyKey refuses, with a 400 that says what is accepted, a key
// the key store would not take: longer than maxIdempotencyKey, or with a
// byte outside printable ASCII. Nothing is stored or retried for it.
func checkIdempotencyKey(key string) error {
	ok := len(key) <= maxIdempotencyKey
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] >= 0x20 && key[i] < 0x7f
	}
	if ok {
		return nil
	}
	return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(
		"the Idempotency-Key header (%d bytes) was refused: use 1 to %d printable ASCII characters, such as a UUID; nothing was run",
		len(key), maxIdempotencyKey))
}

func idempotentServe(c echo.Context, next echo.HandlerFunc, pool *pgxpool.Pool, o idempotencyOptions, scope, key string, hash []byte) error {
	ctx := c.Request().Context()
	tx, err := pool.Begin(ctx)
	if err != nil {
		o.count(idempotencyError)
		return echo.NewHTTPError(http.StatusServiceUnavailable, "database unavailable").SetInternal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	stored, err := queues.IdempotencyBeginTx(ctx, tx, scope, key, hash, o.wait)
	switch {
	case errors.Is(err, queues.ErrIdempotencyConflict):
		o.count(idempotencyMismatch)
		return echo.NewHTTPError(http.StatusUnprocessableEntity,
			"this Idempotency-Key was already used with a different request").SetInternal(err)
	case errors.Is(err, queues.ErrIdempotencyInProgress):
		o.count(idempotencyInProgress)
		c.Response().Header().Set("Retry-After", "1")
		return echo.NewHTTPError(http.StatusConflict,
			"a request with this Idempotency-Key is still in progress; retry later with the same key").SetInternal(err)
	case err != nil:
		o.count(idempotencyError)
		return echo.NewHTTPError(http.StatusServiceUnavailable, "idempotency store unavailable").SetInternal(err)
	}
	if stored != nil {
		o.count(idempotencyReplayed)
		tx.Rollback(ctx)
		c.Response().Header().Set(IdempotencyReplayedHeader, "true")
		return c.JSONBlob(stored.Code, stored.Value)
	}
	o.count(idempotencyNew)

	res := c.Response()
	rec := &idempotencyRecorder{header: res.Header(), code: http.StatusOK}
	orig := res.Writer
	res.Writer = rec
	c.Set(idempotencyTxKey, tx)
	herr := next(c)
	res.Writer = orig
	c.Set(idempotencyTxKey, nil)
	if herr != nil {
		return herr
	}
	if rec.code >= 500 {
		return flushRecorded(orig, rec)
	}
	stored2 := rec.body.Bytes()
	if !json.Valid(stored2) {
		stored2, _ = json.Marshal(rec.body.String())
	}
	if err := queues.IdempotencyCompleteTx(ctx, tx, scope, key, queues.IdempotencyResult{Code: rec.code, Value: stored2}); err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable, "store idempotent response").SetInternal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return echo.NewHTTPError(http.StatusServiceUnavailable,
			"commit outcome unknown; retry with the same Idempotency-Key").SetInternal(err)
	}
	return flushRecorded(orig, rec)
}

func flushRecorded(w http.ResponseWriter, rec *idempotencyRecorder) error {
	w.WriteHeader(rec.code)
	_, err := w.Write(rec.body.Bytes())
	return err
}

// idempotencyRecorder buffers a handler's answer until its transaction
// commits; headers go straight to the real response's header map.
type idempotencyRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *idempotencyRecorder) Header() http.Header         { return r.header }
func (r *idempotencyRecorder) WriteHeader(code int)        { r.code = code }
func (r *idempotencyRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }
