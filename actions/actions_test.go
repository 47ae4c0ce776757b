package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var (
	viewer   = actions.Actor{Name: "vera", Role: auth.RoleViewer}
	operator = actions.Actor{Name: "olga", Role: auth.RoleOperator}
	admin    = actions.Actor{Name: "adam", Role: auth.RoleAdmin}
)

const reason = "INC-7: dead letters after the SMTP outage"

func newRunner(t *testing.T, pool *pgxpool.Pool, cfg actions.RunnerConfig) *actions.Runner {
	t.Helper()
	r, err := actions.NewRunner(pool, cfg)
	require.NoError(t, err)
	return r
}

// setupRunner opens a pool on a fresh test database and a runner on it.
func setupRunner(t *testing.T, cfg actions.RunnerConfig) (*pgxpool.Pool, *actions.Runner) {
	t.Helper()
	pool := testdb.New(t)
	return pool, newRunner(t, pool, cfg)
}

func exec(t *testing.T, db *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	_, err := db.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func queryInt(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

func queryText(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&s))
	return s
}

func auditCount(t *testing.T, pool *pgxpool.Pool) int64 {
	return queryInt(t, pool, "SELECT count(*) FROM audit_events")
}

// lastAudit returns the newest audit event.
func lastAudit(t *testing.T, pool *pgxpool.Pool) audit.Event {
	t.Helper()
	evs, err := audit.List(context.Background(), pool, audit.ListParams{Limit: 1})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	return evs[0]
}

func insertJob(t *testing.T, pool *pgxpool.Pool, queue, status, errorClass string) int64 {
	t.Helper()
	var id int64
	sql := `INSERT INTO jobs (queue, kind, status, error_class, last_error, attempts, finished_at, lease_owner, lease_until, started_at)
		VALUES ($1, 'email.send', $2, nullif($3, ''), nullif($3, ''), 1,
		        CASE WHEN $2 IN ('dead', 'done') THEN clock_timestamp() END,
		        CASE WHEN $2 = 'running' THEN 'worker-1' END,
		        CASE WHEN $2 = 'running' THEN clock_timestamp() + interval '5 min' END,
		        CASE WHEN $2 = 'running' THEN clock_timestamp() END)
		RETURNING id`
	require.NoError(t, pool.QueryRow(context.Background(), sql, queue, status, errorClass).Scan(&id))
	return id
}

func insertDeadOutbox(t *testing.T, pool *pgxpool.Pool, topic string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, pool.QueryRow(context.Background(),
		`INSERT INTO outbox_events (topic, event_type, payload, state, attempts, last_error, dead_at)
		 VALUES ($1, 'order.created', '{}', 'dead', 16, 'broker unavailable', clock_timestamp()) RETURNING id`, topic).Scan(&id))
	return id
}

// actionCase is one action's fixture for the contract every action keeps.
type actionCase struct {
	name string
	// setup prepares the database and returns the params to run with.
	setup func(t *testing.T, pool *pgxpool.Pool) map[string]any
	// state renders what the action changes, to compare before and after.
	state func(t *testing.T, pool *pgxpool.Pool) string
	actor actions.Actor
	// weaker is a role the action must refuse.
	weaker actions.Actor
	// diagnostics gives the runner a diagnostics reader (incident.capture).
	diagnostics bool
}

func jobState(id *int64) func(t *testing.T, pool *pgxpool.Pool) string {
	return func(t *testing.T, pool *pgxpool.Pool) string {
		return queryText(t, pool, "SELECT status || ':' || lease_generation || ':' || available_at FROM jobs WHERE id = $1", *id)
	}
}

func queueState(t *testing.T, pool *pgxpool.Pool) string {
	return queryText(t, pool, `SELECT coalesce((SELECT paused || ':' || coalesce(max_workers::text, '-') || ':' ||
		coalesce(rate_per_second::text, '-') FROM queue_settings WHERE queue = 'emails'), 'none')`)
}

func relayState(t *testing.T, pool *pgxpool.Pool) string {
	return queryText(t, pool, `SELECT paused || ':' || coalesce(batch_size::text, '-') || ':' ||
		coalesce(rate_per_second::text, '-') FROM relay_settings`)
}

