package diagnostics_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
)

// everyCodeRound is a round in which, with everyCodeThresholds, every rule
// finds something: two queues, two slots, a standby seen from both sides.
func everyCodeRound() diagnostics.Round {
	now := time.Date(2026, 6, 20, 14, 3, 12, 0, time.UTC)
	ago := now.Add(-2 * time.Hour)
	parent := int32(100)
	starved := "acme"
	return diagnostics.Round{
		At: now,
		Blocking: []diagnostics.BlockingNode{
			{PID: 100, IsRoot: true, State: "idle in transaction", BlockedCount: 1, MaxWaitSeconds: 30},
			{PID: 101, ParentPID: &parent, Depth: 1, WaitSeconds: 30, ApplicationName: "console-worker", Query: "-- JobClaim: leases jobs"},
			{Kind: diagnostics.NodePrepared, GID: "g1", IsRoot: true, BlockedCount: 1, MaxWaitSeconds: 30},
			{PID: 102, ParentGID: "g1", Depth: 1, WaitSeconds: 30, ApplicationName: "console-worker", Query: "-- JobAck: acks jobs"},
		},
		Activity: []diagnostics.Backend{
			{PID: 300, State: "active", BackendType: "client backend", XactAgeSeconds: 900, XactStart: &ago},
		},
		IdleTx:      []diagnostics.IdleTx{{PID: 100, IdleSeconds: 120}},
		WALRate:     ptr(200.0 * (1 << 20)),
		Replication: []diagnostics.Standby{{ApplicationName: "s1", ReplayLagBytes: 100 << 20}},
		Standbys: []diagnostics.StandbyState{
			{InRecovery: true, URL: "10.0.0.2:5432", ReplayLagBytes: 100 << 20, ReceiverStatus: "streaming"},
			{InRecovery: true, URL: "10.0.0.3:5432", ReplayPauseState: "paused", ReceiverStatus: "stopping"},
		},
		Slots: []diagnostics.Slot{
			{SlotName: "cdc", Active: true, WALStatus: "lost"},
			{SlotName: "old", Active: false, InactiveSince: &ago},
			{SlotName: "unbounded", MaxSlotWALKeepBytes: -1, RetainedBytes: 1 << 30, PGWALBytes: ptr[int64](5 << 30),
				RetainedGrowth: ptr(10.0 * (1 << 20)), GrowthSeconds: ptr(300.0)},
		},
		Archiver: &diagnostics.ArchiverStat{Failing: true, ReadySegments: ptr[int64](40)},
		Prepared: []diagnostics.PreparedXact{{GID: "g1", Prepared: ago, AgeSeconds: 7200}},
		Xmin: []diagnostics.XminHolder{
			{Kind: "backend", Holder: "100", XIDAge: 60_000_000},
			{Kind: "slot", Holder: "cdc", XIDAge: 60_000_000},
		},
		Tables:      []diagnostics.TableStat{{Schema: "public", Table: "jobs", DeadTuples: 200_000, QueueTable: true}},
		Invalid:     []diagnostics.InvalidIndex{{Schema: "public", Index: "dup_x_idx"}},
		Notify:      &diagnostics.NotifyUsage{Usage: 0.95},
		Connections: []diagnostics.ConnectionGroup{{Database: "app", User: "app", State: "idle", Connections: 90, Used: 95, MaxConnections: 100, Reserved: 3}},
		Sequences:   []diagnostics.SequenceUse{{Sequence: "public.orders_id_seq", Table: "orders", Column: "id", Limit: 100, LastValue: 99, UsedFraction: 0.99}},
		Queues: []diagnostics.QueueStat{
			{Queue: "emails", Ready: 10, OldestReadySeconds: 900, ExpiredLeases: 2, DeadRecent: 20, Running: 3},
			{Queue: "paused", Ready: 5, Paused: true, OldestReadySeconds: 900},
		},
		DeadLetters: []diagnostics.DeadLetterGroup{{Queue: "emails", ErrorClass: "smtp", DeadRecent: 20}},
		Outbox:      &diagnostics.OutboxStat{Pending: 50, OldestPendingSeconds: 700, Dead: 2},
		Workers: []diagnostics.Worker{{ID: "w1", Queues: []string{"other"}, Alive: true,
			RecentErrors: []queues.EngineError{{At: now.Add(-time.Second), Op: "claim", SQLState: "53100", Error: "could not extend file: No space left on device"}}}},
		Wraparound:  []diagnostics.WraparoundAge{{Kind: "database", Database: "app", Name: "app", XIDAge: 1_000_000_000, FreezeMaxAge: 200_000_000}},
		Idempotency: []diagnostics.StuckIdempotencyKey{{Scope: "api", Key: "k1", CreatedAt: ago, AgeSeconds: 7200, Total: 1}},
		LongJobs:    []diagnostics.LongRunningJob{{JobID: 7, Queue: "emails", Kind: "send", StartedAt: ago, RunningSeconds: 7200, UsualSeconds: 2, Samples: 200}},
		Checkpoints: &diagnostics.CheckpointWindow{From: ago, To: now,
			End: diagnostics.CheckpointerStat{CheckpointsRequested: 10, CheckpointsTimed: 1, MaxWALSize: 1 << 30, CheckpointTimeout: 300}},
		StandbyConflicts: []diagnostics.ConflictWindow{{Standby: "10.0.0.2:5432", From: ago, To: now,
			Canceled: diagnostics.StandbyConflict{Snapshot: 3, Total: 3}}},
		WALDir: &diagnostics.WALDirStat{Readable: true, Bytes: ptr[int64](5 << 30), MaxWALSize: 1 << 30},
		Deadlocks: &diagnostics.DeadlockWindow{From: ago, To: now, Total: 2,
			ByDatabase: []diagnostics.DeadlockStat{{Database: "app", Deadlocks: 2}}, DeadlockTimeout: "1s"},
		Tenants: []diagnostics.TenantBacklog{{Queue: "emails", TenantID: &starved, Ready: 4, OldestReadySeconds: 900}},
		RepeatBlockers: []diagnostics.RepeatBlocker{{RootApplication: "nightly-report", Episodes: 3, ClaimsDelayed: 4, WaitedSeconds: 6.2,
			LastAt: now.Add(-time.Minute), Targets: []string{"jobs"}, Statements: []string{"LOCK TABLE jobs IN SHARE MODE"}}},
		River: &diagnostics.RiverEvidence{
			Queues: []river.QueueStat{{Queue: "mail", Available: 5, Scheduled: 2, OldestAvailableAt: &ago, OldestAvailableSeconds: 7200, PausedAt: &ago}},
			Stuck:  []river.StuckJob{{ID: 7, Queue: "mail", Kind: "send", Attempt: 1, AttemptedAt: ago, RunningSeconds: 7200, LimitSeconds: 3600, ClientID: "c1"}},
			Discards: []river.DiscardGroup{{Queue: "mail", Kind: "send", ErrorClass: "smtp ?: refused", Count: 12, SampleJobID: 9,
				SampleError: "smtp 554: refused", FirstSeen: now.Add(-5 * time.Minute), LastSeen: now}},
			LeaderRead: true,
		},
		Unavailable: []diagnostics.Unavailable{
			{Check: diagnostics.CheckXminHorizon, Status: "timed out", Err: errors.New("canceling statement")},
			{Check: "connect", Status: "error: refused"},
		},
	}
}

