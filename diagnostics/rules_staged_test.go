package diagnostics_test

import (
	"context"
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
