package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func event(action, target string) audit.Event {
	return audit.Event{
		Actor: "alice", Role: "operator", Action: action, Target: target,
		Params:  json.RawMessage(`{"queue":"emails"}`),
		Reason:  "incident 42: dead letters after the SMTP outage",
		Preview: json.RawMessage(`{"count":3}`), Result: json.RawMessage(`{"moved":[1,2,3]}`),
		Outcome: audit.OutcomeSucceeded,
	}
}

func record(t *testing.T, db audit.DBTX, e audit.Event) int64 {
	t.Helper()
	rec, err := audit.RecordTx(context.Background(), db, e)
	require.NoError(t, err)
	return rec.ID
}

// verified runs Verify on db and returns its result, failing the test
// unless the chain verifies.
func verified(t *testing.T, db audit.DBTX) audit.VerifyResult {
	t.Helper()
	res, err := audit.Verify(context.Background(), db)
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)
	return res
}

// verifiedChain records n events on a fresh database and returns them
// with the result of verifying the untouched chain, which must pass.
func verifiedChain(t *testing.T, n int) (*pgxpool.Pool, []int64, audit.VerifyResult) {
	t.Helper()
	pool := testdb.New(t)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = record(t, pool, event("job.cancel", fmt.Sprintf("job:%d", i)))
	}
	return pool, ids, verified(t, pool)
}

// broken runs Verify on db and returns its result, failing the test unless
// the chain is reported broken for a reason containing reason.
func broken(t *testing.T, db audit.DBTX, reason string) audit.VerifyResult {
	t.Helper()
	res, err := audit.Verify(context.Background(), db)
	require.NoError(t, err)
	require.False(t, res.OK, "the chain must not verify")
	require.Contains(t, res.Reason, reason)
	return res
}

func TestRecordTxAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	a := record(t, tx, event("deadletters.requeue", "queue:emails"))
	e := event("queue.pause", "queue:reports")
	e.Actor, e.Outcome, e.Error = "bob", audit.OutcomeRefused, "a reason is required"
	b := record(t, tx, e)

	all, err := audit.List(ctx, tx, audit.ListParams{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 2)
	require.Equal(t, b, all[0].ID, "newest first")

	got, err := audit.List(ctx, tx, audit.ListParams{Actor: "alice", Action: "deadletters.requeue"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, a, got[0].ID)
	require.JSONEq(t, `{"moved":[1,2,3]}`, string(got[0].Result))
	require.NotEmpty(t, got[0].Hash)

	got, err = audit.List(ctx, tx, audit.ListParams{Outcome: "refused", Target: "queue:reports"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "a reason is required", got[0].Error)

	got, err = audit.List(ctx, tx, audit.ListParams{BeforeID: b, Limit: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, a, got[0].ID)

	_, err = audit.List(ctx, tx, audit.ListParams{Outcome: "maybe"})
	require.ErrorIs(t, err, audit.ErrInvalid)

	_, err = audit.RecordTx(ctx, tx, audit.Event{Actor: "x", Role: "viewer", Action: "a", Outcome: "meh"})
	require.ErrorIs(t, err, audit.ErrInvalid)

	one, err := audit.Get(ctx, tx, a)
	require.NoError(t, err)
	require.Equal(t, "deadletters.requeue", one.Action)
	_, err = audit.Get(ctx, tx, -1)
	require.ErrorIs(t, err, audit.ErrNotFound)
}

func TestAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	id := record(t, pool, event("job.cancel", "job:1"))
	_, err := pool.Exec(ctx, "UPDATE audit_events SET reason = 'nothing to see' WHERE id = $1", id)
	require.ErrorContains(t, err, "append-only")
	_, err = pool.Exec(ctx, "DELETE FROM audit_events WHERE id = $1", id)
	require.ErrorContains(t, err, "append-only")
	_, err = pool.Exec(ctx, "TRUNCATE audit_events")
	require.ErrorContains(t, err, "append-only")
}

// tamper runs stmt with every trigger of audit_events disabled, as the
// superuser the test server gives us.
func tamper(t *testing.T, pool *pgxpool.Pool, stmt string, args ...any) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER TABLE audit_events DISABLE TRIGGER ALL"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, stmt, args...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER TABLE audit_events ENABLE TRIGGER ALL")
		return err
	})
	require.NoError(t, err)
}

