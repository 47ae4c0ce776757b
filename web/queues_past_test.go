package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/views"
)

// durations are the ages a page computes from its clock ("4m12s ago", "in
// 3s", "oldest waited 12s"): a page drawn a moment after the sample reads
// them a few seconds older.
var durations = regexp.MustCompile(`(in )?\b\d+(ms|s|m\d\ds|h\d\dm|d\d+h)\b( ago)?`)

// sameReading is v as JSON with its ages blanked out.
func sameReading(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	require.NoError(t, err)
	return durations.ReplaceAllString(string(b), "AGE")
}

// The queues, outbox and workers pages at a recorded moment show the
// numbers the live pages showed at that moment: the past view is the live
// view of the recorded rows, nothing mapped in between. Nothing changes
// between the sample and the live read here, so every count, state and
// setting must read the same; only the ages move on.
func TestPastViewsShowTheLiveNumbers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	seedQueues(t, e)
	e.exec(t, `INSERT INTO jobs (queue, kind, available_at) SELECT 'email', 'send', now() + interval '1 hour' FROM generate_series(1, 2)`)
	for _, q := range []string{
		`INSERT INTO outbox_events (topic, event_type, payload) SELECT 't', 'e', '{}' FROM generate_series(1, 10)`,
		`INSERT INTO outbox_events (topic, event_type, payload, available_at) SELECT 't', 'e', '{}', now() + interval '1 hour' FROM generate_series(1, 4)`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, lease_owner, lease_until, lease_generation, accepted_at)
			SELECT 't', 'e', '{}', 'inflight', 'r', now() + interval '1 hour', 1, CASE WHEN g = 1 THEN now() END FROM generate_series(1, 2) g`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, last_error, dead_at) SELECT 't', 'e', '{}', 'dead', 'x', now() FROM generate_series(1, 3)`,
		`UPDATE relay_settings SET paused = true, updated_by = 'olga', updated_at = now() WHERE singleton`,
	} {
		e.exec(t, q)
	}

	ctx := t.Context()
	d := e.srv.cfg.Diagnostics
	rec := recorder.New(d, e.srv.cfg.Pool, recorder.Config{Interval: time.Hour, Name: "test-console"})
	e.srv.cfg.Recorder = rec
	smp := sampler.New(d, sampler.Config{Interval: time.Hour}).SampleNow(ctx)
	require.NotEmpty(t, smp.Queues)
	require.NotNil(t, smp.Outbox)
	require.Len(t, smp.Workers, 2)
	require.NoError(t, rec.Record(ctx, smp))
	at := "at=" + url.QueryEscape(smp.At.Add(time.Second).Format(time.RFC3339Nano))

	t.Run("QueueList", func(t *testing.T) {
		var live, past views.QueuesPage
		require.Equal(t, http.StatusOK, c.getJSON("/queues", &live))
		require.Equal(t, http.StatusOK, c.getJSON("/queues?"+at, &past))
		require.True(t, past.History)
		require.Len(t, live.Trends, 2, "email and billing")
		require.Equal(t, sameReading(t, live.Trends), sameReading(t, past.Trends))
	})
	t.Run("QueueDetail", func(t *testing.T) {
		for _, name := range []string{"email", "billing"} {
			var live, past views.QueueDetail
			require.Equal(t, http.StatusOK, c.getJSON("/queues/"+name, &live))
			require.Equal(t, http.StatusOK, c.getJSON("/queues/"+name+"?"+at, &past))
			require.NotEmpty(t, past.History)
			require.Empty(t, past.Missing)
			require.Equal(t, sameReading(t, live.Counts), sameReading(t, past.Counts), name)
			require.Equal(t, sameReading(t, live.Settings), sameReading(t, past.Settings), name)
			require.Equal(t, sameReading(t, live.Trends), sameReading(t, past.Trends), name)
			require.Equal(t, sameReading(t, live.Workers.Rows), sameReading(t, past.Workers.Rows), name)
		}
	})
	t.Run("Outbox", func(t *testing.T) {
		var live, past views.OutboxPage
		require.Equal(t, http.StatusOK, c.getJSON("/outbox", &live))
		require.Equal(t, http.StatusOK, c.getJSON("/outbox?"+at, &past))
		require.NotEmpty(t, past.History)
		require.Len(t, past.States, 4, "a sample that carries the published estimate shows it")
		require.Equal(t, sameReading(t, live.States), sameReading(t, past.States))
		require.Equal(t, sameReading(t, live.Relay[:1]), sameReading(t, past.Relay))
	})
	t.Run("Workers", func(t *testing.T) {
		var live, past views.WorkersPage
		require.Equal(t, http.StatusOK, c.getJSON("/workers", &live))
		require.Equal(t, http.StatusOK, c.getJSON("/workers?"+at, &past))
		require.NotEmpty(t, past.History)
		require.Empty(t, past.Missing)
		require.Equal(t, 1, past.Live)
		require.Equal(t, 1, past.Stale)
		live.GeneratedAt, past.GeneratedAt, past.History = "", "", ""
		require.Equal(t, sameReading(t, live), sameReading(t, past))
	})
}

