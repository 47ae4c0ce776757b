package actions_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
)

// raceCase is two settings changes that must both land when they race.
type raceCase struct {
	name   string
	target string
	// reset puts the target back to its starting state for trial i.
	reset func(t *testing.T, pool *pgxpool.Pool, i int)
	// first and second are the racing runs of trial i.
	first, second func(i int) (string, map[string]any)
	// want is the stored state trial i must end in, as state renders it.
	want func(i int) string
	// state renders the stored settings; stateOf renders an audit event's
	// result the same way.
	state   string
	stateOf string
}

// TestConcurrentSettingsChangesBothLand races two operators changing the
// same settings, many times: both changes must be in the final row, and the
// audit trail's newest result must be that row, every time.
func TestConcurrentSettingsChangesBothLand(t *testing.T) {
	t.Parallel()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	const trials = 12

	cases := []raceCase{{
		name:   "QueuePauseAndThrottle",
		target: "queue:race",
		reset: func(t *testing.T, pool *pgxpool.Pool, i int) {
			exec(t, pool, "DELETE FROM queue_settings WHERE queue = 'race'")
			if i%2 == 1 { // half the trials start from an existing row
				exec(t, pool, "INSERT INTO queue_settings (queue) VALUES ('race')")
			}
		},
		first: func(int) (string, map[string]any) { return "queue.pause", map[string]any{"queue": "race"} },
		second: func(i int) (string, map[string]any) {
			return "queue.throttle", map[string]any{"queue": "race", "max_workers": i + 1}
		},
		want:    func(i int) string { return fmt.Sprintf("true:%d", i+1) },
		state:   "SELECT paused || ':' || coalesce(max_workers::text, '-') FROM queue_settings WHERE queue = 'race'",
		stateOf: "(result -> 'settings' ->> 'paused') || ':' || coalesce(result -> 'settings' ->> 'max_workers', '-')",
	}, {
		name:   "RelayPauseAndThrottle",
		target: "relay",
		reset: func(t *testing.T, pool *pgxpool.Pool, _ int) {
			exec(t, pool, "UPDATE relay_settings SET paused = false, batch_size = NULL, rate_per_second = NULL")
		},
		first: func(int) (string, map[string]any) { return "relay.pause", nil },
		second: func(i int) (string, map[string]any) {
			return "relay.throttle", map[string]any{"batch_size": i + 1}
		},
		want:    func(i int) string { return fmt.Sprintf("true:%d", i+1) },
		state:   "SELECT paused || ':' || coalesce(batch_size::text, '-') FROM relay_settings",
		stateOf: "(result -> 'settings' ->> 'paused') || ':' || coalesce(result -> 'settings' ->> 'batch_size', '-')",
	}, {
		name:   "ScheduleDisableAndUpdate",
		target: "schedule:race",
		reset: func(t *testing.T, pool *pgxpool.Pool, _ int) {
			exec(t, pool, "DELETE FROM schedules WHERE name = 'race'")
			exec(t, pool, "INSERT INTO schedules (name, spec, kind) VALUES ('race', '@daily', 'archive_jobs')")
		},
		first: func(int) (string, map[string]any) { return "schedule.disable", map[string]any{"name": "race"} },
		second: func(i int) (string, map[string]any) {
			return "schedule.update", map[string]any{"name": "race", "spec": fmt.Sprintf("@every %dm", i+1)}
		},
		want:    func(i int) string { return fmt.Sprintf("false:@every %dm", i+1) },
		state:   "SELECT enabled || ':' || spec FROM schedules WHERE name = 'race'",
		stateOf: "(result -> 'schedule' ->> 'enabled') || ':' || (result -> 'schedule' ->> 'spec')",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			lost := 0
			for i := range trials {
				c.reset(t, pool, i)
				start := make(chan struct{})
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for k, run := range []func(int) (string, map[string]any){c.first, c.second} {
					wg.Add(1)
					go func() {
						defer wg.Done()
						name, params := run(i)
						<-start
						_, errs[k] = r.Run(ctx, operator, name, actions.Request{Params: params, Reason: reason})
					}()
				}
				close(start)
				wg.Wait()
				require.NoError(t, errs[0], "trial %d", i)
				require.NoError(t, errs[1], "trial %d", i)

				got := queryText(t, pool, c.state)
				if got != c.want(i) {
					lost++
				}
				var outcomes []string
				rows, err := pool.Query(ctx, "SELECT outcome, "+c.stateOf+
					" FROM audit_events WHERE target = $1 ORDER BY seq DESC LIMIT 2", c.target)
				require.NoError(t, err)
				var newest string
				for rows.Next() {
					var outcome, st string
					require.NoError(t, rows.Scan(&outcome, &st))
					if len(outcomes) == 0 {
						newest = st
					}
					outcomes = append(outcomes, outcome)
				}
				require.NoError(t, rows.Err())
				require.Equal(t, []string{"succeeded", "succeeded"}, outcomes, "trial %d", i)
				require.Equal(t, got, newest, "trial %d: the audit trail's last result is the stored row", i)
			}
			require.Zero(t, lost, "a racing change was lost in %d of %d trials", lost, trials)
		})
	}
}
