package audit_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/testdb"
)

// rehashChainInGo rewrites every prev_hash and hash in seq order with the
// console's own algorithm (unkeyed, or under key), relabelling every event
// as alg, and moves the head: the best a forger who knows the code can do.
func rehashChainInGo(t *testing.T, pool *pgxpool.Pool, alg string, key []byte) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, "SELECT id FROM audit_events ORDER BY seq")
	require.NoError(t, err)
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	prev := []byte{}
	for _, id := range ids {
		tamper(t, pool, "UPDATE audit_events SET prev_hash = $2, hash_alg = $3 WHERE id = $1", id, prev, alg)
		h, err := audit.ExpectedHashOf(ctx, pool, id, key)
		require.NoError(t, err)
		tamper(t, pool, "UPDATE audit_events SET hash = $2 WHERE id = $1", id, h)
		prev = h
	}
	tamper(t, pool, "UPDATE audit_chain_head SET last_hash = $1", prev)
}

// TestVerifyExpectHead: a forger who recomputes the whole unkeyed chain
// with the console's own algorithm passes the plain check, but not a head
// written down before the rewrite.
func TestVerifyExpectHead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, ids, res := verifiedChain(t, 4)
	require.EqualValues(t, 4, res.Head.Seq)
	head, err := audit.HeadGet(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, head, res.Head)
	noted, err := audit.ParseHead(head.String())
	require.NoError(t, err)
	require.Equal(t, head, noted)
	early, err := audit.ParseHead(fmt.Sprintf("2:%s", hex.EncodeToString(mustHashAt(t, pool, 2))))
	require.NoError(t, err)

	res, err = audit.VerifyWith(ctx, pool, &audit.VerifyOpts{ExpectHead: &noted})
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)

	tamper(t, pool, "UPDATE audit_events SET reason = 'routine maintenance' WHERE id = $1", ids[1])
	rehashChainInGo(t, pool, audit.HashSHA256, nil)
	res, err = audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.True(t, res.OK, "an unkeyed chain rehashed consistently passes on its own: %s", res.Reason)

	for _, h := range []audit.Head{noted, early} {
		res, err = audit.VerifyWith(ctx, pool, &audit.VerifyOpts{ExpectHead: &h})
		require.NoError(t, err)
		require.False(t, res.OK, "the noted head %s must expose the rewrite", h)
		require.Contains(t, res.Reason, "rewritten")
	}
	beyond := audit.Head{Seq: 9, Hash: noted.Hash}
	res, err = audit.VerifyWith(ctx, pool, &audit.VerifyOpts{ExpectHead: &beyond})
	require.NoError(t, err)
	require.False(t, res.OK)
	require.Contains(t, res.Reason, "past the last event")

	for _, bad := range []string{"", "x:00", "3", "3:zz", "0:" + strings.Repeat("00", 32), "3:abcd"} {
		_, err := audit.ParseHead(bad)
		require.ErrorIs(t, err, audit.ErrInvalid, bad)
	}
}

func mustHashAt(t *testing.T, pool *pgxpool.Pool, seq int64) []byte {
	t.Helper()
	var h []byte
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT hash FROM audit_events WHERE seq = $1", seq).Scan(&h))
	return h
}

