package diagnostics_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// A real prepared transaction and a long repeatable-read transaction both
// hold the xmin horizon.
func TestPreparedTransactionAndXminHorizon(t *testing.T) {
	ctx, url := freshDB(t)
	gid := prepareTransaction(t, url, "two-phase")

	long := connect(t, url, "report-job")
	_, err := long.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	_, err = long.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)
	t.Cleanup(func() { long.Exec(context.Background(), "ROLLBACK") })

	th := lowThresholds()
	th.IdleInTransaction = time.Hour
	d := open(t, url, diagnostics.Config{Thresholds: th})

	var rep findings.Report
	eventually(t, 10*time.Second, func() (bool, string) {
		rep, err = findings.Run(ctx, d)
		require.NoError(t, err)
		// The age is reported to a tenth of a second: a round within
		// 50 ms of the PREPARE says 0, so wait for one that can say more.
		f, ok1 := findingFor(rep, findings.CodePreparedXactOld, "gid", gid)
		_, ok2 := findingFor(rep, findings.CodeXminHorizon, "holder_id", pidOf(long))
		return ok1 && ok2 && f.Subject["seconds"].(float64) > 0, fmt.Sprint(codes(rep))
	})
	f, _ := findingFor(rep, findings.CodePreparedXactOld, "gid", gid)
	require.Equal(t, findings.SeverityCritical, f.Severity)
	require.Equal(t, "/runbook/rb-l", f.Runbook)
	require.Greater(t, f.Subject["seconds"].(float64), 0.0)

	h, ok := findingFor(rep, findings.CodeXminHorizon, "holder_id", gid)
	require.True(t, ok, "the prepared transaction holds the horizon: %v", codes(rep))
	require.Equal(t, "prepared_xact", h.Subject["holder_kind"])
	h, _ = findingFor(rep, findings.CodeXminHorizon, "holder_id", pidOf(long))
	require.Equal(t, "backend", h.Subject["holder_kind"])
	require.Equal(t, []string{"backend.terminate"}, h.Actions)

	px := d.PreparedXacts(ctx)
	require.NoError(t, px.Err)
	found := false
	for _, p := range px.Rows {
		found = found || p.GID == gid
	}
	require.True(t, found)

	// The horizon panel lists both, and this console's own sessions (known
	// by pid) are hidden.
	xh := d.XminHorizon(ctx)
	require.NoError(t, xh.Err)
	own := d.OwnPIDs()
	kinds := map[string]bool{}
	for _, x := range xh.Rows {
		if x.Holder == gid || x.Holder == fmt.Sprint(pidOf(long)) {
			kinds[x.Kind] = true
		}
		if x.Kind == "backend" {
			pid, err := strconv.Atoi(x.Holder)
			require.NoError(t, err)
			require.NotContains(t, own, int32(pid), "own backend %d listed", pid)
		}
	}
	require.Equal(t, map[string]bool{"prepared_xact": true, "backend": true}, kinds)
}
