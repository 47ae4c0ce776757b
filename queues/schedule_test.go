package queues

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestScheduleNextRuns(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"0 * * * *", []string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z"}},
		{"@daily", []string{"2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z"}},
		{"*/15 9-17 * * MON-FRI", []string{"2026-03-02T09:00:00Z", "2026-03-02T09:15:00Z"}},
		{"@every 1s", []string{"2026-03-01T10:30:01Z", "2026-03-01T10:30:02Z"}},
		{"30 * * * * *", []string{"2026-03-01T10:30:30Z", "2026-03-01T10:31:30Z"}},
	} {
		got, err := NextRuns(tc.spec, from, 2)
		require.NoError(t, err, tc.spec)
		var s []string
		for _, g := range got {
			s = append(s, g.Format(time.RFC3339))
		}
		require.Equal(t, tc.want, s, tc.spec)
	}
	for _, bad := range []string{"", "* * *", "61 * * * *", "@sometimes", "a b c d e"} {
		_, err := NextRuns(bad, from, 1)
		require.ErrorIs(t, err, ErrInvalidSpec, bad)
	}
}

func FuzzScheduleParseSpec(f *testing.F) {
	for _, s := range []string{"0 * * * *", "@daily", "@every 1s", "*/5 * * * * *", "CRON_TZ=Europe/Paris 0 9 * * *", "0 0 30 2 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		runs, err := NextRuns(spec, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3)
		if err != nil {
			return
		}
		for i := 1; i < len(runs); i++ {
			if !runs[i].After(runs[i-1]) {
				t.Fatalf("%q: runs not increasing: %v", spec, runs)
			}
		}
	})
}

func TestScheduleCRUD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	s, err := ScheduleCreate(ctx, tx, ScheduleParams{Name: "nightly-archive", Spec: "@daily", Kind: KindArchiveJobs,
		Payload: map[string]string{"retention": "168h"}, By: "alice"})
	require.NoError(t, err)
	require.True(t, s.Enabled)
	require.Equal(t, "maintenance", s.Queue)
	require.NotNil(t, s.NextRunAt)
	require.Equal(t, 0, s.NextRunAt.Hour())

	_, err = ScheduleCreate(ctx, tx, ScheduleParams{Name: "bad", Spec: "every day", Kind: "noop"})
	require.ErrorIs(t, err, ErrInvalidSpec)

	s, err = ScheduleUpdate(ctx, tx, ScheduleParams{Name: "nightly-archive", Spec: "0 3 * * *", Kind: KindArchiveJobs, Disabled: true, By: "bob"})
	require.NoError(t, err)
	require.False(t, s.Enabled)
	require.Equal(t, 3, s.NextRunAt.Hour())
	require.Equal(t, "bob", *s.UpdatedBy)

	got, err := ScheduleGet(ctx, tx, "nightly-archive")
	require.NoError(t, err)
	require.Equal(t, "0 3 * * *", got.Spec)
	_, err = ScheduleGet(ctx, tx, "nope")
	require.ErrorIs(t, err, ErrNotFound)
	_, err = ScheduleUpdate(ctx, tx, ScheduleParams{Name: "nope", Spec: "@daily", Kind: "noop"})
	require.ErrorIs(t, err, ErrNotFound)
	list, err := ScheduleList(ctx, tx)
	require.NoError(t, err)
	require.Len(t, list, 1)
}

// Three schedulers (as three processes would) share one schedule that fires
// every second. The leader is killed mid-way by terminating its backend; a
// follower takes over, and every tick is enqueued exactly once.
func TestSchedulerThreeInstancesLeaderKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := ScheduleCreate(ctx, pool, ScheduleParams{Name: "every-second", Spec: "@every 1s", Kind: "noop", Queue: "ticks"})
	require.NoError(t, err)

	var ss []*Scheduler
	for i := range 3 {
		s, err := NewScheduler(pool, SchedulerConfig{ID: "s" + string(rune('a'+i)), Interval: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, s.Start(ctx))
		t.Cleanup(s.Stop)
		ss = append(ss, s)
	}
	leader := func() *Scheduler {
		var l *Scheduler
		n := 0
		for _, s := range ss {
			if s.IsLeader() {
				l = s
				n++
			}
		}
		require.LessOrEqual(t, n, 1, "two leaders at once")
		if n == 0 {
			return nil
		}
		return l
	}
	obEventually(t, 10*time.Second, "a leader", func() bool { return leader() != nil })
	first := leader()
	ticks := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'ticks'").Scan(&n))
		return n
	}
	obEventually(t, 10*time.Second, "four ticks", func() bool { return ticks() >= 4 })

	// Kill the leader's session: its advisory lock goes with it.
	pid := first.pid.Load()
	_, err = pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
	require.NoError(t, err)
	first.Stop()
	obEventually(t, 10*time.Second, "a new leader", func() bool { l := leader(); return l != nil && l != first })
	obEventually(t, 15*time.Second, "ten ticks", func() bool { return ticks() >= 10 })
	for _, s := range ss {
		s.Stop()
	}

	rows, err := pool.Query(ctx, "SELECT dedupe_key FROM jobs WHERE queue = 'ticks' ORDER BY id")
	require.NoError(t, err)
	var keys []string
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	var times []time.Time
	seen := map[string]bool{}
	for _, k := range keys {
		require.False(t, seen[k], "tick %s enqueued twice", k)
		seen[k] = true
		ts, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(k, "schedule:every-second:"))
		require.NoError(t, err)
		times = append(times, ts)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := 1; i < len(times); i++ {
		require.Equal(t, time.Second, times[i].Sub(times[i-1]), "gap or overlap between ticks %s and %s", times[i-1], times[i])
	}
	s, err := ScheduleGet(ctx, pool, "every-second")
	require.NoError(t, err)
	require.Equal(t, times[len(times)-1], s.LastRunAt.UTC())
	require.Equal(t, times[len(times)-1].Add(time.Second), s.NextRunAt.UTC())
}
