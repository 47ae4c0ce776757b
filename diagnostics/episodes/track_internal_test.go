package episodes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 3, 3, 12, 40, 0, time.UTC)

func waiter(pid int32, blockedBy []int32, waitStart time.Time) session {
	ws := waitStart
	return session{PID: pid, Waits: true, BlockedBy: blockedBy, WaitStart: &ws, ApplicationName: "app", Relation: "t"}
}

func holder(pid int32) session { return session{PID: pid, ApplicationName: "holder"} }

// Two waiters behind two separate roots are two episodes; a waiter behind
// both joins them into one.
func TestComponentsSplitByRoot(t *testing.T) {
	comps := components([]session{holder(1), holder(2), waiter(10, []int32{1}, t0), waiter(20, []int32{2}, t0)})
	require.Len(t, comps, 2)
	comps = components([]session{holder(1), holder(2), waiter(10, []int32{1}, t0), waiter(20, []int32{2}, t0), waiter(30, []int32{1, 2}, t0)})
	require.Len(t, comps, 1)
	require.Equal(t, []sessionKey{{pid: 1}, {pid: 2}}, comps[0].roots)
	require.Len(t, comps[0].waiters, 3)
}

// A chain's root is the session at its head, not the waiter in between; a
// prepared transaction (pid 0) is a root; a cycle's lowest pid stands for
// its root.
func TestComponentsFindTheRoot(t *testing.T) {
	comps := components([]session{holder(1), waiter(10, []int32{1}, t0), waiter(11, []int32{10}, t0)})
	require.Len(t, comps, 1)
	require.Equal(t, []sessionKey{{pid: 1}}, comps[0].roots)

	comps = components([]session{waiter(10, []int32{0}, t0)})
	require.Equal(t, []sessionKey{{pid: 0}}, comps[0].roots)

	comps = components([]session{waiter(12, []int32{11}, t0), waiter(11, []int32{12}, t0)})
	require.Len(t, comps, 1)
	require.Equal(t, []sessionKey{{pid: 11}}, comps[0].roots)
}

// The same wait seen in consecutive looks is one episode; the same session
// waiting again (a new waitstart) behind the same root is a new one, even
// when no look fell between the two waits; an episode ends at the first
// look without it.
func TestTrackerJoinsLooksOfOneWait(t *testing.T) {
	var tr tracker
	look := []session{holder(1), waiter(10, []int32{1}, t0.Add(-300*time.Millisecond))}
	started, seen, ended := tr.observe(t0, look)
	require.Len(t, started, 1)
	require.Empty(t, seen)
	require.Empty(t, ended)
	ep := started[0]
	require.Equal(t, t0.Add(-300*time.Millisecond), ep.start, "the episode starts at the wait's start, not at the look")

	started, seen, ended = tr.observe(t0.Add(time.Second), look)
	require.Empty(t, started)
	require.Equal(t, []*tracked{ep}, seen)
	require.Empty(t, ended)

	again := []session{holder(1), waiter(10, []int32{1}, t0.Add(1500*time.Millisecond))}
	started, seen, ended = tr.observe(t0.Add(2*time.Second), again)
	require.Len(t, started, 1, "a new wait of the same session is a new episode")
	require.Empty(t, seen)
	require.Equal(t, []*tracked{ep}, ended)
	require.Equal(t, t0.Add(2*time.Second), ep.end)

	_, _, ended = tr.observe(t0.Add(3*time.Second), nil)
	require.Equal(t, started, ended)
	require.Empty(t, tr.open)
}

// A waiter whose wait is now behind another root (the first committed, a
// second took the lock) starts a new episode.
func TestTrackerNewRootIsNewEpisode(t *testing.T) {
	var tr tracker
	started, _, _ := tr.observe(t0, []session{holder(1), waiter(10, []int32{1}, t0)})
	require.Len(t, started, 1)
	started2, seen, ended := tr.observe(t0.Add(time.Second), []session{holder(2), waiter(10, []int32{2}, t0)})
	require.Len(t, started2, 1)
	require.Empty(t, seen)
	require.Equal(t, started, ended)
}