// TestVerifyKeyed sets the process's audit key, so it does not run in
// parallel. Events are HMACs under the key: a forger without it cannot
// recompute them, and relabelling them as unkeyed is caught once the first
// keyed seq is known.
func TestVerifyKeyed(t *testing.T) {
	ctx := context.Background()
	key := []byte(strings.Repeat("k", 32))
	require.ErrorIs(t, audit.SetKey([]byte("short")), audit.ErrInvalid)
	require.NoError(t, audit.SetKey(key))
	defer audit.SetKey(nil)

	setup := func(t *testing.T) (*pgxpool.Pool, []int64) {
		pool, ids, res := verifiedChain(t, 4)
		require.Equal(t, 4, res.Keyed)
		e, err := audit.Get(ctx, pool, ids[0])
		require.NoError(t, err)
		require.Equal(t, audit.HashHMAC, e.HashAlg)
		return pool, ids
	}

	t.Run("RehashedWithoutKey", func(t *testing.T) {
		pool, ids := setup(t)
		tamper(t, pool, "UPDATE audit_events SET actor = 'mallory' WHERE id = $1", ids[1])
		rehashChainInGo(t, pool, audit.HashHMAC, []byte(strings.Repeat("g", 32)))
		res, err := audit.Verify(ctx, pool)
		require.NoError(t, err)
		require.False(t, res.OK)
		require.Equal(t, ids[0], *res.BrokenAt, "the first rehashed event no longer matches under the real key")
	})
	t.Run("RelabelledUnkeyed", func(t *testing.T) {
		pool, ids := setup(t)
		tamper(t, pool, "UPDATE audit_events SET actor = 'mallory' WHERE id = $1", ids[1])
		rehashChainInGo(t, pool, audit.HashSHA256, nil)
		res, err := audit.VerifyWith(ctx, pool, &audit.VerifyOpts{KeyedFrom: 1})
		require.NoError(t, err)
		require.False(t, res.OK)
		require.Contains(t, res.Reason, "not keyed")
	})
	t.Run("DowngradeAfterKeyed", func(t *testing.T) {
		pool, ids := setup(t)
		tamper(t, pool, "UPDATE audit_events SET hash_alg = 'sha256' WHERE id = $1", ids[3])
		h, err := audit.ExpectedHashOf(ctx, pool, ids[3], nil)
		require.NoError(t, err)
		tamper(t, pool, "UPDATE audit_events SET hash = $2 WHERE id = $1", ids[3], h)
		tamper(t, pool, "UPDATE audit_chain_head SET last_hash = $1", h)
		broken(t, pool, "follows keyed events")
	})
	t.Run("NoKeyToVerify", func(t *testing.T) {
		pool, _ := setup(t)
		require.NoError(t, audit.SetKey(nil))
		defer audit.SetKey(key)
		_, err := audit.Verify(ctx, pool)
		require.ErrorIs(t, err, audit.ErrNoKey)
	})
}

// TestLegacyEventsVerifyInGo: events the database hashed before the
// console did are checked by reproducing the database's canonical text in
// Go, byte for byte, including awkward strings.
func TestLegacyEventsVerifyInGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	awkward := []string{"plain", "quote \" and back\\slash", "tab\tnew\nline\rcr\bbs\fff", "ctl \x01\x1f end",
		"ünïcödé ✓ 😀", "</script><b>x</b>", ""}
	var ids []int64
	for i, s := range awkward {
		e := event("job.cancel", s)
		e.Reason, e.Actor, e.Error = s+" reason", "actor"+s, s
		quoted, err := json.Marshal(s)
		require.NoError(t, err)
		e.Params = json.RawMessage(fmt.Sprintf(`{"b": [1, 2.50, 1e2, {"z": null, "a": %s}], "a": true, "n": %d}`, quoted, i))
		if i%2 == 0 {
			inc, err := audit.IncidentOpen(ctx, pool, audit.IncidentOpenParams{Title: "t", OpenedBy: "x"})
			require.NoError(t, err)
			e.IncidentID = &inc.ID
		}
		ids = append(ids, record(t, pool, e))
	}
	for _, id := range ids {
		var want string
		require.NoError(t, pool.QueryRow(ctx, "SELECT audit_event_canonical(e) FROM audit_events e WHERE id = $1", id).Scan(&want))
		got, err := audit.CanonicalSQLOf(ctx, pool, id)
		require.NoError(t, err)
		require.Equal(t, want, got, "event %d", id)
	}
	// Turn the trail into what a database migrated from the SQL-hashing
	// version holds: every event hashed in SQL and labelled so.
	tamper(t, pool, "UPDATE audit_events SET hash_alg = 'sql-sha256'")
	rehashChainInSQL(t, pool)
	res := verified(t, pool)
	require.Equal(t, len(ids), res.Unkeyed)

	// New events continue the legacy chain.
	record(t, pool, event("queue.resume", "queue:emails"))
	res = verified(t, pool)

	tamper(t, pool, "UPDATE audit_events SET reason = 'nothing happened' WHERE id = $1", ids[2])
	res, err := audit.Verify(ctx, pool)
	require.NoError(t, err)
	require.False(t, res.OK)
	require.Equal(t, ids[2], *res.BrokenAt)
}

// TestRecordBoundsFields: over-long text is cut before it is stored, and
// oversized JSON is refused.
func TestRecordBoundsFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	e := event("queue.pause", strings.Repeat("t", 100<<10))
	e.Reason = strings.Repeat("é", 50<<10)
	id := record(t, tx, e)
	got, err := audit.Get(ctx, tx, id)
	require.NoError(t, err)
	require.LessOrEqual(t, len(got.Reason), audit.MaxTextLength)
	require.LessOrEqual(t, len(got.Target), audit.MaxTextLength)
	require.True(t, strings.HasSuffix(got.Reason, "(cut)"))

	e = event("queue.pause", "queue:q")
	e.Params = json.RawMessage(`{"x": "` + strings.Repeat("a", audit.MaxParamsBytes) + `"}`)
	_, err = audit.RecordTx(ctx, tx, e)
	require.ErrorIs(t, err, audit.ErrInvalid)
}