func actionCases() []actionCase {
	var jobID int64
	return []actionCase{
		{
			name: "deadletters.requeue", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				insertJob(t, pool, "emails", "dead", "smtp.timeout")
				insertJob(t, pool, "emails", "dead", "smtp.timeout")
				return map[string]any{"queue": "emails", "error_class": "smtp.timeout"}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'dead'"))
			},
		},
		{
			name: "job.cancel", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				jobID = insertJob(t, pool, "emails", "ready", "")
				return map[string]any{"id": jobID}
			},
			state: jobState(&jobID),
		},
		{
			name: "job.retry_now", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				jobID = insertJob(t, pool, "emails", "dead", "smtp.timeout")
				return map[string]any{"id": fmt.Sprint(jobID)} // a form posts strings
			},
			state: jobState(&jobID),
		},
		{
			name: "lease.expire", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				jobID = insertJob(t, pool, "emails", "running", "")
				return map[string]any{"id": jobID}
			},
			state: jobState(&jobID),
		},
		{
			name: "jobs.retry_now", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				jobID = insertJob(t, pool, "emails", "dead", "smtp.timeout")
				insertJob(t, pool, "emails", "dead", "smtp.timeout")
				return map[string]any{"ids": fmt.Sprintf("%d,%d", jobID, jobID+1)} // a form posts a list as text
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'dead'"))
			},
		},
		{
			name: "jobs.cancel", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				jobID = insertJob(t, pool, "emails", "ready", "")
				return map[string]any{"ids": []int64{jobID, insertJob(t, pool, "emails", "running", "")}}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM jobs WHERE status = 'dead'"))
			},
		},
		{
			name: "queue.pause", actor: operator, weaker: viewer, state: queueState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"queue": "emails"}
			},
		},
		{
			name: "queue.resume", actor: operator, weaker: viewer, state: queueState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				exec(t, pool, "INSERT INTO queue_settings (queue, paused) VALUES ('emails', true)")
				return map[string]any{"queue": "emails"}
			},
		},
		{
			name: "queue.throttle", actor: operator, weaker: viewer, state: queueState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				exec(t, pool, "INSERT INTO queue_settings (queue, max_workers) VALUES ('emails', 8)")
				return map[string]any{"queue": "emails", "max_workers": 2, "rate_per_second": "5.5"}
			},
		},
		{
			name: "relay.pause", actor: operator, weaker: viewer, state: relayState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any { return nil },
		},
		{
			name: "relay.resume", actor: operator, weaker: viewer, state: relayState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				exec(t, pool, "UPDATE relay_settings SET paused = true")
				return nil
			},
		},
		{
			name: "relay.throttle", actor: operator, weaker: viewer, state: relayState,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"batch_size": 50, "rate_per_second": 100}
			},
		},
		{
			name: "outbox.requeue", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				insertDeadOutbox(t, pool, "orders")
				insertDeadOutbox(t, pool, "orders")
				insertDeadOutbox(t, pool, "coupons")
				return map[string]any{"topic": "orders"}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM outbox_events WHERE state = 'dead'"))
			},
		},
	}
}

// contractCases are the fixtures of every action's contract, by action
// name. TestEveryActionKeepsTheContract runs them for every action of the
// registry, so an action without a case fails it.
func contractCases() map[string]actionCase {
	out := map[string]actionCase{}
	for _, c := range append(append(append(append(append(append(actionCases(), backendCases()...), scheduleCases()...), incidentCases()...), preparedCases()...), tenantCases()...), riverCases()...) {
		out[c.name] = c
	}
	return out
}

// forEachAction runs check as a parallel subtest for every registered
// action, with its contract case; an action without one fails.
func forEachAction(t *testing.T, check func(t *testing.T, spec actions.Spec, c actionCase)) {
	t.Helper()
	for _, spec := range actions.Registry() {
		t.Run(spec.Name, func(t *testing.T) {
			t.Parallel()
			c, ok := contractCases()[spec.Name]
			if !ok {
				t.Fatalf("%s has no contract case: add its fixture to the cases in the actions tests", spec.Name)
			}
			check(t, spec, c)
		})
	}
}

