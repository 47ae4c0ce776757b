package diagnostics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// narrativeAt is the time the staged rounds are read at.
var narrativeAt = time.Date(2026, 12, 6, 14, 3, 0, 0, time.UTC)

// blockedQueueRound is an incident: pid 4242, idle in transaction, holds
// the locks a worker waits for; queue emails backs up behind it; jobs
// carries dead rows its snapshot keeps; a slot keeps 2 GiB of WAL.
func blockedQueueRound() diagnostics.Round {
	parent := int32(4242)
	return diagnostics.Round{
		At: narrativeAt,
		Blocking: []diagnostics.BlockingNode{
			{PID: 4242, IsRoot: true, State: "idle in transaction", ApplicationName: "report", BlockedCount: 3, MaxWaitSeconds: 700, XactAgeSeconds: 1500},
			{PID: 5000, ParentPID: &parent, Depth: 1, WaitSeconds: 700},
		},
		Queues: []diagnostics.QueueStat{{Queue: "emails", Ready: 1204, OldestReadySeconds: 720, Running: 3}},
		Xmin:   []diagnostics.XminHolder{{Kind: "backend", Holder: "4242", Xmin: "900", XIDAge: 60_000_000, HoldsTables: true, Detail: "idle in transaction report"}},
		Tables: []diagnostics.TableStat{{Schema: "public", Table: "jobs", DeadTuples: 250_000, QueueTable: true}},
		Slots:  []diagnostics.Slot{{SlotName: "cdc", Active: true, RetainedBytes: 2 << 30, WALStatus: "extended"}},
	}
}

func riskOf(name string) (string, string) {
	if name == findings.ActionBackendTerminate {
		return "Terminate a backend", "high"
	}
	return "", ""
}

// The paragraph says what is stuck and since when, the root and what it
// holds, what it costs, and the action with its risk.
func TestNarrativeOfABlockedQueue(t *testing.T) {
	fs := findings.Evaluate(blockedQueueRound(), diagnostics.DefaultThresholds())
	n := findings.NewNarrative(fs, narrativeAt, &findings.NarrativeOpts{RiskFunc: riskOf})
	require.Equal(t, "Queue emails is stuck since 13:51 UTC (12m00s): 1,204 jobs ready. "+
		`Why: pid 4242 (application "report", idle in transaction, transaction 25m00s old) holds the locks 3 backends wait for. `+
		"It costs 1,204 ready jobs in emails, 250,000 dead rows VACUUM cannot remove and 2 GiB of WAL kept in pg_wal. "+
		"The action that fits: Terminate a backend (backend.terminate) on pid 4242, risk high: its transaction rolls back and its session ends.", n.Text)
	require.Equal(t, findings.ActionBackendTerminate, n.Action)
	require.EqualValues(t, 4242, n.Subject["pid"])
	require.Equal(t, "/runbook/blocking", n.Runbook)

	// Told from a recording (a closed incident's opening), the action is
	// the one that fitted then, and the rest is the same paragraph.
	past := findings.NewNarrative(fs, narrativeAt, &findings.NarrativeOpts{RiskFunc: riskOf, Recorded: true})
	require.Equal(t, strings.Replace(n.Text, "The action that fits: ", "The action that fitted then: ", 1), past.Text)
	require.NotEqual(t, n.Text, past.Text)
}

// A recorded round's findings come back from JSON with float64 numbers:
// the paragraph reads the same.
func TestNarrativeReadsRecordedFindings(t *testing.T) {
	fs := findings.Evaluate(blockedQueueRound(), diagnostics.DefaultThresholds())
	b, err := json.Marshal(fs)
	require.NoError(t, err)
	var back []findings.Finding
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, findings.NewNarrative(fs, narrativeAt, nil).Text, findings.NewNarrative(back, narrativeAt, nil).Text)
}

// Nothing worse than info: no paragraph.
func TestNarrativeIsEmptyWhenNothingNeedsAttention(t *testing.T) {
	fs := findings.Evaluate(diagnostics.Round{At: narrativeAt,
		Queues: []diagnostics.QueueStat{{Queue: "quiet", Paused: true}}}, diagnostics.DefaultThresholds())
	require.NotEmpty(t, fs, "a paused queue is an info finding")
	require.Equal(t, findings.Narrative{}, findings.NewNarrative(fs, narrativeAt, nil))
}

