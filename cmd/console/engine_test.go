package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues/webhookpub"
)

// cancelOn is a log handler that cancels a context when a record with
// message msg is written: a way to end ctx at an exact point of a start.
type cancelOn struct {
	slog.Handler
	msg    string
	cancel context.CancelFunc
}

func (h cancelOn) Enabled(context.Context, slog.Level) bool { return true }

func (h cancelOn) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.cancel()
	}
	return h.Handler.Handle(ctx, r)
}

func (h cancelOn) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.Handler = h.Handler.WithAttrs(attrs)
	return h
}

// TestEngineStoppedWhileStarting: a SIGTERM (ctx ending) after the workers
// started but before the scheduler and the relay did gives back the engine
// as far as it got, for the caller's stop path to drain, instead of failing
// the start with "context canceled" while jobs already run: the worker then
// exits as after any drain.
func TestEngineStoppedWhileStarting(t *testing.T) {
	url := testdb.URL(t)
	for _, scheduler := range []bool{true, false} { // the relay is next after the workers or after the scheduler
		ctx, cancel := context.WithCancel(context.Background())
		logger := slog.New(cancelOn{Handler: slog.DiscardHandler, msg: "queue client started", cancel: cancel})
		relay, err := webhookpub.New(webhookpub.Config{URL: "http://127.0.0.1:9/events"}) // never started
		require.NoError(t, err)
		e, err := startEngine(ctx, url, engineConfig{Queues: []string{"starting"}, Concurrency: 2, Scheduler: scheduler, Relay: relay},
			prometheus.NewRegistry(), logger)
		require.NoError(t, err, "a stop while starting is not a failed start (scheduler %v)", scheduler)
		require.Error(t, ctx.Err(), "ctx ended during the start")
		require.NotNil(t, e.client)
		require.Nil(t, e.scheduler, "the scheduler started after ctx ended")
		require.Nil(t, e.relay, "the relay started after ctx ended")
		require.NoError(t, e.stop())
	}
}
