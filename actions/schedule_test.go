package actions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/testdb"
)

func scheduleState(t *testing.T, pool *pgxpool.Pool) string {
	return queryText(t, pool, `SELECT coalesce((SELECT spec || ':' || enabled || ':' || kind || ':' || payload::text
		FROM schedules WHERE name = 'archive-nightly'), 'none')`)
}

func createSchedule(t *testing.T, pool *pgxpool.Pool, enabled bool) {
	t.Helper()
	exec(t, pool, `INSERT INTO schedules (name, spec, kind, payload, enabled)
		VALUES ('archive-nightly', '0 3 * * *', 'archive_jobs', '{"older_than": "7d"}', $1)`, enabled)
}

func scheduleCases() []actionCase {
	named := map[string]any{"name": "archive-nightly"}
	return []actionCase{
		{
			name: "schedule.create", actor: operator, weaker: viewer, state: scheduleState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"name": "archive-nightly", "spec": "0 3 * * *", "kind": "archive_jobs",
					"payload": `{"older_than": "7d"}`, "enabled": "true"}
			},
		},
		{
			name: "schedule.update", actor: operator, weaker: viewer, state: scheduleState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				createSchedule(t, pool, true)
				return map[string]any{"name": "archive-nightly", "spec": "30 2 * * *"}
			},
		},
		{
			name: "schedule.enable", actor: operator, weaker: viewer, state: scheduleState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				createSchedule(t, pool, false)
				return named
			},
		},
		{
			name: "schedule.disable", actor: operator, weaker: viewer, state: scheduleState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				createSchedule(t, pool, true)
				return named
			},
		},
		{
			name: "schedule.run_now", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				createSchedule(t, pool, true)
				return named
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM jobs WHERE kind = 'archive_jobs'"))
			},
		},
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	r := newRunner(t, pool, actions.RunnerConfig{Now: func() time.Time { return now }})

	create := map[string]any{"name": "archive-nightly", "spec": "0 3 * * *", "kind": "archive_jobs", "payload": map[string]any{"older_than": "7d"}}
	dry, err := r.Run(ctx, operator, "schedule.create", actions.Request{Params: create, DryRun: true})
	require.NoError(t, err)
	pv := dry.Preview.(actions.SchedulePreview)
	require.Nil(t, pv.Before)
	require.Len(t, pv.NextRuns, 5)
	require.Equal(t, time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC), pv.NextRuns[0])
	require.Equal(t, time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), pv.NextRuns[4])

	_, err = r.Run(ctx, operator, "schedule.create", actions.Request{Params: create, Reason: reason})
	require.NoError(t, err)
	_, err = r.Run(ctx, operator, "schedule.create", actions.Request{Params: create, Reason: reason})
	require.ErrorIs(t, err, actions.ErrInvalid)
	require.ErrorContains(t, err, "already exists")

	for _, bad := range []map[string]any{
		{"name": "x", "spec": "every night", "kind": "archive_jobs"},
		{"name": "x", "spec": "61 * * * *", "kind": "archive_jobs"},
		{"name": "x", "spec": "@daily", "kind": "drop_tables"},
		{"name": "Bad Name", "spec": "@daily", "kind": "archive_jobs"},
		{"name": "x", "spec": "@daily", "kind": "archive_jobs", "payload": "[1]"},
	} {
		_, err = r.Run(ctx, operator, "schedule.create", actions.Request{Params: bad, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid, "%v", bad)
	}

	out, err := r.Run(ctx, operator, "schedule.disable", actions.Request{Params: map[string]any{"name": "archive-nightly"}, Reason: reason})
	require.NoError(t, err)
	require.Empty(t, out.Preview.(actions.SchedulePreview).NextRuns, "a disabled schedule has no next runs")
	require.False(t, out.Result.(actions.ScheduleResult).Schedule.Enabled)

	out, err = r.Run(ctx, operator, "schedule.run_now", actions.Request{Params: map[string]any{"name": "archive-nightly"}, Reason: reason})
	require.NoError(t, err)
	job := out.Result.(actions.RunNowResult).Job
	require.Equal(t, "archive_jobs", job.Kind)
	require.Equal(t, "maintenance", job.Queue)
	require.JSONEq(t, `{"older_than": "7d"}`, queryText(t, pool, "SELECT payload::text FROM jobs WHERE id = $1", job.ID))
	require.Equal(t, job.ID, queryInt(t, pool, "SELECT last_job_id FROM schedules WHERE name = 'archive-nightly' AND last_run_at IS NOT NULL"),
		"the manual run is the schedule's last run")
	require.Equal(t, fmt.Sprintf("Enqueued job %d (`archive_jobs` in queue `maintenance`) from schedule `archive-nightly`", job.ID), out.ResultSummary)

	_, err = r.Run(ctx, operator, "schedule.run_now", actions.Request{Params: map[string]any{"name": "archive-nightly"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrGuard, "one manual run at a time")

	_, err = r.Run(ctx, operator, "schedule.update", actions.Request{Params: map[string]any{"name": "nope"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrNotFound)
}
