package river_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	riverqueue "github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
)

// queueOf finds a queue in the list, failing the test when it is missing.
func queueOf(t *testing.T, qs []queues.SourceQueue, name string) queues.SourceQueue {
	t.Helper()
	for _, q := range qs {
		if q.Queue == name {
			return q
		}
	}
	t.Fatalf("queue %q is not listed in %+v", name, qs)
	return queues.SourceQueue{}
}

// TestSourceReadsARealRiverClient runs River's own client on real jobs
// that succeed, fail, snooze, panic and run on, and checks that the Source
// shows what River did: counts by state per queue, a paused queue and its
// waiting jobs, discarded jobs grouped by the class of their last error,
// filtered and keyset-paginated lists, one job, the running client and
// the leader.
func TestSourceReadsARealRiverClient(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	ctx := context.Background()
	pool := riverPool(t)
	recordQueue(t, pool, "reports")
	c := riverClient(t, pool)
	require.NoError(t, c.QueuePause(ctx, "reports", nil))
	var inserts []riverqueue.InsertManyParams
	for i := range 3 {
		inserts = append(inserts, riverqueue.InsertManyParams{Args: okArgs{N: i}})
	}
	for _, card := range []int{1111, 2222, 3333} {
		inserts = append(inserts, riverqueue.InsertManyParams{Args: failArgs{Card: card}})
	}
	for range 2 {
		inserts = append(inserts, riverqueue.InsertManyParams{Args: panicArgs{}, InsertOpts: &riverqueue.InsertOpts{Queue: "email"}})
	}
	inserts = append(inserts, riverqueue.InsertManyParams{Args: snoozeArgs{}}, riverqueue.InsertManyParams{Args: slowArgs{}})
	for i := range 4 {
		inserts = append(inserts, riverqueue.InsertManyParams{Args: okArgs{N: 100 + i}, InsertOpts: &riverqueue.InsertOpts{Queue: "reports"}})
	}
	_, err := c.InsertMany(ctx, inserts)
	require.NoError(t, err)

	state := func(s string) int {
		return testdb.Count(t, pool, "SELECT count(*) FROM river_job WHERE state = $1", s)
	}
	testdb.Eventually(t, time.Minute, "River to work the jobs", func() bool {
		return state("completed") == 3 && state("discarded") == 5 && state("scheduled") == 1 && state("running") == 1
	})

	src := river.NewSource(pool)
	require.Equal(t, queues.SourceRiver, src.Engine())
	qs, err := src.Queues(ctx)
	require.NoError(t, err)
	def := queueOf(t, qs, riverqueue.QueueDefault)
	require.Equal(t, map[string]int64{"completed": 3, "discarded": 3, "scheduled": 1, "running": 1},
		map[string]int64{"completed": def.Count("completed"), "discarded": def.Count("discarded"), "scheduled": def.Count("scheduled"), "running": def.Count("running")})
	require.Equal(t, int64(0), def.Count("available"))
	require.False(t, def.Paused)
	require.Equal(t, int64(3), def.Failed)
	email := queueOf(t, qs, "email")
	require.Equal(t, int64(2), email.Count("discarded"))
	reports := queueOf(t, qs, "reports")
	require.True(t, reports.Paused, "River's paused_at says the queue is paused")
	require.Equal(t, int64(4), reports.Count("available"))
	require.Equal(t, int64(4), reports.Waiting)
	require.Greater(t, reports.OldestWaitingSeconds, 0.0)

	failed, err := src.FailedGroups(ctx, "")
	require.NoError(t, err)
	require.Equal(t, int64(5), failed.Total)
	require.Equal(t, int64(5), failed.Read)
	require.Len(t, failed.Groups, 2, "three declined cards are one class, two panics another: %+v", failed.Groups)
	require.Equal(t, "default", failed.Groups[0].Queue)
	require.Equal(t, "charge card ?: declined", failed.Groups[0].ErrorClass)
	require.Equal(t, int64(3), failed.Groups[0].Count)
	require.Contains(t, failed.Groups[0].SampleError, "declined")
	require.Equal(t, river.PanicClass, failed.Groups[1].ErrorClass)
	require.Equal(t, "email", failed.Groups[1].Queue)
	require.Equal(t, int64(2), failed.Groups[1].Count)
	onlyEmail, err := src.FailedGroups(ctx, "email")
	require.NoError(t, err)
	require.Len(t, onlyEmail.Groups, 1)
	require.Equal(t, int64(2), onlyEmail.Total)

	discarded, err := src.Jobs(ctx, queues.SourceJobFilter{State: river.StateDiscarded})
	require.NoError(t, err)
	require.Len(t, discarded, 5)
	byArgs, err := src.Jobs(ctx, queues.SourceJobFilter{ArgsContain: json.RawMessage(`{"card": 2222}`)})
	require.NoError(t, err)
	require.Len(t, byArgs, 1)
	require.Equal(t, "fail", byArgs[0].Kind)
	require.Equal(t, "charge card ?: declined", byArgs[0].ErrorClass)
	require.Equal(t, "charge card 2222: declined", byArgs[0].LastError)
	byKind, err := src.Jobs(ctx, queues.SourceJobFilter{Kind: "ok", Queue: "reports"})
	require.NoError(t, err)
	require.Len(t, byKind, 4)

	var pages [][]int64
	var seen int
	f := queues.SourceJobFilter{Limit: 5}
	for {
		page, err := src.Jobs(ctx, f)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		var ids []int64
		for _, j := range page {
			ids = append(ids, j.ID)
		}
		pages = append(pages, ids)
		seen += len(page)
		f.BeforeID = page[len(page)-1].ID
	}
	require.Equal(t, len(inserts), seen, "the pages together list every job once: %v", pages)
	for i := 1; i < len(pages); i++ {
		require.Less(t, pages[i][0], pages[i-1][len(pages[i-1])-1], "each page continues below the last: %v", pages)
	}

	one, err := src.Job(ctx, byArgs[0].ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"card": 2222}`, string(one.Args))
	require.Contains(t, string(one.Errors), "charge card 2222")
	_, err = src.Job(ctx, 1<<40)
	require.ErrorIs(t, err, queues.ErrNotFound)

	_, err = src.Jobs(ctx, queues.SourceJobFilter{State: "dead"})
	require.ErrorIs(t, err, queues.ErrBadFilter)
	require.Contains(t, err.Error(), "discarded", "the refusal lists River's states")
	_, err = src.Jobs(ctx, queues.SourceJobFilter{ArgsContain: json.RawMessage(`[1]`)})
	require.ErrorIs(t, err, queues.ErrBadFilter)

	var ws queues.SourceWorkers
	testdb.Eventually(t, time.Minute, "River's client to be elected leader", func() bool {
		ws, err = src.Workers(ctx)
		require.NoError(t, err)
		return ws.Leader != nil
	})
	require.Equal(t, "test-client", ws.Leader.ID)
	require.False(t, ws.Leader.Expired)
	require.Len(t, ws.Workers, 1)
	require.Equal(t, "test-client", ws.Workers[0].ID)
	require.Equal(t, []string{"default"}, ws.Workers[0].Queues)
	require.Equal(t, int64(1), ws.Workers[0].Running, "the slow job runs")

	stuck, err := river.StuckRunning(ctx, pool, time.Nanosecond, 3, 10)
	require.NoError(t, err)
	require.Len(t, stuck, 1, "past a rescue threshold of 1ns, the slow job is stuck")
	require.Equal(t, "slow", stuck[0].Kind)
	require.Equal(t, "test-client", stuck[0].ClientID)
	stuck, err = river.StuckRunning(ctx, pool, time.Hour, 3, 10)
	require.NoError(t, err)
	require.Empty(t, stuck, "the slow job has run for seconds, not River's default hour")
}

// TestDetect tells a database without River from one River migrated, and
// refuses a schema older than the console reads.
func TestDetect(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	none, err := river.Detect(ctx, testdb.Pool(t, testdb.URL(t)))
	require.NoError(t, err)
	require.False(t, none.Present)
	require.Empty(t, none.Missing)

	pool := riverPool(t)
	s, err := river.Detect(ctx, pool)
	require.NoError(t, err)
	require.True(t, s.Present)
	require.Empty(t, s.Missing)
	require.GreaterOrEqual(t, s.Version, river.MinVersion)
	require.NoError(t, s.Check())

	_, err = pool.Exec(ctx, "DROP TABLE river_leader")
	require.NoError(t, err)
	half, err := river.Detect(ctx, pool)
	require.NoError(t, err)
	require.False(t, half.Present)
	require.Equal(t, []string{"river_leader"}, half.Missing)
	require.ErrorContains(t, half.Check(), "river_leader missing")

	old := river.Schema{Present: true, Version: 4}
	require.ErrorContains(t, old.Check(), "migration 4")
}

// TestErrorClass: River's attempt errors group like the console's: ids
// and numbers folded, a panic (an entry with a trace) its own class.
func TestErrorClass(t *testing.T) {
	t.Parallel()
	require.Equal(t, "charge card ?: declined", river.ErrorClass("charge card 1234: declined", false))
	require.Equal(t, river.ErrorClass("user 9f1c2d3e-aaaa-bbbb-cccc-0123456789ab not found", false),
		river.ErrorClass("user 00000000-1111-2222-3333-444444444444 not found", false))
	require.Equal(t, river.PanicClass, river.ErrorClass("nil map write", true))
	require.Equal(t, "first line", river.ErrorClass("first line\nsecond "+strings.Repeat("x", 10), false))
}
