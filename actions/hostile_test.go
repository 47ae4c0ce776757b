package actions_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// TestHostileInputIsRefusedAndAudited sends text the database cannot store
// and numbers and times out of range: each is ErrInvalid naming the field,
// and each refusal is in the audit trail.
func TestHostileInputIsRefusedAndAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Every refusal audited: the cases repeat one kind of refusal.
	pool, r := setupRunner(t, actions.RunnerConfig{RefusalWindow: -1})
	for _, c := range []struct {
		name, action string
		params       json.RawMessage
		reason       string
		msg          string
	}{
		{"NULInString", "queue.pause", json.RawMessage(`{"queue": "a\u0000b"}`), reason, "queue: contains a NUL"},
		{"InvalidUTF8InString", "queue.pause", json.RawMessage("{\"queue\": \"a\xffb\"}"), reason, "queue: is not valid UTF-8"},
		{"NULInPayload", "schedule.update", json.RawMessage(`{"name": "n", "payload": {"k": "\u0000"}}`), reason, "payload: contains a NUL"},
		{"NULInKey", "schedule.update", json.RawMessage(`{"name": "n", "payload": {"\u0000": 1}}`), reason, "payload: contains a NUL"},
		{"NULInReason", "queue.pause", json.RawMessage(`{"queue": "q"}`), "why\x00not", "reason: must be UTF-8 text without NUL"},
		{"InvalidUTF8InReason", "queue.pause", json.RawMessage(`{"queue": "q"}`), "why\xfe", "reason: must be UTF-8 text without NUL"},
		{"HugeRate", "queue.throttle", json.RawMessage(`{"queue": "q", "rate_per_second": 1e19}`), reason, "rate_per_second: 1e19 is out of range: give a number between 0.001 and 1e+06"},
		{"TinyRate", "queue.throttle", json.RawMessage(`{"queue": "q", "rate_per_second": 5e-324}`), reason, "rate_per_second: 5e-324 is out of range"},
		{"OverflowRate", "relay.throttle", json.RawMessage(`{"rate_per_second": "1e999"}`), reason, "rate_per_second: 1e999 is out of range"},
		{"NaNRate", "relay.throttle", json.RawMessage(`{"rate_per_second": "NaN"}`), reason, `rate_per_second: "NaN" is not a number between 0.001 and 1e+06`},
		{"InfRate", "queue.throttle", json.RawMessage(`{"queue": "q", "rate_per_second": "+Inf"}`), reason, "rate_per_second"},
		{"FutureWindowStart", "incident.open", json.RawMessage(`{"title": "t", "window_start": "2999-01-01T00:00:00Z"}`), reason, "window_start: \"2999-01-01T00:00:00Z\" is in the future"},
		{"YearOutOfRange", "deadletters.requeue", json.RawMessage(`{"since": "0001-01-01T00:00:00Z"}`), reason, "since: \"0001-01-01T00:00:00Z\" is out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := auditCount(t, pool)
			_, err := r.Run(ctx, admin, c.action, actions.Request{Params: c.params, Reason: c.reason})
			require.ErrorIs(t, err, actions.ErrInvalid)
			require.ErrorContains(t, err, c.msg)
			require.Equal(t, before+1, auditCount(t, pool), "the refusal is audited")
			ev := lastAudit(t, pool)
			require.Equal(t, audit.OutcomeRefused, ev.Outcome)
			require.Equal(t, c.action, ev.Action)
		})
	}
}

// TestRefusalsAreCappedAndFolded posts a 4 MB body as a viewer: the audit
// row holds a digest of a few hundred bytes. Then a loop of the same
// refusal is folded: the first is audited as it is, the repeats within the
// window are one row that counts them, written at the flush; another
// actor's and another kind of refusal are audited at once.
func TestRefusalsAreCappedAndFolded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{RefusalWindow: time.Hour})
	big, err := json.Marshal(map[string]string{"queue": strings.Repeat("x", 4<<20)})
	require.NoError(t, err)
	_, err = r.Run(ctx, viewer, "queue.pause", actions.Request{Params: json.RawMessage(big), Reason: reason})
	require.ErrorIs(t, err, actions.ErrForbidden)
	ev := lastAudit(t, pool)
	require.Equal(t, audit.OutcomeRefused, ev.Outcome)
	require.Less(t, len(ev.Params), 1024, "a refusal stores a digest, not the body")
	var digest struct {
		Digest string `json:"digest"`
		Bytes  int    `json:"bytes"`
	}
	require.NoError(t, json.Unmarshal(ev.Params, &digest))
	require.Equal(t, len(big), digest.Bytes)
	require.True(t, strings.HasPrefix(digest.Digest, "sha256:"))
	require.Less(t, queryInt(t, pool, "SELECT max(pg_column_size(audit_events.*)) FROM audit_events"), int64(8192))

	for range 10 {
		_, err := r.Run(ctx, viewer, "queue.pause", actions.Request{Params: map[string]any{"queue": "q"}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrForbidden)
	}
	require.Equal(t, int64(1), queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE actor = $1", viewer.Name),
		"repeated refusals within the window are folded")
	_, err = r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "q"}})
	require.ErrorIs(t, err, actions.ErrReasonRequired)
	require.Equal(t, int64(1), queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE actor = $1", operator.Name),
		"another actor's refusals are audited")
	_, err = r.Run(ctx, viewer, "queue.resume", actions.Request{Params: map[string]any{"queue": "q"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrForbidden)
	require.Equal(t, int64(2), queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE actor = $1", viewer.Name),
		"a refusal of another action is audited")

	r.FlushRefusals(ctx)
	require.Equal(t, int64(3), queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE actor = $1", viewer.Name),
		"the flush writes one row for the ten folded refusals")
	folded := lastAudit(t, pool)
	require.Equal(t, audit.OutcomeRefused, folded.Outcome)
	require.Equal(t, "queue.pause", folded.Action)
	require.Equal(t, viewer.Role, folded.Role)
	require.Equal(t, reason, folded.Reason)
	require.JSONEq(t, `{"queue": "q"}`, string(folded.Params), "the row keeps the last refusal's params")
	require.Contains(t, folded.Error, "10 more refusals (forbidden) of queue.pause by vera")
	var count struct {
		Folded int `json:"folded_refusals"`
	}
	require.NoError(t, json.Unmarshal(folded.Result, &count))
	require.Equal(t, 10, count.Folded)
	r.FlushRefusals(ctx)
	require.Equal(t, int64(3), queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE actor = $1", viewer.Name),
		"a second flush has nothing to write")
	v, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.True(t, v.OK, "the chain holds: %s", v.Reason)
}
