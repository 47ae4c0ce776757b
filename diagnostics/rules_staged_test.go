package diagnostics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// A write transaction that pauses between its statements is old even while
// briefly idle: tx.long_running reports it. Once it has been idle long
// enough for tx.idle_in_transaction, that finding reports it instead, never
// both.
func TestLongRunningCoversPausesBetweenStatements(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "pausing-writer")
	begin(t, c, "INSERT INTO jobs (queue, kind) VALUES ('pause', 'k')")
	pid := pidOf(c)
	th := diagnostics.DefaultThresholds()
	th.LongRunningTx = 300 * time.Millisecond
	th.IdleInTransaction = time.Hour
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	var rep findings.Report
	eventually(t, 15*time.Second, func() (bool, string) {
		var err error
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		_, ok := findingFor(rep, findings.CodeLongRunning, "pid", pid)
		return ok, "no tx.long_running: " + strings.Join(codes(rep), "; ")
	})
	f, _ := findingFor(rep, findings.CodeLongRunning, "pid", pid)
	require.Equal(t, "idle in transaction", f.Subject["state"])
	_, ok := findingFor(rep, findings.CodeIdleInTransaction, "pid", pid)
	require.False(t, ok, "not idle long enough for tx.idle_in_transaction")

	th.IdleInTransaction = 0
	d.SetThresholds(th)
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	_, ok = findingFor(rep, findings.CodeIdleInTransaction, "pid", pid)
	require.True(t, ok, "idle in transaction: %v", codes(rep))
	_, ok = findingFor(rep, findings.CodeLongRunning, "pid", pid)
	require.False(t, ok, "reported once for its open transaction: %v", codes(rep))
}

// A slot whose WAL has outgrown max_wal_size (wal_status extended) with
// little safe_wal_size left is a finding although it retains far less than
// the retention threshold: it is close to being invalidated.
func TestSlotNearExhaustionWhateverItRetains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, conn := primaryWithSlot(t, map[string]string{"max_slot_wal_keep_size": "96MB"}, "far_behind")
	th := diagnostics.DefaultThresholds()
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: &th})
	var slot diagnostics.Slot
	eventually(t, 60*time.Second, func() (bool, string) {
		writeWAL(t, conn, 4<<20)
		res := d.ReplicationSlots(ctx)
		require.NoError(t, res.Err)
		for _, s := range res.Rows {
			if s.SlotName == "far_behind" {
				slot = s
			}
		}
		return slot.WALStatus == "extended", fmt.Sprintf("%+v", slot)
	})
	require.Less(t, slot.RetainedBytes, th.SlotRetentionBytes)
	require.NotNil(t, slot.SafeWALSize)
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeSlotRetention, "slot_name", "far_behind")
	require.True(t, ok, "%v", codes(rep))
	require.Equal(t, "extended", f.Subject["wal_status"])
	require.Contains(t, f.Title, "left before it is invalidated")
	require.Contains(t, f.Evidence, "invalidation_reason none")
}

// A standby whose WAL receiver stopped receives nothing, so what it received
// and has not replayed stays zero while the primary moves on: the true lag
// is the primary's position of the round minus the standby's replay
// position. The stopped receiver is a finding of its own.
func TestStandbyReceiverDownAndTrueLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lagBytes int64 = 512 << 10
	primary, _, d := primaryAndStandby(t, "standby-down", lagBytes)
	writer := connect(t, primary.URL("postgres"), "writer")
	eventually(t, 30*time.Second, func() (bool, string) {
		st := d.StandbyStatus(ctx)
		return len(st) == 1 && st[0].Err == nil && st[0].Rows[0].ReceiverStatus == "streaming", fmt.Sprint(st)
	})
	requireNoFinding(t, d, findings.CodeStandbyReceiver, "streaming")

	// The primary refuses replication connections from now on; ending the
	// standby's walsender stops its receiver for good.
	hba := filepath.Join(primary.DataDir(), "pg_hba.conf")
	conf, err := os.ReadFile(hba)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(hba, append([]byte("host replication all 127.0.0.1/32 reject\n"), conf...), 0o600))
	_, err = writer.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() (bool, string) {
		_, err := writer.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_replication WHERE application_name = 'standby-down'")
		require.NoError(t, err)
		st := d.StandbyStatus(ctx)
		return len(st) == 1 && st[0].Err == nil && st[0].Rows[0].ReceiverStatus != "streaming", fmt.Sprint(st)
	})
	writeWAL(t, writer, 2<<20)
	var rep findings.Report
	eventually(t, 30*time.Second, func() (bool, string) {
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		return len(findingsWith(rep, findings.CodeReplicationLag)) > 0, fmt.Sprint(codes(rep))
	})
	down := findingsWith(rep, findings.CodeStandbyReceiver)
	require.Len(t, down, 1, "%v %+v", codes(rep), d.StandbyStatus(ctx)[0].Rows)
	require.NotEqual(t, "streaming", down[0].Subject["receiver_status"])
	require.Equal(t, findings.SeverityCritical, down[0].Severity)
	lag := findingsWith(rep, findings.CodeReplicationLag)[0]
	require.GreaterOrEqual(t, lag.Subject["replay_lag_bytes"].(int64), lagBytes)
	require.Less(t, lag.Subject["received_not_replayed_bytes"].(int64), lagBytes, "nothing received to replay")
	require.Empty(t, findingsWith(rep, findings.CodeReplayPaused))
}

// While a round waits for its second WAL position it holds no transaction:
// no diagnostics backend stays idle in transaction, with its locks on the
// queue tables, for the length of the sample window.
func TestRoundHoldsNoTransactionWhileItWaits(t *testing.T) {
	ctx, url := freshDB(t)
	watch := connect(t, url, "watcher")
	d := open(t, url, diagnostics.Config{WALSampleWindow: 3 * time.Second})
	done := make(chan diagnostics.Round, 1)
	go func() { done <- d.Round(ctx) }()
	// A backend seen idle in transaction twice, half a second apart, with the
	// same state_change, held its transaction open across that time.
	seen := map[int32]time.Time{}
	for {
		select {
		case r := <-done:
			require.NotNil(t, r.WALRate, "the round measured a WAL rate: %+v", r.Unavailable)
			return
		case <-time.After(500 * time.Millisecond):
		}
		rows, err := watch.Query(ctx, `SELECT a.pid, a.state_change FROM pg_stat_activity a
			WHERE a.application_name = $1 AND a.state = 'idle in transaction'
			  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.relation = 'jobs'::regclass)`, diagnostics.ApplicationName)
		require.NoError(t, err)
		now := map[int32]time.Time{}
		for rows.Next() {
			var pid int32
			var changed time.Time
			require.NoError(t, rows.Scan(&pid, &changed))
			now[pid] = changed
			if prev, ok := seen[pid]; ok && prev.Equal(changed) {
				t.Fatalf("diagnostics backend %d held a lock on jobs idle in transaction since %s", pid, changed)
			}
		}
		require.NoError(t, rows.Err())
		seen = now
	}
}