// rehashRow recomputes one row's hash from its stored contents with the
// console's own algorithm (unkeyed), behind the triggers' back.
func rehashRow(t *testing.T, pool *pgxpool.Pool, id int64) {
	t.Helper()
	h, err := audit.ExpectedHashOf(context.Background(), pool, id, nil)
	require.NoError(t, err)
	tamper(t, pool, `UPDATE audit_events SET hash = $2 WHERE id = $1`, id, h)
}

// rehashChainInSQL recomputes every hash and prev_hash in seq order in SQL,
// and moves the head to match: what the table's owner could do to hide an
// edit when the database did the hashing.
func rehashChainInSQL(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	tamper(t, pool, `DO $$
DECLARE
    r audit_events;
    prev bytea := '';
    h bytea;
BEGIN
    FOR r IN SELECT * FROM audit_events ORDER BY seq LOOP
        r.prev_hash := prev;
        h := sha256(prev || convert_to(audit_event_canonical(r), 'UTF8'));
        UPDATE audit_events SET prev_hash = prev, hash = h WHERE id = r.id;
        prev := h;
    END LOOP;
    UPDATE audit_chain_head SET last_hash = prev;
END
$$`)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*pgxpool.Pool, []int64) {
		pool, ids, res := verifiedChain(t, 5)
		require.Equal(t, 5, res.Checked)
		return pool, ids
	}

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		res, err := audit.Verify(ctx, testdb.New(t))
		require.NoError(t, err)
		require.True(t, res.OK)
		require.Zero(t, res.Checked)
	})
	// Each case tampers with row ids[row] of a five-row chain, lets a forger
	// cover the edit up (cover, nil for none), and expects Verify to report
	// the break with reason at ids[brokenAt] (-1: not at a row, the head).
	cases := []struct {
		name     string
		tamper   string
		row      int
		cover    func(t *testing.T, pool *pgxpool.Pool, ids []int64)
		reason   string
		brokenAt int
	}{
		{name: "EditedRow", tamper: "UPDATE audit_events SET reason = 'routine maintenance' WHERE id = $1", row: 2,
			reason: "changed after it was written", brokenAt: 2},
		// A careful forger recomputes the edited row's own hash; the next row
		// still names the old one.
		{name: "EditedRowWithRecomputedHash", tamper: "UPDATE audit_events SET actor = 'mallory' WHERE id = $1", row: 1,
			cover:  func(t *testing.T, pool *pgxpool.Pool, ids []int64) { rehashRow(t, pool, ids[1]) },
			reason: "prev_hash", brokenAt: 2},
		// The owner of the table rewrites a row and recomputes the whole chain
		// and its head in SQL, as the database once hashed it. The console
		// recomputes every hash itself, so the database's arithmetic proves
		// nothing.
		{name: "RewrittenAndRehashedInSQL", tamper: "UPDATE audit_events SET actor = 'mallory' WHERE id = $1", row: 1,
			cover:  func(t *testing.T, pool *pgxpool.Pool, _ []int64) { rehashChainInSQL(t, pool) },
			reason: "changed after it was written", brokenAt: 0},
		{name: "DeletedRow", tamper: "DELETE FROM audit_events WHERE id = $1", row: 3,
			reason: "missing", brokenAt: 4},
		{name: "DeletedTail", tamper: "DELETE FROM audit_events WHERE id = $1", row: 4,
			reason: "head", brokenAt: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			pool, ids := setup(t)
			tamper(t, pool, c.tamper, ids[c.row])
			if c.cover != nil {
				c.cover(t, pool, ids)
			}
			res := broken(t, pool, c.reason)
			if c.brokenAt < 0 {
				require.Nil(t, res.BrokenAt)
			} else {
				require.Equal(t, ids[c.brokenAt], *res.BrokenAt)
			}
			_, err := audit.VerifyErr(ctx, pool, nil)
			require.ErrorIs(t, err, audit.ErrChainBroken)
		})
	}
}

func TestConcurrentWritersKeepOneChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := audit.RecordTx(ctx, tx, event("queue.pause", fmt.Sprintf("queue:q%d", i)))
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	res := verified(t, pool)
	require.Equal(t, 20, res.Checked)
}

func TestIncidentLifecycleAndMarkdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)

	_, err := audit.IncidentOpen(ctx, tx, audit.IncidentOpenParams{Title: "  ", OpenedBy: "alice"})
	require.ErrorIs(t, err, audit.ErrInvalid)

	inc, err := audit.IncidentOpen(ctx, tx, audit.IncidentOpenParams{
		Title: "Email queue dead letters", Impact: "password resets delayed", SLO: "p99 < 5 min", OpenedBy: "alice",
	})
	require.NoError(t, err)
	require.Equal(t, audit.IncidentStatusOpen, inc.Status)

	ev, err := audit.EvidenceCaptureTx(ctx, tx, audit.Evidence{
		IncidentID: inc.ID, Step: "R5", Title: "Dead letters by error class",
		SQLText: "SELECT error_class, count(*) FROM jobs WHERE status = 'dead' GROUP BY 1",
		Data:    json.RawMessage(`[{"error_class":"smtp.timeout","count":1200}]`), CapturedBy: "alice",
	})
	require.NoError(t, err)
	require.Equal(t, inc.ID, ev.IncidentID)

	e := event("deadletters.requeue", "queue:emails")
	e.IncidentID = &inc.ID
	record(t, tx, e)

	list, err := audit.EvidenceList(ctx, tx, inc.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)

	md, err := audit.IncidentMarkdown(ctx, tx, inc.ID)
	require.NoError(t, err)
	require.Contains(t, md, "# Incident")
	require.Contains(t, md, "Email queue dead letters")
	require.Contains(t, md, "Dead letters by error class")
	require.Contains(t, md, "smtp.timeout")
	require.Regexp(t, `(?m)^\| (1200 \| smtp\.timeout|smtp\.timeout \| 1200) \|$`, md, "the capture is a table")
	require.Contains(t, md, "**deadletters.requeue** on queue:emails by alice (operator): **succeeded**. Reason: incident 42: dead letters after the SMTP outage.")
	require.Contains(t, md, `SLO: p99 \< 5 min.`, "< is escaped, where HTML would start")
	require.Less(t, strings.Index(md, "| Captured Dead letters by error class"), strings.Index(md, "| deadletters.requeue on queue:emails"),
		"the timeline is in time order")

	closed, err := audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: inc.ID, ClosedBy: "bob", Summary: "SMTP relay recovered"})
	require.NoError(t, err)
	require.Equal(t, audit.IncidentStatusClosed, closed.Status)
	require.NotNil(t, closed.WindowEnd)

	_, err = audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: inc.ID, ClosedBy: "bob"})
	require.ErrorIs(t, err, audit.ErrInvalid)
	_, err = audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: 999999, ClosedBy: "bob"})
	require.ErrorIs(t, err, audit.ErrNotFound)
	_, err = audit.EvidenceCaptureTx(ctx, tx, audit.Evidence{IncidentID: inc.ID, Step: "R1", Title: "late", CapturedBy: "bob"})
	require.ErrorIs(t, err, audit.ErrInvalid)

	open, err := audit.IncidentList(ctx, tx, audit.IncidentListParams{Status: "open"})
	require.NoError(t, err)
	for _, o := range open {
		require.NotEqual(t, inc.ID, o.ID)
	}
	got, err := audit.IncidentGet(ctx, tx, inc.ID)
	require.NoError(t, err)
	require.Equal(t, "SMTP relay recovered", got.Summary)
}
