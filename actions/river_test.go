package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/testdb"
)

type riverSendArgs struct {
	To string `json:"to"`
}

func (riverSendArgs) Kind() string { return "send" }

// riverJob migrates River's schema on pool (once is enough: River's
// migrator skips what is applied), inserts a job of kind send into queue
// through River's client and, when state is not available, puts it there
// with the last error given, as River's executor would have left it.
func riverJob(t *testing.T, pool *pgxpool.Pool, queue, state, lastError string) int64 {
	t.Helper()
	ctx := context.Background()
	riverSchema(t, pool)
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{Logger: testdb.RiverQuiet})
	require.NoError(t, err)
	res, err := c.Insert(ctx, riverSendArgs{To: "a@example.com"}, &riverqueue.InsertOpts{Queue: queue, MaxAttempts: 3})
	require.NoError(t, err)
	if state != "available" {
		exec(t, pool, `UPDATE river_job SET state = $2::river_job_state, attempt = 3, attempted_at = now(),
			finalized_at = CASE WHEN $2 IN ('discarded', 'cancelled', 'completed') THEN now() END,
			errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 3, 'error', $3::text, 'trace', '')]
			WHERE id = $1`, res.Job.ID, state, lastError)
	}
	return res.Job.ID
}

// riverQueue has River record queue in river_queue (as a client working it
// does at start), paused or not.
func riverQueue(t *testing.T, pool *pgxpool.Pool, queue string, paused bool) {
	t.Helper()
	riverSchema(t, pool)
	exec(t, pool, `INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at)
		VALUES ($1, now(), '{}', CASE WHEN $2 THEN now() END, now())`, queue, paused)
}

// riverSchema migrates River's schema on pool's database and, where the
// console's roles exist (a runtime database), grants them River's tables
// as `console roles sql` does after River's migrations.
func riverSchema(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testdb.RiverMigrate(t, pool)
	if queryInt(t, pool, "SELECT count(*) FROM pg_roles WHERE rolname IN ('console_monitor', 'console_operator')") == 2 {
		exec(t, pool, actions.RiverGrantsSQL())
	}
}

func riverStates(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT coalesce(string_agg(id || ':' || state || ':' || max_attempts, ',' ORDER BY id), '') FROM river_job").Scan(&s))
	return s
}

func riverQueueState(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT coalesce(string_agg(name || ':' || (paused_at IS NOT NULL), ','), '') FROM river_queue").Scan(&s))
	return s
}

// riverCases are the contract cases of the River actions.
func riverCases() []actionCase {
	return []actionCase{
		{
			name: "river.retry", actor: operator, weaker: viewer, state: riverStates,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				riverJob(t, pool, "email", "discarded", "smtp 554: refused")
				return map[string]any{"queue": "email", "error_class": "smtp ?: refused"}
			},
		},
		{
			name: "river.cancel", actor: operator, weaker: viewer, state: riverStates,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"ids": fmt.Sprint(riverJob(t, pool, "email", "available", ""))}
			},
		},
		{
			name: "river.queue_pause", actor: operator, weaker: viewer, state: riverQueueState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				riverQueue(t, pool, "email", false)
				return map[string]any{"queue": "email"}
			},
		},
		{
			name: "river.queue_resume", actor: operator, weaker: viewer, state: riverQueueState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				riverQueue(t, pool, "email", true)
				return map[string]any{"queue": "email"}
			},
		},
	}
}

// Retrying a class of discarded River jobs goes through River's JobRetry:
// the class's jobs are available again with one more attempt allowed, the
// other class stays discarded, and the audit row names every job retried.
func TestRiverRetryClass(t *testing.T) {
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	a1 := riverJob(t, pool, "email", "discarded", "smtp 554: refused")
	a2 := riverJob(t, pool, "email", "discarded", "smtp 550: refused")
	b := riverJob(t, pool, "email", "discarded", "template missing")
	other := riverJob(t, pool, "sms", "discarded", "smtp 554: refused")

	out, err := r.Run(ctx, operator, "river.retry", actions.Request{
		Params: map[string]any{"queue": "email", "error_class": "smtp ?: refused"}, Reason: reason})
	require.NoError(t, err)
	require.Contains(t, out.Summary, "Retry 2 River jobs")

	var state string
	var maxAttempts int
	for _, id := range []int64{a1, a2} {
		require.NoError(t, pool.QueryRow(ctx, "SELECT state, max_attempts FROM river_job WHERE id = $1", id).Scan(&state, &maxAttempts))
		require.Equal(t, "available", state, "job %d", id)
		require.Equal(t, 4, maxAttempts, "River gives a job that used its attempts one more")
	}
	for _, id := range []int64{b, other} {
		require.NoError(t, pool.QueryRow(ctx, "SELECT state FROM river_job WHERE id = $1", id).Scan(&state))
		require.Equal(t, "discarded", state, "job %d is of another class or queue", id)
	}

	ev := lastAudit(t, pool)
	require.Equal(t, audit.OutcomeSucceeded, ev.Outcome)
	require.Equal(t, "river.retry", ev.Action)
	var res actions.RiverJobsResult
	require.NoError(t, json.Unmarshal(ev.Result, &res))
	require.ElementsMatch(t, []int64{a1, a2}, res.IDs, "the audit row names the jobs")
	require.Contains(t, ev.Target, "smtp ?: refused")
}