// TestEveryRuleLinksWhereItSays: each finding code has one rule; on a round
// that trips them all (default thresholds), every finding carries its rule's code, links to its
// rule's runbook page (a failed check to its own step) and suggests only
// actions its rule declares.
func TestEveryRuleLinksWhereItSays(t *testing.T) {
	rules := map[string]findings.Rule{}
	for _, r := range findings.Rules() {
		require.NotContains(t, rules, r.Code, "two rules for %s", r.Code)
		rules[r.Code] = r
		if r.Code != findings.CodeUnavailable {
			require.NotEmpty(t, r.Runbook, "%s links to no runbook page", r.Code)
		}
	}
	fired := map[string]bool{}
	// An archiver is either not configured or configured and stalled: the
	// second round has the other one.
	stalled := everyCodeRound()
	stalled.Archiver = &diagnostics.ArchiverStat{ArchiveMode: "on", ArchivingConfigured: ptr(true), ReadySegments: ptr[int64](3), OldestReadySeconds: ptr(3600.0)}
	unconfigured := everyCodeRound()
	unconfigured.Archiver = &diagnostics.ArchiverStat{ArchiveMode: "on", ArchivingConfigured: ptr(false), ReadySegments: ptr[int64](1), Failing: true}
	var all []findings.Finding
	for _, r := range []diagnostics.Round{everyCodeRound(), stalled, unconfigured} {
		all = append(all, findings.Evaluate(r, diagnostics.DefaultThresholds())...)
	}
	for _, f := range all {
		rule, ok := rules[f.Code]
		require.True(t, ok, "%s has no rule", f.Code)
		fired[f.Code] = true
		want := diagnostics.RunbookURL(rule.Runbook)
		if f.Code == findings.CodeUnavailable {
			want = diagnostics.RunbookURL(diagnostics.StepActivity)
			if c, ok := diagnostics.CheckNamed(f.Subject["check"].(string)); ok {
				want = diagnostics.RunbookURL(c.Step)
			}
		}
		if f.Runbook != want {
			also := false
			for _, p := range rule.AlsoRunbooks {
				also = also || f.Runbook == diagnostics.RunbookURL(p)
			}
			require.True(t, also, "%s: %s links to %s, which its rule does not declare", f.Code, f.Title, f.Runbook)
		}
		for _, a := range f.Actions {
			require.True(t, slices.Contains(rule.Actions, a), "%s suggests %s, which its rule does not declare", f.Code, a)
		}
	}
	for code := range rules {
		require.True(t, fired[code], "the round trips no %s finding", code)
	}
}
