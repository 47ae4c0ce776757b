package diagnostics_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

func ptr[T any](v T) *T { return &v }

// Evaluate covers the findings that are hard to cause for real in a test
// (a full NOTIFY queue, a lost slot), and the JSON shape of the report.
func TestEvaluateAndReportJSON(t *testing.T) {
	now := time.Date(2026, 6, 20, 14, 3, 12, 0, time.UTC)
	r := diagnostics.Round{
		At:     now,
		Notify: &diagnostics.NotifyUsage{Usage: 0.95},
		Slots: []diagnostics.Slot{{
			SlotName: "cdc", SlotType: "logical", Active: true, RetainedBytes: 10, WALStatus: "unreserved",
			SafeWALSize: ptr[int64](0),
		}},
		Archiver:    &diagnostics.ArchiverStat{Failing: true, LastFailedWAL: "000000010000000000000042", FailedCount: 3},
		WALRate:     ptr(200.0 * (1 << 20)),
		Unavailable: []diagnostics.Unavailable{{Check: "queue_health", Status: "locked by pid 7", LockedBy: []int32{7}}},
		Standbys:    []diagnostics.StandbyState{{InRecovery: true, URL: "10.0.0.2:5432", ReplayLagBytes: 100 << 20, ReplayPauseState: "paused"}},
	}
	fs := findings.Evaluate(r, diagnostics.DefaultThresholds())
	byCode := map[string]findings.Finding{}
	for _, f := range fs {
		byCode[f.Code] = f
		require.NotNil(t, f.Actions, f.Code)
		require.NotEmpty(t, f.Runbook, f.Code)
		require.NotEmpty(t, f.Evidence, f.Code)
	}
	require.Equal(t, findings.SeverityCritical, byCode["notify.queue_usage"].Severity)
	require.Equal(t, findings.SeverityCritical, byCode["replication.slot_retention"].Severity, "unreserved is critical")
	require.NotContains(t, byCode, "replication.slot_inactive", "the slot is active")
	require.Equal(t, "000000010000000000000042", byCode["archiver.failing"].Subject["last_failed_wal"])
	require.Contains(t, byCode, "wal.rate_high")
	require.Equal(t, "queue_health", byCode["diagnostics.unavailable"].Subject["check"])
	require.Equal(t, "/runbook/queues", byCode["diagnostics.unavailable"].Runbook)
	require.Equal(t, true, byCode["replication.lag"].Subject["paused"])
	require.Equal(t, findings.SeverityCritical, fs[0].Severity, "worst first")

	b, err := json.Marshal(findings.Report{GeneratedAt: now, Findings: fs})
	require.NoError(t, err)
	var decoded struct {
		GeneratedAt string                       `json:"generated_at"`
		Findings    []map[string]json.RawMessage `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(b, &decoded))
	require.Equal(t, "2026-06-20T14:03:12Z", decoded.GeneratedAt)
	for _, f := range decoded.Findings {
		keys := []string{}
		for k := range f {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, []string{"code", "severity", "title", "subject", "evidence", "runbook", "actions"}, keys)
	}

	empty, err := json.Marshal(findings.Report{GeneratedAt: now, Findings: findings.Evaluate(diagnostics.Round{At: now}, diagnostics.DefaultThresholds())})
	require.NoError(t, err)
	require.JSONEq(t, `{"generated_at":"2026-06-20T14:03:12Z","findings":[]}`, string(empty))
}

// A database that cannot be reached is a finding, not an error, and the
// round ends within the budget.
func TestFindingsWhenTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	d := open(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", diagnostics.Config{Budget: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	require.Len(t, rep.Findings, 1)
	require.Equal(t, findings.CodeUnavailable, rep.Findings[0].Code)
	require.Equal(t, "server_info", rep.Findings[0].Subject["check"])
	res := d.BlockingTree(ctx)
	require.Error(t, res.Err)
	require.Contains(t, res.Status(), "error")
}

func TestReportText(t *testing.T) {
	now := time.Date(2026, 6, 20, 14, 3, 12, 0, time.UTC)
	var b strings.Builder
	require.NoError(t, findings.Report{GeneratedAt: now, Findings: []findings.Finding{}}.WriteText(&b))
	require.Contains(t, b.String(), "no findings")
	rep := findings.Report{GeneratedAt: now, Findings: findings.Evaluate(diagnostics.Round{At: now,
		Notify: &diagnostics.NotifyUsage{Usage: 0.6}}, diagnostics.DefaultThresholds())}
	b.Reset()
	require.NoError(t, rep.WriteText(&b))
	require.Contains(t, b.String(), "WARNING  notify.queue_usage")
	require.Contains(t, b.String(), "runbook /runbook/rb-p")
	require.Equal(t, findings.SeverityWarning, rep.Worst())

	th := diagnostics.DefaultThresholds()
	require.NoError(t, findings.SetThresholdFlag(&th, "tx.long_running=45s"))
	require.Equal(t, 45*time.Second, th.LongRunningTx)
	require.Error(t, findings.SetThresholdFlag(&th, "tx.long_running"))
}

// A worker found dead had its running jobs reclaimed before their leases
// expired: the expired-leases finding of each queue it served says so, as
// evidence beside expired leases, or as an info finding of its own, for
// recentReclaim after the reclaim.
func TestExpiredLeasesFindingSaysWhenJobsWereReclaimedEarly(t *testing.T) {
	now := time.Date(2026, 6, 20, 14, 3, 12, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { return ptr(now.Add(-d)) }
	r := diagnostics.Round{
		At: now,
		Queues: []diagnostics.QueueStat{
			{Queue: "mail", Running: 4},
			{Queue: "billing", Running: 9, ExpiredLeases: 3, OldestExpiredLease: ago(time.Minute)},
			{Queue: "reports", Running: 2},
		},
		Workers: []diagnostics.Worker{
			{ID: "w-dead", Host: "node-7", PID: 4242, Queues: []string{"mail", "billing"}, StoppedAt: ago(2 * time.Minute),
				ReclaimedAt: ago(2 * time.Minute), ReclaimedJobs: 8},
			{ID: "w-long-ago", Host: "node-3", PID: 99, Queues: []string{"reports"}, StoppedAt: ago(time.Hour),
				ReclaimedAt: ago(time.Hour), ReclaimedJobs: 5},
			{ID: "w-live", Host: "node-8", PID: 7, Queues: []string{"mail"}, Alive: true},
		},
	}
	byQueue := map[string]findings.Finding{}
	for _, f := range findings.Evaluate(r, diagnostics.DefaultThresholds()) {
		if f.Code == findings.CodeExpiredLeases {
			byQueue[f.Subject["queue"].(string)] = f
		}
	}
	require.NotContains(t, byQueue, "reports", "a reclaim an hour old is history, not a finding")

	mail := byQueue["mail"]
	require.Equal(t, findings.SeverityInfo, mail.Severity, "no lease expired: the jobs came back early")
	require.Equal(t, "Queue mail: a dead worker's 8 running jobs were reclaimed early", mail.Title)
	require.Contains(t, mail.Evidence, "worker w-dead (node-7, pid 4242) was found dead at 2026-06-20T14:01:12Z")
	require.Empty(t, mail.Actions, "nothing to do: the jobs run again")

	billing := byQueue["billing"]
	require.Equal(t, findings.SeverityWarning, billing.Severity)
	require.Equal(t, "Queue billing: 3 running jobs with expired leases", billing.Title)
	require.Contains(t, billing.Evidence, "worker w-dead (node-7, pid 4242) was found dead at 2026-06-20T14:01:12Z")
	require.Equal(t, []string{findings.ActionLeaseExpire}, billing.Actions)

	off := diagnostics.DefaultThresholds()
	off.ExpiredLeases = 0
	for _, f := range findings.Evaluate(r, off) {
		require.NotEqual(t, findings.CodeExpiredLeases, f.Code, "a zero threshold turns the finding off")
	}
}

// Where the thresholds of the archiver and deadlock findings lie: a stall
// is counted from the oldest .ready file and the last archived segment, not
// from a failure; not configured fires on one segment, whatever the
// backlog threshold; deadlocks need the count within the window.
// lock.repeat_blocker fires from the threshold's number of episodes of one
// application on, and a threshold of 0 turns it off.
func TestRepeatBlockerThreshold(t *testing.T) {
	round := func(n int) diagnostics.Round {
		return diagnostics.Round{At: time.Now(), RepeatBlockers: []diagnostics.RepeatBlocker{{RootApplication: "etl", Episodes: n, ClaimsDelayed: n}}}
	}
	has := func(r diagnostics.Round, th diagnostics.Thresholds) bool {
		for _, f := range findings.Evaluate(r, th) {
			if f.Code == findings.CodeRepeatBlocker {
				return true
			}
		}
		return false
	}
	th := diagnostics.DefaultThresholds()
	require.False(t, has(round(2), th))
	require.True(t, has(round(3), th))
	th.RepeatBlockers = 5
	require.False(t, has(round(4), th))
	require.True(t, has(round(5), th))
	th.RepeatBlockers = 0
	require.False(t, has(round(50), th), "0 turns the rule off")
}

func TestArchiverAndDeadlockThresholds(t *testing.T) {
	now := time.Date(2026, 6, 20, 14, 3, 12, 0, time.UTC)
	th := diagnostics.DefaultThresholds()
	th.ArchiverBacklog = 100
	has := func(r diagnostics.Round, code string) bool {
		for _, f := range findings.Evaluate(r, th) {
			if f.Code == code {
				return true
			}
		}
		return false
	}
	archiver := func(a diagnostics.ArchiverStat) diagnostics.Round { return diagnostics.Round{At: now, Archiver: &a} }
	recent := now.Add(-time.Minute)

	require.True(t, has(archiver(diagnostics.ArchiverStat{ArchiveMode: "on", ArchivingConfigured: ptr(false), ReadySegments: ptr[int64](1)}), findings.CodeArchiverNotConfigured))
	require.False(t, has(archiver(diagnostics.ArchiverStat{ArchiveMode: "on", ArchivingConfigured: ptr(false), ReadySegments: ptr[int64](0)}), findings.CodeArchiverNotConfigured), "nothing waits yet")
	require.False(t, has(archiver(diagnostics.ArchiverStat{ArchiveMode: "on", ReadySegments: ptr[int64](1)}), findings.CodeArchiverNotConfigured), "the settings could not be read")
	require.False(t, has(archiver(diagnostics.ArchiverStat{ArchiveMode: "off", ArchivingConfigured: ptr(false)}), findings.CodeArchiverNotConfigured))

	stall := th.ArchiverStall.Seconds()
	configured := diagnostics.ArchiverStat{ArchiveMode: "on", ArchivingConfigured: ptr(true), ReadySegments: ptr[int64](2)}
	old, young := configured, configured
	old.OldestReadySeconds, young.OldestReadySeconds = ptr(stall), ptr(stall-1)
	require.True(t, has(archiver(old), findings.CodeArchiverStalled))
	require.False(t, has(archiver(young), findings.CodeArchiverStalled), "the oldest segment is younger than the threshold")
	old.LastArchivedTime = &recent
	require.False(t, has(archiver(old), findings.CodeArchiverStalled), "something was archived a minute ago")

	window := func(n int64) diagnostics.Round {
		return diagnostics.Round{At: now, Deadlocks: &diagnostics.DeadlockWindow{From: now.Add(-time.Minute), To: now, Total: n,
			ByDatabase: []diagnostics.DeadlockStat{{Database: "app", Deadlocks: n}}}}
	}
	th.Deadlocks = 3
	require.False(t, has(window(2), findings.CodeDeadlocks))
	require.True(t, has(window(3), findings.CodeDeadlocks))
	require.False(t, has(diagnostics.Round{At: now}, findings.CodeDeadlocks), "no window on the first round")
}