// A job retried by someone else between the preview and the execution
// changes the decision: the run is refused as stale and nothing changes.
func TestRiverRetryRefusesWhatChangedSincePreview(t *testing.T) {
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	riverJob(t, pool, "email", "discarded", "smtp 554: refused")
	moved := riverJob(t, pool, "email", "discarded", "smtp 554: refused")
	params := map[string]any{"queue": "email", "error_class": "smtp ?: refused"}

	dry, err := r.Run(ctx, operator, "river.retry", actions.Request{Params: params, DryRun: true})
	require.NoError(t, err)
	// Another operator (or River's client in the application) retries one.
	c, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{Logger: testdb.RiverQuiet})
	require.NoError(t, err)
	_, err = c.JobRetry(ctx, moved)
	require.NoError(t, err)
	before := riverStates(t, pool)

	_, err = r.Run(ctx, operator, "river.retry", actions.Request{Params: params, Reason: reason, ExpectVersion: dry.Version})
	require.ErrorIs(t, err, actions.ErrStale)
	require.Equal(t, before, riverStates(t, pool), "a refused run changes nothing")
	require.Equal(t, audit.OutcomeRefused, lastAudit(t, pool).Outcome)
}

// Cancelling a running River job marks it for cancellation through River
// (River's client then cancels the job's context), and a queue paused and
// resumed through River's client has paused_at set and cleared.
func TestRiverCancelAndPause(t *testing.T) {
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	waiting := riverJob(t, pool, "email", "available", "")
	running := riverJob(t, pool, "email", "running", "")
	done := riverJob(t, pool, "email", "completed", "")

	out, err := r.Run(ctx, operator, "river.cancel", actions.Request{Params: map[string]any{"ids": []int64{waiting, running, done}}, Reason: reason})
	require.NoError(t, err)
	res := out.Result.(actions.RiverJobsResult)
	require.ElementsMatch(t, []int64{waiting, running}, res.IDs, "the completed job is left alone")
	require.Len(t, out.Preview.(actions.RiverJobsPreview).Skipped, 1)
	var state string
	require.NoError(t, pool.QueryRow(ctx, "SELECT state FROM river_job WHERE id = $1", waiting).Scan(&state))
	require.Equal(t, "cancelled", state)
	require.Equal(t, int64(1), queryInt(t, pool, "SELECT count(*) FROM river_job WHERE id = $1 AND state = 'running' AND metadata ? 'cancel_attempted_at'", running),
		"a running job is marked for its client to cancel")

	riverQueue(t, pool, "email", false)
	_, err = r.Run(ctx, operator, "river.queue_pause", actions.Request{Params: map[string]any{"queue": "email"}, Reason: reason})
	require.NoError(t, err)
	require.Equal(t, "email:true", riverQueueState(t, pool))
	_, err = r.Run(ctx, operator, "river.queue_pause", actions.Request{Params: map[string]any{"queue": "nope"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrNotFound)
	_, err = r.Run(ctx, operator, "river.queue_resume", actions.Request{Params: map[string]any{"queue": "email"}, Reason: reason})
	require.NoError(t, err)
	require.Equal(t, "email:false", riverQueueState(t, pool))
}

// The roles script run after River's migrations lets console_web retry,
// cancel and pause through River's client, and console_readonly read River's
// tables but change none of them.
func TestRiverGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.OwnedURL(t)
	owner := testdb.Pool(t, testdb.AsUser(t, dbURL, testdb.OwnerRole))
	testdb.RiverMigrate(t, owner)
	testdb.Roles(t, dbURL, actions.RolesSQL())
	id := riverJob(t, owner, "email", "discarded", "smtp 554: refused")
	riverQueue(t, owner, "email", false)

	web := testdb.Pool(t, testdb.AsUser(t, dbURL, "console_web"))
	r := newRunner(t, web, actions.RunnerConfig{})
	_, err := r.Run(ctx, operator, "river.retry", actions.Request{Params: map[string]any{"id": id}, Reason: reason})
	require.NoError(t, err)
	_, err = r.Run(ctx, operator, "river.cancel", actions.Request{Params: map[string]any{"ids": []int64{id}}, Reason: reason})
	require.NoError(t, err)
	_, err = r.Run(ctx, operator, "river.queue_pause", actions.Request{Params: map[string]any{"queue": "email"}, Reason: reason})
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%d:cancelled:4", id), riverStates(t, owner))

	ro := testdb.Pool(t, testdb.AsUser(t, dbURL, "console_readonly"))
	require.Equal(t, int64(1), queryInt(t, ro, "SELECT count(*) FROM river_job"))
	_, err = ro.Exec(ctx, "UPDATE river_queue SET paused_at = NULL")
	require.ErrorContains(t, err, "permission denied")
}
