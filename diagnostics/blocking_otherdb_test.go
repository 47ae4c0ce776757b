package diagnostics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// TestBlockingTreeJobIDsOnlyInThisDatabase: two databases on one server
// each run the engine, and a job's session of each waits on a lock. The
// tree read in one database shows both chains, but only its own worker
// carries a job id: the other database's job 777 is not this one's.
func TestBlockingTreeJobIDsOnlyInThisDatabase(t *testing.T) {
	ctx, here := freshDB(t)
	other := testdb.URL(t)
	herePID := jobWaitsOnLock(t, here, "console-worker job=42")
	otherPID := jobWaitsOnLock(t, other, "console-worker job=777")

	conn := connect(t, here, "tree-reader")
	var byPID map[int32]diagnostics.BlockingNode
	testdb.Eventually(t, 15*time.Second, "both chains in the tree", func() bool {
		nodes, err := diagnostics.BlockingTree(ctx, conn)
		require.NoError(t, err)
		byPID = map[int32]diagnostics.BlockingNode{}
		for _, n := range nodes {
			byPID[n.PID] = n
		}
		_, a := byPID[herePID]
		_, b := byPID[otherPID]
		return a && b
	})
	require.NotNil(t, byPID[herePID].JobID, "this database's worker lost its job id")
	require.EqualValues(t, 42, *byPID[herePID].JobID)
	require.False(t, byPID[herePID].OtherDatabase)
	require.True(t, byPID[otherPID].OtherDatabase)
	require.Nil(t, byPID[otherPID].JobID, "another database's job was named as this database's")
}

// jobWaitsOnLock leaves a session named app waiting on a table lock in
// url's database until the test ends, and returns its pid.
func jobWaitsOnLock(t *testing.T, url, app string) int32 {
	t.Helper()
	_, err := connect(t, url, "lock-setup").Exec(context.Background(), "CREATE TABLE lock_target (x int)")
	require.NoError(t, err)
	return testdb.WaitOnLock(t, url, "lock_target", app)
}
