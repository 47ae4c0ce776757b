package actions_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/testdb"
)

// logLines decodes the JSON lines in buf and empties it.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(buf)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		out = append(out, line)
	}
	require.NoError(t, sc.Err())
	buf.Reset()
	return out
}

// onlyLine is the one JSON line in buf, which it empties.
func onlyLine(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	lines := logLines(t, buf)
	require.Len(t, lines, 1)
	return lines[0]
}

// Every run, executed, refused or dry, writes one line with the action,
// the actor, the outcome and the audit event's id, and the job or queue
// when the action has one.
func TestRunLogsEveryAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var buf bytes.Buffer
	r := newRunner(t, pool, actions.RunnerConfig{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})

	t.Run("Executed", func(t *testing.T) {
		out, err := r.Run(ctx, operator, "queue.pause", actions.Request{
			Params: map[string]any{"queue": "emails"}, Reason: reason, RequestID: "req-1"})
		require.NoError(t, err)
		l := onlyLine(t, &buf)
		require.Equal(t, "action", l["msg"])
		require.Equal(t, "INFO", l["level"])
		require.Equal(t, "queue.pause", l["action"])
		require.Equal(t, "succeeded", l["outcome"])
		require.Equal(t, operator.Name, l["actor"])
		require.EqualValues(t, out.AuditID, l["audit_id"])
		require.Equal(t, "emails", l["queue"])
		require.Equal(t, "queue:emails", l["target"])
		require.Equal(t, "req-1", l["request_id"])
		require.Equal(t, reason, l["reason"])
		// The line anchors the trail: the head this action moved it to.
		head, err := audit.HeadGet(ctx, pool)
		require.NoError(t, err)
		require.EqualValues(t, head.Seq, l["audit_seq"])
		require.Equal(t, hex.EncodeToString(head.Hash), l["audit_head"])
	})
	t.Run("Refused", func(t *testing.T) {
		_, err := r.Run(ctx, viewer, "queue.resume", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrForbidden)
		ev := lastAudit(t, pool)
		require.Equal(t, audit.OutcomeRefused, ev.Outcome)
		l := onlyLine(t, &buf)
		require.Equal(t, "WARN", l["level"])
		require.Equal(t, "queue.resume", l["action"])
		require.Equal(t, "refused", l["outcome"])
		require.Equal(t, viewer.Name, l["actor"])
		require.EqualValues(t, ev.ID, l["audit_id"], "the refusal's audit event")
		require.Contains(t, l["refusal"], "forbidden")
	})
	t.Run("JobAndDryRun", func(t *testing.T) {
		id := insertJob(t, pool, "emails", "ready", "")
		out, err := r.Run(ctx, operator, "job.cancel", actions.Request{Params: map[string]any{"id": id}, DryRun: true})
		require.NoError(t, err)
		require.Zero(t, out.AuditID)
		l := onlyLine(t, &buf)
		require.Equal(t, "dry_run", l["outcome"])
		require.EqualValues(t, id, l["job_id"])
		require.EqualValues(t, 0, l["audit_id"])
	})
}

// RunTx writes the change and its audit event in the caller's transaction:
// they are invisible until it commits and gone if it rolls back. An
// execution that fails inside it rolls back to its savepoint, which frees
// the audit chain for the failure's own audit event, and leaves the
// caller's transaction usable.
func TestRunTxCommitsWithTheCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	pause := actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason}

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	out, err := r.RunTx(ctx, tx, operator, "queue.pause", pause)
	require.NoError(t, err)
	require.Positive(t, out.AuditID)
	require.Equal(t, "none", queueState(t, pool), "not visible before the caller commits")
	require.Zero(t, auditCount(t, pool))
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, "none", queueState(t, pool))
	require.Zero(t, auditCount(t, pool), "rolled back with the caller")

	exec(t, pool, `CREATE FUNCTION fail_audit() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.outcome = 'succeeded' THEN RAISE EXCEPTION 'audit disk full'; END IF; RETURN NEW; END $$`)
	exec(t, pool, "CREATE TRIGGER zz_fail_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION fail_audit()")
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = r.RunTx(ctx, tx, operator, "queue.pause", pause)
	require.ErrorContains(t, err, "audit disk full")
	require.EqualValues(t, 1, auditCount(t, pool), "the failure is audited in its own transaction")
	require.Equal(t, audit.OutcomeFailed, lastAudit(t, pool).Outcome)
	exec(t, pool, "DROP TRIGGER zz_fail_audit ON audit_events")
	out, err = r.RunTx(ctx, tx, operator, "queue.pause", pause)
	require.NoError(t, err, "the caller's transaction is still usable")
	require.NoError(t, tx.Commit(ctx))
	require.NotEqual(t, "none", queueState(t, pool))
	require.Equal(t, out.AuditID, lastAudit(t, pool).ID)
}
