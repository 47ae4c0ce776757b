package diagnostics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// A write transaction that pauses between its statements is old even while
// briefly idle: tx.long_running reports it. Once it has been idle long
// enough for tx.idle_in_transaction, that finding reports it instead, never
// both.
func TestLongRunningCoversPausesBetweenStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	c := connect(t, url, "pausing-writer")
	begin(t, c, "INSERT INTO jobs (queue, kind) VALUES ('pause', 'k')")
	pid := pidOf(c)
	th := diagnostics.DefaultThresholds()
	th.LongRunningTx = 300 * time.Millisecond
	th.IdleInTransaction = time.Hour
	d := open(t, url, diagnostics.Config{Thresholds: &th})
	var rep diagnostics.Report
	eventually(t, 15*time.Second, func() (bool, string) {
		var err error
		rep, err = d.Findings(ctx)
		require.NoError(t, err)
		_, ok := findingFor(rep, diagnostics.CodeLongRunning, "pid", pid)
		return ok, "no tx.long_running: " + strings.Join(codes(rep), "; ")
	})
	f, _ := findingFor(rep, diagnostics.CodeLongRunning, "pid", pid)
	require.Equal(t, "idle in transaction", f.Subject["state"])
	_, ok := findingFor(rep, diagnostics.CodeIdleInTransaction, "pid", pid)
	require.False(t, ok, "not idle long enough for tx.idle_in_transaction")

	th.IdleInTransaction = 0
	d.SetThresholds(th)
	rep, err := d.Findings(ctx)
	require.NoError(t, err)
	_, ok = findingFor(rep, diagnostics.CodeIdleInTransaction, "pid", pid)
	require.True(t, ok, "idle in transaction: %v", codes(rep))
	_, ok = findingFor(rep, diagnostics.CodeLongRunning, "pid", pid)
	require.False(t, ok, "reported once for its open transaction: %v", codes(rep))
}

// A slot whose WAL has outgrown max_wal_size (wal_status extended) with
// little safe_wal_size left is a finding although it retains far less than
// the retention threshold: it is close to being invalidated.
func TestSlotNearExhaustionWhateverItRetains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, map[string]string{
		"max_wal_size":           "32MB",
		"min_wal_size":           "32MB",
		"max_slot_wal_keep_size": "96MB",
	})
	conn := connect(t, primary.URL("postgres"), "wal-writer")
	_, err := conn.Exec(ctx, "SELECT pg_create_physical_replication_slot('far_behind', true)")
	require.NoError(t, err)
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
	rep, err := d.Findings(ctx)
	require.NoError(t, err)
	f, ok := findingFor(rep, diagnostics.CodeSlotRetention, "slot_name", "far_behind")
	require.True(t, ok, "%v", codes(rep))
	require.Equal(t, "extended", f.Subject["wal_status"])
	require.Contains(t, f.Title, "left before it is invalidated")
	require.Contains(t, f.Evidence, "invalidation_reason none")
}