// A standby's feedback as the only cause: the paragraph names the standby
// and the pid holding the snapshot there, and says no console action fits.
func TestNarrativeOfStandbyFeedback(t *testing.T) {
	pid := int32(777)
	age := 3600.0
	r := diagnostics.Round{At: narrativeAt,
		Xmin:     []diagnostics.XminHolder{{Kind: "standby", Holder: "replica-1", Xmin: "900", XIDAge: 60_000_000, HoldsTables: true, Detail: "10.0.0.7"}},
		Standbys: []diagnostics.StandbyState{{InRecovery: true, URL: "db-r1:5432/app", ApplicationName: "replica-1", OldestPID: &pid, OldestQuery: "SELECT * FROM orders", OldestXactSeconds: &age}},
		Tables:   []diagnostics.TableStat{{Schema: "public", Table: "outbox_events", DeadTuples: 50_000, QueueTable: true}},
	}
	n := findings.NewNarrative(findings.Evaluate(r, diagnostics.DefaultThresholds()), narrativeAt, nil)
	require.Contains(t, n.Text, "standby replica-1 holds the xmin horizon, 60,000,000 transactions back")
	require.Contains(t, n.Text, "on the standby pid 777 holds the oldest snapshot")
	require.Contains(t, n.Text, "50,000 dead rows VACUUM cannot remove")
	require.Contains(t, n.Text, "No console action fits it")
	require.Empty(t, n.Action)
}

// A prepared transaction at the root: only COMMIT or ROLLBACK PREPARED
// releases its locks, and the action that fits is the rollback.
func TestNarrativeOfAPreparedRoot(t *testing.T) {
	r := diagnostics.Round{At: narrativeAt,
		Blocking: []diagnostics.BlockingNode{{Kind: diagnostics.NodePrepared, GID: "pay-17", IsRoot: true, BlockedCount: 2, MaxWaitSeconds: 90, XactAgeSeconds: 600}}}
	n := findings.NewNarrative(findings.Evaluate(r, diagnostics.DefaultThresholds()), narrativeAt, nil)
	require.Contains(t, n.Text, `prepared transaction "pay-17", 10m00s old, holds the locks 2 backends wait for`)
	require.Contains(t, n.Text, "since 14:01 UTC (1m30s)")
	require.Contains(t, n.Text, "prepared_xact.rollback on gid pay-17")
	require.Equal(t, findings.ActionPreparedRollback, n.Action)
}

// A real incident: a session idle in transaction holds a job's row lock, a
// worker waits behind it and queue emails backs up; the paragraph built
// from a real round names the queue, the root's pid and application, and
// the action.
func TestNarrativeOfAStagedIncident(t *testing.T) {
	ctx, url := freshDB(t)
	setup := connect(t, url, "setup")
	_, err := setup.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'emails', 'send' FROM generate_series(1, 5)")
	require.NoError(t, err)
	root := connect(t, url, "report-job")
	_, err = root.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = root.Exec(ctx, "SELECT id FROM jobs WHERE queue = 'emails' ORDER BY id LIMIT 1 FOR UPDATE")
	require.NoError(t, err)
	waiter := connect(t, url, "worker")
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		_, _ = waiter.Exec(context.Background(), "UPDATE jobs SET priority = priority WHERE id = (SELECT min(id) FROM jobs WHERE queue = 'emails')")
	}()
	// Before the sessions close (cleanups run last first): let the waiter
	// through, and wait for its statement to end, so no connection is
	// closed while a statement runs on it.
	t.Cleanup(func() {
		_, _ = root.Exec(context.Background(), "ROLLBACK")
		<-waited
	})
	connect(t, url, "watch")
	th := lowThresholds()
	th.QueueBacklogAge = 0
	d := open(t, url, diagnostics.Config{Thresholds: th})
	awaitFinding(t, d, findings.CodeRootBlocker, 15*time.Second, nil)

	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	// The blocking tree is the whole server's: tests beside this one stage
	// chains of their own. The paragraph is built from this incident's
	// findings: the root findings of other pids are left out.
	var mine []findings.Finding
	for _, f := range rep.Findings {
		if pid, ok := f.Subject["pid"]; f.Code == findings.CodeRootBlocker && ok && fmt.Sprint(pid) != fmt.Sprint(pidOf(root)) {
			continue
		}
		mine = append(mine, f)
	}
	n := findings.NewNarrative(mine, rep.GeneratedAt, nil)
	require.Regexp(t, `^Queue emails is stuck since \d\d:\d\d UTC \([^)]+\): 5 jobs ready`, n.Text)
	require.Contains(t, n.Text, fmt.Sprintf(`Why: pid %d (application "report-job", idle in transaction`, pidOf(root)))
	require.Contains(t, n.Text, "holds the locks 1 backend waits for")
	require.Contains(t, n.Text, fmt.Sprintf("The action that fits: backend.terminate on pid %d", pidOf(root)))
	require.Equal(t, findings.ActionBackendTerminate, n.Action)
}
