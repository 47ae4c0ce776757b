package diagnostics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues"
)

func TestQueueAndOutboxFindings(t *testing.T) {
	ctx, url, db := freshPool(t)
	seed := []string{
		// Expired leases: three running jobs whose lease ran out a minute ago.
		`INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, started_at, attempts)
		 SELECT 'lease-q', 'k', 'running', 'worker-1', now() - interval '1 minute', now() - interval '2 minutes', 1
		 FROM generate_series(1, 3)`,
		// A dead-letter burst: 12 timeouts and 2 others in the last minute,
		// plus 50 old ones outside the window.
		`INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		 SELECT 'dead-q', 'k', 'dead', 'TimeoutError', 'context deadline exceeded', now() - interval '30 seconds', 8
		 FROM generate_series(1, 12)`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'dead-q', 'k', 'dead', 'ValidationError', now() - interval '10 seconds', 8 FROM generate_series(1, 2)`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'old-dead-q', 'k', 'dead', 'TimeoutError', now() - interval '2 days', 8 FROM generate_series(1, 50)`,
		// Dead letters without an error class form their own group.
		`INSERT INTO jobs (queue, kind, status, finished_at, attempts)
		 SELECT 'nullclass-q', 'k', 'dead', now() - interval '1 minute', 8 FROM generate_series(1, 3)`,
		// A backlog: ready for ten minutes, nobody working it.
		`INSERT INTO jobs (queue, kind, available_at)
		 SELECT 'backlog-q', 'k', now() - interval '10 minutes' FROM generate_series(1, 20)`,
		// Scheduled for later: not a backlog.
		`INSERT INTO jobs (queue, kind, available_at)
		 SELECT 'later-q', 'k', now() + interval '1 hour' FROM generate_series(1, 5)`,
		// A paused queue with work waiting.
		`INSERT INTO queue_settings (queue, paused, updated_by) VALUES ('paused-q', true, 'alice')`,
		`INSERT INTO jobs (queue, kind) SELECT 'paused-q', 'k' FROM generate_series(1, 4)`,
		// A worker alive on lease-q only.
		`INSERT INTO workers (id, host, pid, queues) VALUES ('w1', 'host-a', 4242, '{lease-q}')`,
		`INSERT INTO workers (id, host, pid, queues, last_seen_at) VALUES ('w2', 'host-b', 4343, '{backlog-q}', now() - interval '1 hour')`,
		// Outbox: five events pending for ten minutes, one dead.
		`INSERT INTO outbox_events (topic, event_type, payload, available_at, created_at)
		 SELECT 'orders', 'created', '{}', now() - interval '10 minutes', now() - interval '10 minutes' FROM generate_series(1, 5)`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, dead_at, attempts)
		 VALUES ('orders', 'created', '{}', 'dead', now(), 16)`,
	}
	for _, q := range seed {
		_, err := db.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	require.Empty(t, findingsWith(rep, findings.CodeUnavailable), "%v", codes(rep))

	f, ok := findingFor(rep, findings.CodeExpiredLeases, "queue", "lease-q")
	require.True(t, ok, "%v", codes(rep))
	require.EqualValues(t, 3, f.Subject["count"])
	require.Equal(t, "/runbook/rb-f", f.Runbook)

	f, ok = findingFor(rep, findings.CodeDeadLetters, "queue", "dead-q")
	require.True(t, ok, "%v", codes(rep))
	require.EqualValues(t, 14, f.Subject["count"])
	require.Equal(t, "TimeoutError", f.Subject["error_class"])
	require.Equal(t, []string{"deadletters.requeue"}, f.Actions)
	_, ok = findingFor(rep, findings.CodeDeadLetters, "queue", "old-dead-q")
	require.False(t, ok, "old dead letters are not a burst")

	f, ok = findingFor(rep, findings.CodeQueueBacklog, "queue", "backlog-q")
	require.True(t, ok, "%v", codes(rep))
	require.EqualValues(t, 20, f.Subject["ready"])
	require.GreaterOrEqual(t, f.Subject["oldest_ready_seconds"].(float64), 590.0)
	_, ok = findingFor(rep, findings.CodeQueueBacklog, "queue", "later-q")
	require.False(t, ok, "jobs scheduled for later are not a backlog")

	_, ok = findingFor(rep, findings.CodeWorkersNoneAlive, "queue", "backlog-q")
	require.True(t, ok, "w2's heartbeat is an hour old: %v", codes(rep))
	_, ok = findingFor(rep, findings.CodeWorkersNoneAlive, "queue", "paused-q")
	require.False(t, ok, "a paused queue needs no worker")

	f, ok = findingFor(rep, findings.CodeQueuePaused, "queue", "paused-q")
	require.True(t, ok, "%v", codes(rep))
	require.Equal(t, findings.SeverityInfo, f.Severity)
	require.Equal(t, []string{"queue.resume"}, f.Actions)

	ob := findingsWith(rep, findings.CodeOutboxBacklog)
	require.Len(t, ob, 1, "%v", codes(rep))
	require.EqualValues(t, 5, ob[0].Subject["pending"])
	require.GreaterOrEqual(t, ob[0].Subject["oldest_pending_seconds"].(float64), 590.0)
	require.Equal(t, "/runbook/rb-h", ob[0].Runbook)
	od := findingsWith(rep, findings.CodeOutboxDead)
	require.Len(t, od, 1)
	require.EqualValues(t, 1, od[0].Subject["count"])

	// The panels agree with the findings.
	qh := d.QueueHealth(ctx)
	require.NoError(t, qh.Err)
	byQueue := map[string]diagnostics.QueueStat{}
	for _, q := range qh.Rows {
		byQueue[q.Queue] = q
	}
	require.EqualValues(t, 5, byQueue["later-q"].Scheduled)
	require.EqualValues(t, 0, byQueue["later-q"].Ready)
	require.EqualValues(t, 3, byQueue["lease-q"].ExpiredLeases)
	// A queue with nothing ready and nothing dead counts zeros, not the cap
	// (least() ignores NULLs).
	require.Zero(t, byQueue["lease-q"].Ready)
	require.Zero(t, byQueue["lease-q"].Scheduled)
	require.Zero(t, byQueue["lease-q"].DeadRecent)
	_, leaseQDead := findingFor(rep, findings.CodeDeadLetters, "queue", "lease-q")
	require.False(t, leaseQDead, "no dead-letter finding for a queue without dead letters")
	require.EqualValues(t, 50, byQueue["old-dead-q"].Dead)
	require.EqualValues(t, 0, byQueue["old-dead-q"].DeadRecent)
	require.True(t, byQueue["paused-q"].Paused)
	dl := d.DeadLetters(ctx)
	require.NoError(t, dl.Err)
	require.Equal(t, "dead-q", dl.Rows[0].Queue)
	require.Equal(t, "TimeoutError", dl.Rows[0].ErrorClass)
	require.EqualValues(t, 12, dl.Rows[0].DeadRecent)

	require.EqualValues(t, 3, byQueue["nullclass-q"].Dead)
	require.EqualValues(t, 3, byQueue["nullclass-q"].DeadRecent)
	found := false
	for _, g := range dl.Rows {
		if g.Queue == "nullclass-q" {
			require.Equal(t, "", g.ErrorClass)
			require.EqualValues(t, 3, g.Dead)
			found = true
		}
	}
	require.True(t, found, "the unclassified group is listed")

	// Jobs scheduled for later are counted up to the cap; ready and dead
	// totals are exact whatever the cap (the engine's counters).
	capped, err := queues.QueueHealth(ctx, db, diagnostics.QueueParams{CountCap: 3})
	require.NoError(t, err)
	for _, q := range capped {
		if q.Queue == "backlog-q" {
			require.EqualValues(t, 20, q.Ready, "ready totals are exact")
		}
		if q.Queue == "later-q" {
			require.EqualValues(t, 3, q.Scheduled, "5 scheduled, counted up to 3")
		}
		if q.Queue == "old-dead-q" {
			require.EqualValues(t, 50, q.Dead, "dead totals are exact")
		}
	}
	groups, err := diagnostics.DeadLetters(ctx, db, diagnostics.QueueParams{CountCap: 5, DeadWindow: time.Hour})
	require.NoError(t, err)
	require.EqualValues(t, 5, groups[0].DeadRecent)

	// Findings come worst first.
	rank := map[string]int{"critical": 0, "warning": 1, "info": 2}
	for i := 1; i < len(rep.Findings); i++ {
		require.LessOrEqual(t, rank[rep.Findings[i-1].Severity], rank[rep.Findings[i].Severity])
	}
}

// TestRoundDeadLettersShared: a findings round reads the dead-letter groups
// once, with the queue health, and its dead-letter section is what the
// dead-letter panel's own statement returns: the same groups in the same
// order (most recent burst first, not queue order), and the per-queue sums
// in the queue section.
func TestRoundDeadLettersShared(t *testing.T) {
	ctx, url, db := freshPool(t)
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'a-q', 'k', 'dead', 'E' || (g % 2), now() - interval '1 minute', 8 FROM generate_series(1, 3) AS g`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'z-q', 'k', 'dead', 'Burst', now() - interval '10 seconds', 8 FROM generate_series(1, 9)`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at, attempts)
		 SELECT 'm-q', 'k', 'dead', 'Old', now() - interval '3 days', 8 FROM generate_series(1, 40)`,
	} {
		_, err := db.Exec(ctx, q)
		require.NoError(t, err)
	}
	th := diagnostics.DefaultThresholds()
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	r := d.Round(ctx)
	require.Empty(t, r.Unavailable)
	want, err := diagnostics.DeadLetters(ctx, db, diagnostics.QueueParams{DeadWindow: th.DeadLetterWindow})
	require.NoError(t, err)
	require.Equal(t, "z-q", want[0].Queue, "the burst comes first")
	require.Equal(t, want, r.DeadLetters)
	dead := map[string]int64{}
	for _, q := range r.Queues {
		dead[q.Queue] = q.Dead
	}
	require.Equal(t, map[string]int64{"a-q": 3, "z-q": 9, "m-q": 40}, dead)
}