// caseRunner returns a runner on pool for case c, with diagnostics on url
// when the action needs them.
func caseRunner(t *testing.T, c actionCase, url string, pool *pgxpool.Pool) *actions.Runner {
	t.Helper()
	cfg := actions.RunnerConfig{}
	if c.diagnostics {
		cfg.Diagnostics = openDiagnostics(t, url)
	}
	return newRunner(t, pool, cfg)
}

// poolWithDiagnostics opens a pool on a fresh test database and
// diagnostics on the same database.
func poolWithDiagnostics(t *testing.T) (*pgxpool.Pool, *diagnostics.Diagnostics) {
	t.Helper()
	url := testdb.URL(t)
	return testdb.Pool(t, url), openDiagnostics(t, url)
}

// openDiagnostics opens diagnostics on url, closed at cleanup.
func openDiagnostics(t *testing.T, url string) *diagnostics.Diagnostics {
	t.Helper()
	diag, err := diagnostics.Open(context.Background(), url, diagnostics.Config{OnDemand: true})
	require.NoError(t, err)
	t.Cleanup(diag.Close)
	return diag
}

func TestEveryActionKeepsTheContract(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	forEachAction(t, func(t *testing.T, spec actions.Spec, c actionCase) {
		require.Equal(t, c.actor.Role, spec.Role)

		// Each action gets its own case (the fixtures' closures hold ids),
		// database and runner, which its four runs share in turn: the dry
		// run and the refusals change nothing (each checks it), so the
		// run that succeeds still starts from the fixture. A database each
		// cost the test server four copies and their connections.
		url := testdb.URL(t)
		pool := testdb.Pool(t, url)
		r := caseRunner(t, c, url, pool)
		params := c.setup(t, pool)

		t.Run("DryRunChangesNothing", func(t *testing.T) {
			before, audits := c.state(t, pool), auditCount(t, pool)
			out, err := r.Run(ctx, c.actor, c.name, actions.Request{Params: params, DryRun: true})
			require.NoError(t, err)
			require.True(t, out.DryRun)
			require.NotNil(t, out.Preview)
			require.Nil(t, out.Result)
			require.Zero(t, out.AuditID)
			require.Equal(t, before, c.state(t, pool))
			require.Equal(t, audits, auditCount(t, pool), "a dry run is not audited")
		})
		t.Run("RefusedWithoutReason", func(t *testing.T) {
			before := c.state(t, pool)
			_, err := r.Run(ctx, c.actor, c.name, actions.Request{Params: params, Reason: "   "})
			require.ErrorIs(t, err, actions.ErrReasonRequired)
			require.Equal(t, before, c.state(t, pool))
			ev := lastAudit(t, pool)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Equal(t, c.name, ev.Action)
		})
		t.Run("RefusedByRole", func(t *testing.T) {
			before := c.state(t, pool)
			_, err := r.Run(ctx, c.weaker, c.name, actions.Request{Params: params, Reason: reason})
			require.ErrorIs(t, err, actions.ErrForbidden)
			require.Equal(t, before, c.state(t, pool))
			ev := lastAudit(t, pool)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Equal(t, c.weaker.Name, ev.Actor)
			require.Contains(t, ev.Error, "forbidden")
		})
		t.Run("Success", func(t *testing.T) {
			before := c.state(t, pool)
			out, err := r.Run(ctx, c.actor, c.name, actions.Request{Params: params, Reason: reason})
			require.NoError(t, err)
			require.NotNil(t, out.Preview)
			require.NotNil(t, out.Result)
			require.NotEqual(t, before, c.state(t, pool), "the database changed")
			ev := lastAudit(t, pool)
			require.Equal(t, out.AuditID, ev.ID)
			require.Equal(t, c.name, ev.Action)
			require.Equal(t, audit.OutcomeSucceeded, ev.Outcome)
			require.Equal(t, c.actor.Name, ev.Actor)
			require.Equal(t, reason, ev.Reason)
			require.NotEqual(t, "{}", string(ev.Preview))
			require.NotEqual(t, "{}", string(ev.Result))
		})
	})
}