// An episode counts its peak of sessions waiting at once, the jobs held
// up, and the engine's job claims among its waiters.
func TestTrackerCountsWhatWasHeldUp(t *testing.T) {
	var tr tracker
	w1 := waiter(10, []int32{1}, t0)
	job := waiter(11, []int32{1}, t0)
	job.ApplicationName = "console-worker job=42"
	claim := waiter(12, []int32{1}, t0)
	claim.ApplicationName, claim.Query = "console-worker", "-- JobClaim: leases up to $2 due ready jobs\nWITH settings AS (SELECT 1)"
	started, _, _ := tr.observe(t0, []session{holder(1), w1})
	tr.observe(t0.Add(time.Second), []session{holder(1), w1, job, claim})
	_, _, ended := tr.observe(t0.Add(2*time.Second), []session{holder(1), job})
	require.Empty(t, ended)
	ep := started[0]
	require.Equal(t, 3, ep.peakWaiting)
	require.Equal(t, map[int64]bool{42: true}, ep.jobs)
	require.Len(t, ep.claims, 1)
	require.Equal(t, []string{"t"}, ep.tables)
	require.Equal(t, "holder", ep.rootParticipant().Application)
	require.Equal(t, "root", ep.rootParticipant().Role)
}

// The same statement with other values has one fingerprint; another
// statement has another; the console's own statements carry their name.
func TestFingerprint(t *testing.T) {
	a := Fingerprint("UPDATE accounts SET n = n + 1 WHERE id = 1")
	require.Equal(t, a, Fingerprint("update  accounts set n = n + 7\n WHERE id = 42 -- retry"))
	require.NotEqual(t, a, Fingerprint("UPDATE ledger SET n = n + 1 WHERE id = 1"))
	require.Equal(t, Fingerprint("SELECT 'a' FROM t1"), Fingerprint("SELECT 'it''s' FROM t1"))
	require.NotEqual(t, Fingerprint("SELECT x FROM t1"), Fingerprint("SELECT x FROM t2"), "digits inside names are kept")
	require.Regexp(t, `^JobClaim:[0-9a-f]{16}$`, Fingerprint("-- JobClaim: leases jobs\nWITH s AS (SELECT 1) SELECT 2"))
	require.Empty(t, Fingerprint("  -- only a comment"))
	require.Equal(t, "WITH s AS (SELECT 1) SELECT 2", statementText("-- JobClaim: leases jobs\n-- more header\nWITH s AS (SELECT 1) SELECT 2"),
		"the recorded text leaves out the header, whose name the fingerprint keeps")
	require.Equal(t, "-- JobClaim: leases jobs", statementText("-- JobClaim: leases jobs\n-- the rest of a header the server cut"),
		"a header that fills the text the server kept stands for the statement")
	require.Regexp(t, `^JobClaim:`, Fingerprint("-- JobClaim: leases jobs\n-- the rest of a header the server cut"))
}

// A queue of 300 sessions for one row, each blocked by the holder and by
// every waiter ahead of it (as pg_blocking_pids reports a tuple lock's
// queue), is one episode behind the holder, folded at once.
func TestQueueOfThreeHundredIsOneEpisode(t *testing.T) {
	at := time.Now()
	sessions := []session{{PID: 1, ApplicationName: "holder"}}
	for i := int32(2); i <= 301; i++ {
		blockers := []int32{1}
		for j := int32(2); j < i; j++ {
			blockers = append(blockers, j)
		}
		sessions = append(sessions, session{PID: i, Waits: true, BlockedBy: blockers, WaitStart: &at})
	}
	done := make(chan []component, 1)
	go func() { done <- components(sessions) }()
	select {
	case comps := <-done:
		require.Len(t, comps, 1)
		require.Equal(t, []sessionKey{{pid: 1}}, comps[0].roots)
		require.Len(t, comps[0].waiters, 300)
	case <-time.After(30 * time.Second):
		t.Fatal("300 queued waiters were not folded within 30s: the walk repeats shared paths")
	}
}