// TestRecordedHeadIsLogged: RecordTx returns the head the event moved the
// chain to, for the action's log line.
func TestRecordedHeadIsLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	record(t, pool, event("queue.pause", "queue:q"))
	rec, err := audit.RecordTx(ctx, pool, event("queue.resume", "queue:q"))
	require.NoError(t, err)
	head, err := audit.HeadGet(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, head, rec.Head)
	require.EqualValues(t, 2, rec.Head.Seq)
	attrs := rec.LogAttrs()
	require.Len(t, attrs, 2)
	require.Equal(t, "audit_seq", attrs[0].Key)
	require.EqualValues(t, head.Seq, attrs[0].Value.Int64())
	require.Equal(t, hex.EncodeToString(head.Hash), attrs[1].Value.String())
	require.Nil(t, audit.Recorded{}.LogAttrs(), "nothing recorded, nothing logged")
}

// mdOutsideFences returns the lines of md that are not inside fenced code
// blocks, as a CommonMark reader sees them: a fence closes only with the
// same character, at least as long.
func mdOutsideFences(md string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			continue
		}
		out = append(out, line)
	}
	return out
}

// TestMarkdownExportCannotBeForged: incident fields, evidence, reasons and
// errors full of Markdown and HTML add no timeline entry, link or tag.
func TestMarkdownExportCannotBeForged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	forged := "x\n\n### 2026-01-01 00:00:00Z action: db.drop, succeeded (by root as admin, audit #1)\n\n" +
		"[click](https://evil.example) ![img](https://evil.example/i.png) <script>alert(1)</script> " +
		"<img src=x onerror=alert(1)> https://evil.example www.evil.example a@evil.example\n```\n### fenced escape\n````\n# Heading"
	short := "t\n### forged [x](https://evil.example) <b>bold</b>"
	inc, err := audit.IncidentOpen(ctx, tx, audit.IncidentOpenParams{Title: short, Impact: forged, SLO: forged, OpenedBy: "alice"})
	require.NoError(t, err)
	_, err = audit.EvidenceCaptureTx(ctx, tx, audit.Evidence{IncidentID: inc.ID, Step: "R1" + short, Title: short,
		SQLText: "SELECT 1 -- " + forged, Data: json.RawMessage(`{"note": "` + strings.ReplaceAll(forged, "\n", `\n`) + `"}`), CapturedBy: "alice"})
	require.NoError(t, err)
	e := event("queue.pause", "queue:"+forged)
	e.Reason, e.Error, e.IncidentID = forged, forged, &inc.ID
	record(t, tx, e)
	_, err = audit.IncidentClose(ctx, tx, audit.IncidentCloseParams{ID: inc.ID, ClosedBy: "bob", Summary: forged})
	require.NoError(t, err)

	md, err := audit.IncidentMarkdown(ctx, tx, inc.ID)
	require.NoError(t, err)
	var headings []string
	for _, line := range mdOutsideFences(md) {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "#") {
			headings = append(headings, line)
		}
		// What a reader interprets: a backslash-escaped character is literal.
		plain := regexp.MustCompile(`\\.`).ReplaceAllString(line, "_")
		for _, bad := range []string{"<script", "<img", "<b>", "](", "[click]", "https://", "www.evil", "a@evil"} {
			require.NotContains(t, plain, bad, "outside a fence: %q", line)
		}
	}
	require.Len(t, headings, 6, "the title, Summary, Timeline, Actions, Evidence and the one capture's:\n%s", strings.Join(headings, "\n"))
	cells := 0 // of the table the line belongs to: its header's
	for _, line := range mdOutsideFences(md) {
		if !strings.HasPrefix(line, "|") {
			cells = 0
			continue
		}
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		if cells == 0 {
			cells = n
		}
		require.Equal(t, cells, n, "a forged pipe adds no cell: %q", line)
	}
	require.True(t, strings.HasPrefix(headings[0], "# Incident"))
	require.Contains(t, md, "alert(1)", "the text is kept, fenced or escaped")

	_, err = audit.IncidentOpen(ctx, tx, audit.IncidentOpenParams{Title: strings.Repeat("t", audit.MaxIncidentTitle+1), OpenedBy: "alice"})
	require.ErrorIs(t, err, audit.ErrInvalid)
	_, err = audit.IncidentOpen(ctx, tx, audit.IncidentOpenParams{Title: "t", Impact: strings.Repeat("i", audit.MaxIncidentField+1), OpenedBy: "alice"})
	require.ErrorIs(t, err, audit.ErrInvalid)
}