// TestChangeAndAuditCommitTogether makes the audit insert fail and checks
// that the change rolled back with it.
func TestChangeAndAuditCommitTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	exec(t, pool, `CREATE FUNCTION fail_audit() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.outcome = 'succeeded' THEN RAISE EXCEPTION 'audit disk full'; END IF; RETURN NEW; END $$`)
	exec(t, pool, "CREATE TRIGGER zz_fail_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION fail_audit()")

	_, err := r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
	require.ErrorContains(t, err, "audit disk full")
	require.Equal(t, "none", queueState(t, pool), "no change without its audit row")
	ev := lastAudit(t, pool)
	require.Equal(t, audit.OutcomeFailed, ev.Outcome)
	require.Contains(t, ev.Error, "audit disk full")
}

func TestValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Every refusal audited: the cases repeat one kind of refusal.
	pool, r := setupRunner(t, actions.RunnerConfig{RefusalWindow: -1})
	for _, c := range []struct {
		action string
		params any
		want   error
		msg    string
	}{
		{"nope.nothing", nil, actions.ErrNotFound, "no action"},
		{"queue.pause", map[string]any{}, actions.ErrInvalid, `needs "queue"`},
		{"queue.pause", map[string]any{"queue": "q", "color": "red"}, actions.ErrInvalid, `no parameter "color"`},
		{"queue.throttle", map[string]any{"queue": "q"}, actions.ErrInvalid, "give max_workers"},
		{"queue.throttle", map[string]any{"queue": "q", "max_workers": "eight"}, actions.ErrInvalid, "not a whole number"},
		{"queue.throttle", map[string]any{"queue": "q", "max_workers": -1}, actions.ErrInvalid, "max_workers"},
		{"queue.throttle", map[string]any{"queue": "q", "rate_per_second": 0}, actions.ErrInvalid, "rate_per_second"},
		{"deadletters.requeue", map[string]any{}, actions.ErrInvalid, "give ids or a filter"},
		{"deadletters.requeue", map[string]any{"queue": "q", "since": "yesterday"}, actions.ErrInvalid, "not a time"},
		{"deadletters.requeue", map[string]any{"ids": []any{"x"}}, actions.ErrInvalid, "not a positive id"},
		{"deadletters.requeue", map[string]any{"queue": "nothing-dead-here"}, actions.ErrNotFound, "no dead jobs"},
		{"job.cancel", map[string]any{"id": 424242}, actions.ErrNotFound, "job 424242"},
		{"backend.cancel", map[string]any{"pid": 0}, actions.ErrInvalid, "not a process id"},
		{"backend.terminate", map[string]any{"pid": 123, "confirm_pid": 124}, actions.ErrInvalid, "type the pid"},
		{"queue.pause", json.RawMessage(`[1,2]`), actions.ErrInvalid, "JSON object"},
		{"incident.open", map[string]any{"title": "x", "impact": 5}, actions.ErrInvalid, "impact: must be a string, not a number"},
		{"queue.pause", map[string]any{"queue": true}, actions.ErrInvalid, "queue: must be a string, not a boolean"},
		{"queue.throttle", map[string]any{"queue": "q", "max_workers": []any{2}}, actions.ErrInvalid, "max_workers: must be a whole number, not a list"},
		{"queue.throttle", map[string]any{"queue": "q", "max_workers": 2.5}, actions.ErrInvalid, `max_workers: "2.5" is not a whole number`},
		{"queue.throttle", map[string]any{"queue": "q", "clear_limits": "maybe"}, actions.ErrInvalid, "clear_limits: must be true or false"},
		{"relay.throttle", map[string]any{}, actions.ErrInvalid, "give batch_size, rate_per_second or clear_limits"},
		{"relay.throttle", map[string]any{"batch_size": 0}, actions.ErrInvalid, "batch_size: must be between 1 and 100000"},
		{"deadletters.requeue", map[string]any{"since": 1700000000}, actions.ErrInvalid, "since: must be a time string"},
		{"schedule.update", map[string]any{"name": "n", "payload": "{nope"}, actions.ErrInvalid, "payload: is not valid JSON"},
	} {
		t.Run(c.action, func(t *testing.T) {
			_, err := r.Run(ctx, admin, c.action, actions.Request{Params: c.params, Reason: reason})
			require.ErrorIs(t, err, c.want)
			require.ErrorContains(t, err, c.msg)
			ev := lastAudit(t, pool)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Equal(t, c.action, ev.Action)
		})
	}
	t.Run("WrongState", func(t *testing.T) {
		id := insertJob(t, pool, "emails", "done", "")
		_, err := r.Run(ctx, operator, "job.cancel", actions.Request{Params: map[string]any{"id": id}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, "is done")
	})
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	specs := actions.Registry()
	names := map[string]actions.Spec{}
	for _, s := range specs {
		require.NotEmpty(t, s.Title, s.Name)
		require.NotEmpty(t, s.Description, s.Name)
		require.True(t, auth.ValidRole(s.Role), s.Name)
		require.Contains(t, []actions.Risk{actions.RiskLow, actions.RiskLowMedium, actions.RiskMedium, actions.RiskHigh}, s.Risk, s.Name)
		names[s.Name] = s
	}
	for _, n := range []string{"deadletters.requeue", "job.cancel", "job.retry_now", "lease.expire", "queue.pause",
		"queue.resume", "queue.throttle", "relay.pause", "relay.resume", "relay.throttle", "outbox.requeue",
		"backend.cancel", "backend.terminate", "schedule.create", "schedule.update", "schedule.enable",
		"schedule.disable", "schedule.run_now"} {
		require.Contains(t, names, n)
	}
	require.Equal(t, auth.RoleAdmin, names["backend.terminate"].Role)
	require.Equal(t, actions.RiskHigh, names["backend.terminate"].Risk)
	require.Equal(t, "confirm_pid", names["backend.terminate"].Confirm)
	require.Equal(t, actions.RiskMedium, names["backend.cancel"].Risk)
	require.Equal(t, actions.RiskLow, names["queue.throttle"].Risk)
}

func TestConcurrentActionsKeepOneChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			name := "queue.pause"
			if i%2 == 1 {
				name = "queue.throttle"
			}
			params := map[string]any{"queue": fmt.Sprintf("q%d", i%5)}
			if name == "queue.throttle" {
				params["max_workers"] = i
			}
			_, err := r.Run(ctx, operator, name, actions.Request{Params: params, Reason: reason})
			errs <- err
		}()
	}
	for range 20 {
		require.NoError(t, <-errs)
	}
	res, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)
	require.Equal(t, 20, res.Checked)
	require.EqualValues(t, 20, queryInt(t, pool, "SELECT count(DISTINCT prev_hash) FROM audit_events"), "no two events share a predecessor")
}

func TestIncidentLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	inc, err := audit.IncidentOpen(ctx, pool, audit.IncidentOpenParams{Title: "Email backlog", OpenedBy: "olga"})
	require.NoError(t, err)

	out, err := r.Run(ctx, operator, "queue.pause", actions.Request{
		Params: map[string]any{"queue": "emails"}, Reason: reason, IncidentID: &inc.ID})
	require.NoError(t, err)
	evs, err := audit.List(ctx, pool, audit.ListParams{IncidentID: &inc.ID})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, out.AuditID, evs[0].ID)
	md, err := audit.IncidentMarkdown(ctx, pool, inc.ID)
	require.NoError(t, err)
	require.Contains(t, md, "**queue.pause** on queue:emails by ", "the export lists the linked action")

	missing := int64(99999)
	_, err = r.Run(ctx, operator, "queue.pause", actions.Request{
		Params: map[string]any{"queue": "emails"}, Reason: reason, IncidentID: &missing})
	require.ErrorIs(t, err, actions.ErrInvalid)
	require.Equal(t, audit.OutcomeRefused, lastAudit(t, pool).Outcome, "the refusal is audited without the link")

	_, err = audit.IncidentClose(ctx, pool, audit.IncidentCloseParams{ID: inc.ID, ClosedBy: "olga"})
	require.NoError(t, err)
	_, err = r.Run(ctx, operator, "queue.resume", actions.Request{
		Params: map[string]any{"queue": "emails"}, Reason: reason, IncidentID: &inc.ID})
	require.ErrorIs(t, err, actions.ErrInvalid)
	require.ErrorContains(t, err, "closed")
}