// oldSample is a flight-recorder document as consoles recorded it before
// the engine's rows carried their count cap, the published estimate and
// the workers: the past views still read it.
const oldSample = `{
 "queues": [{"queue": "email", "ready": 3, "scheduled": 2, "oldest_ready_at": "2026-12-01T09:59:00Z",
   "oldest_ready_seconds": 60, "running": 2, "expired_leases": 1, "oldest_expired_lease": "2026-12-01T09:59:30Z",
   "dead": 5, "dead_recent": 1, "paused": true, "max_workers": 4, "rate_per_second": 2.5,
   "settings_updated_by": "olga", "settings_updated_at": "2026-12-01T09:00:00Z"}],
 "outbox": {"pending": 10, "pending_later": 4, "oldest_pending_at": "2026-12-01T09:58:00Z",
   "oldest_pending_seconds": 120, "inflight": 2, "expired_leases": 0, "dead": 3,
   "last_dead_at": "2026-12-01T09:50:00Z", "relay_paused": false, "accepted_unmarked": 1,
   "oldest_accepted_at": "2026-12-01T09:57:00Z", "accepted_unmarked_ids": [7]},
 "findings": []
}`

// A sample recorded in the older shape reads in the past views: its
// counts where they were, what it did not keep said so.
func TestPastViewsReadOldSamples(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	sampled := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	e.exec(t, `INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc) VALUES ($1, 'old-console', 1, $2::jsonb)`, sampled, oldSample)
	at := "at=" + url.QueryEscape(sampled.Add(time.Second).Format(time.RFC3339))

	var q views.QueueDetail
	require.Equal(t, http.StatusOK, c.getJSON("/queues/email?"+at, &q))
	require.Empty(t, q.Missing)
	facts := map[string]string{}
	for _, f := range append(q.Counts, q.Settings...) {
		facts[f.Label] = f.Value
	}
	require.Equal(t, "5", facts["Ready"], "ready now plus scheduled")
	require.Equal(t, "3", facts["Due now"], "below the default cap: exact")
	require.Equal(t, "1m00s", facts["Oldest due ready"])
	require.Equal(t, "1", facts["Expired leases"])
	require.Equal(t, "5", facts["Dead"])
	require.Equal(t, "4", facts["Max workers"])
	require.Equal(t, "1h00m ago by olga", facts["Changed"])
	require.Contains(t, q.Workers.Missing, "Not recorded", "the old sample kept no workers")

	var o views.OutboxPage
	require.Equal(t, http.StatusOK, c.getJSON("/outbox?"+at, &o))
	require.Empty(t, o.Missing)
	require.Len(t, o.States, 3, "no published estimate in the old sample")
	require.Equal(t, "14", o.States[0].Value)
	require.Equal(t, "10 due · oldest waited 2m00s", o.States[0].Meta)

	var w views.WorkersPage
	require.Equal(t, http.StatusOK, c.getJSON("/workers?"+at, &w))
	require.Contains(t, w.Missing, "the workers were not recorded in the sample of 10:00:00 UTC")
}
