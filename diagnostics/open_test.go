package diagnostics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// TestOpenKeepsItsConnectionsOpen checks the floor a console diagnoses a
// connection storm with: Open connects MaxConns sessions at once, while an
// OnDemand Diagnostics connects none until a check runs.
func TestOpenKeepsItsConnectionsOpen(t *testing.T) {
	ctx, url := freshDB(t)
	watcher := connect(t, url, "floor-watcher")
	backends := func() int {
		return testdb.Count(t, watcher, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1`, diagnostics.ApplicationName)
	}

	// The OnDemand one first: had it connected at Open, its sessions
	// would be there once the eager one's are and as long again has
	// passed (a pool connects its floor on goroutines of its own).
	start := time.Now()
	lazy, err := diagnostics.Open(ctx, url, diagnostics.Config{MaxConns: 3, OnDemand: true})
	require.NoError(t, err)
	defer lazy.Close()
	eager, err := diagnostics.Open(ctx, url, diagnostics.Config{MaxConns: 3})
	require.NoError(t, err)
	defer eager.Close()
	testdb.Eventually(t, 20*time.Second, "Open connects MaxConns sessions at once", func() bool { return backends() >= 3 })
	time.Sleep(time.Since(start))
	require.Equal(t, 3, backends(), "the OnDemand Diagnostics connected before any check ran")

	r := lazy.Connections(ctx)
	require.NoError(t, r.Err)
	require.Greater(t, backends(), 3, "the OnDemand Diagnostics connects once a check runs")
}
