package diagnostics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/testdb"
)

// stageChain holds a row lock in a root session and makes a queue worker
// session (running job jobID) wait for it, and a third session wait behind
// the worker. release ends the chain.
func stageChain(t *testing.T, url string, jobID int64) (rootPID, workerPID int32, release func()) {
	t.Helper()
	ctx := context.Background()
	root := connect(t, url, "history-root")
	worker := connect(t, url, fmt.Sprintf("console-worker job=%d", jobID))
	leaf := connect(t, url, "history-leaf")
	var id, id2 int64
	require.NoError(t, root.QueryRow(ctx, "INSERT INTO jobs (queue, kind) VALUES ('history', 'k') RETURNING id").Scan(&id))
	require.NoError(t, root.QueryRow(ctx, "INSERT INTO jobs (queue, kind) VALUES ('history', 'k') RETURNING id").Scan(&id2))
	_, err := root.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = root.Exec(ctx, "UPDATE jobs SET priority = 1 WHERE id = $1", id)
	require.NoError(t, err)
	_, err = worker.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = worker.Exec(ctx, "UPDATE jobs SET priority = 2 WHERE id = $1", id2)
	require.NoError(t, err)
	workerDone, leafDone := make(chan error, 1), make(chan error, 1)
	// root <- worker (waits for the root's row) <- leaf (waits for the
	// worker's row): a three-level chain.
	go func() {
		_, err := worker.Exec(ctx, "UPDATE jobs SET priority = 3 WHERE id = $1", id)
		workerDone <- err
	}()
	go func() { _, err := leaf.Exec(ctx, "UPDATE jobs SET priority = 4 WHERE id = $1", id2); leafDone <- err }()
	var once sync.Once
	release = func() {
		once.Do(func() {
			wait := func(ch chan error) {
				select {
				case err := <-ch:
					require.NoError(t, err)
				case <-time.After(15 * time.Second):
					t.Fatal("the chain did not clear within 15s")
				}
			}
			_, err := root.Exec(ctx, "ROLLBACK")
			require.NoError(t, err)
			wait(workerDone)
			_, err = worker.Exec(ctx, "ROLLBACK")
			require.NoError(t, err)
			wait(leafDone)
		})
	}
	t.Cleanup(release)
	return pidOf(root), pidOf(worker), release
}

func TestRecorderKeepsALockChainAfterItClears(t *testing.T) {
	ctx, url := freshDB(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	rec := recorder.New(d, testdb.Pool(t, url), recorder.Config{Interval: 200 * time.Millisecond, Name: "test"})
	smp := sampler.New(d, sampler.Config{Interval: 200 * time.Millisecond, OnSampleFunc: rec.Record})
	pool := testdb.Pool(t, url)

	rootPID, workerPID, release := stageChain(t, url, 4242)
	// The server is shared with other tests' lock chains: look at this
	// test's database only.
	var db string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	own := func(data []byte) []diagnostics.BlockingNode {
		var nodes []diagnostics.BlockingNode
		require.NoError(t, json.Unmarshal(data, &nodes))
		var out []diagnostics.BlockingNode
		for _, n := range nodes {
			if n.Database == db {
				out = append(out, n)
			}
		}
		return out
	}
	require.NoError(t, smp.Start(ctx))
	defer smp.Stop()

	// Wait events are server-wide: this chain's two waiters are at least
	// two of the transactionid lock waits. A waiter can be caught for an
	// instant on the lock manager's own LWLock instead, so the sample
	// looked at is one whose tree and wait events both show the chain.
	lockWaitsAt := func(at time.Time) (int, string) {
		w, err := recorder.HistoryAt(ctx, pool, diagnostics.HistoryWaitEvents, at, 0)
		if err != nil {
			return 0, err.Error()
		}
		var waits []recorder.WaitEventCount
		require.NoError(t, json.Unmarshal(w.Data, &waits))
		for _, w := range waits {
			if w.WaitEventType == "Lock" && w.WaitEvent == "transactionid" {
				return w.Backends, ""
			}
		}
		return 0, fmt.Sprintf("recorded wait events: %+v", waits)
	}

	// Wait for a recorded sample holding the whole chain.
	var at time.Time
	eventually(t, 30*time.Second, func() (bool, string) {
		entries, err := recorder.HistoryRange(ctx, pool, diagnostics.HistoryBlockingTree, time.Now().Add(-time.Minute), time.Now().Add(time.Minute), 0)
		if err != nil {
			return false, err.Error()
		}
		why := ""
		for _, e := range entries {
			if len(own(e.Data)) != 3 {
				continue
			}
			n, msg := lockWaitsAt(e.At)
			if n >= 2 {
				at = e.At
				return true, ""
			}
			why = fmt.Sprintf("; a chain sample with %d transactionid waits %s", n, msg)
		}
		return false, fmt.Sprintf("%d samples, none with the 3-backend chain and its waits%s; status %+v", len(entries), why, rec.Status())
	})
	release()
	// Wait until a sample after the chain cleared is recorded, so the
	// chain is gone "now" and only history has it.
	eventually(t, 30*time.Second, func() (bool, string) {
		e, err := recorder.HistoryAt(ctx, pool, diagnostics.HistoryBlockingTree, time.Now(), time.Minute)
		if err != nil {
			return false, err.Error()
		}
		return e.At.After(at) && len(own(e.Data)) == 0, "latest tree: " + string(e.Data)
	})
	smp.Stop()

	e, err := recorder.HistoryAt(ctx, pool, diagnostics.HistoryBlockingTree, at.Add(50*time.Millisecond), 0)
	require.NoError(t, err)
	require.Equal(t, at, e.At)
	require.Equal(t, "test", e.RecordedBy)
	nodes := own(e.Data)
	require.Len(t, nodes, 3)
	require.Equal(t, rootPID, nodes[0].PID)
	require.True(t, nodes[0].IsRoot)
	require.Equal(t, 2, nodes[0].BlockedCount)
	require.Equal(t, workerPID, nodes[1].PID)
	require.NotNil(t, nodes[1].JobID, "the job behind the worker backend")
	require.Equal(t, int64(4242), *nodes[1].JobID)

	f, err := recorder.HistoryAt(ctx, pool, diagnostics.HistoryFindings, at, 0)
	require.NoError(t, err)
	require.Contains(t, string(f.Data), findings.CodeRootBlocker)
	q, err := recorder.HistoryAt(ctx, pool, diagnostics.HistoryQueues, at, 0)
	require.NoError(t, err)
	require.Contains(t, string(q.Data), `"queue": "history"`)

	_, err = recorder.HistoryAt(ctx, pool, diagnostics.HistoryBlockingTree, at.Add(-time.Hour), time.Minute)
	require.ErrorIs(t, err, recorder.ErrNoHistory)
	_, err = recorder.HistoryAt(ctx, pool, "blocking", at, 0)
	require.ErrorIs(t, err, recorder.ErrUnknownCheck)
	require.True(t, rec.Status().On)
}

func TestRecorderRecordsOnceAcrossConsoles(t *testing.T) {
	testdb.SkipShort(t, "four consoles racing for the recorder lock, 50 rounds")
	ctx, url := freshDB(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// An interval of an hour: after the first recorded sample, every other
	// attempt of any console must be skipped. The attempts start together,
	// round after round, so some of them try the lock in the instant the
	// first writer commits and lets it go: they must still see its sample.
	const consoles, attempts, rounds = 4, 40, 50
	var recs []*recorder.Recorder
	for i := range consoles {
		d := open(t, url, diagnostics.Config{})
		recs = append(recs, recorder.New(d, testdb.Pool(t, url), recorder.Config{Interval: time.Hour, Name: fmt.Sprint("console-", i)}))
	}
	pool := testdb.Pool(t, url)
	for round := range rounds {
		_, err := pool.Exec(ctx, "DELETE FROM history_samples")
		require.NoError(t, err)
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, attempts)
		for i := range attempts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- recs[i%consoles].Record(ctx, diagnostics.Sample{At: time.Now().UTC().Add(time.Duration(i) * time.Millisecond)})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM history_samples").Scan(&n))
		require.Equal(t, 1, n, "round %d: %d consoles, %d attempts within one interval: one sample", round, consoles, attempts)
	}
	var reasons []string
	for _, r := range recs {
		require.True(t, r.Status().On)
		reasons = append(reasons, r.Status().Reason)
	}
	require.Contains(t, strings.Join(reasons, " | "), "another console")
}

func TestRecorderIsOffOnAReadOnlyDatabase(t *testing.T) {
	ctx, url, admin := freshPool(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var db string
	require.NoError(t, admin.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	_, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET default_transaction_read_only = on")
	require.NoError(t, err)

	d := open(t, url, diagnostics.Config{})
	rec := recorder.New(d, testdb.Pool(t, url), recorder.Config{})
	err = rec.Record(ctx, diagnostics.Sample{At: time.Now()})
	require.ErrorIs(t, err, recorder.ErrHistoryOff)
	st := rec.Status()
	require.False(t, st.On)
	require.Contains(t, st.Reason, "history is off")
	require.Contains(t, st.Reason, "refuses writes")
	// Reading still works: the views say there is nothing rather than fail.
	_, err = recorder.HistoryAt(ctx, admin, diagnostics.HistoryActivity, time.Now(), 0)
	require.True(t, errors.Is(err, recorder.ErrNoHistory), "got %v", err)
}

func TestHistoryPruneRetentionAndSizeCap(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testdb.New(t)
	doc := `{"activity": [], "note": "` + strings.Repeat("x", 100) + `"}`
	// 10 samples 8 days old, 20 samples of the last 20 minutes.
	_, err := pool.Exec(ctx, `INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc)
		SELECT now() - interval '8 days' - make_interval(mins => g), 't', pg_column_size($1::jsonb), $1::jsonb FROM generate_series(1, 10) g
		UNION ALL
		SELECT now() - make_interval(mins => g), 't', pg_column_size($1::jsonb), $1::jsonb FROM generate_series(1, 20) g`, doc)
	require.NoError(t, err)
	var size int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_column_size($1::jsonb)", doc).Scan(&size))

	n, err := recorder.HistoryPrune(ctx, pool, recorder.HistoryPruneParams{BatchSize: 3, MaxBytes: -1})
	require.NoError(t, err)
	require.Equal(t, int64(10), n, "the 8-day-old samples go, in batches of 3")

	// A cap of 5 documents keeps the 5 newest.
	n, err = recorder.HistoryPrune(ctx, pool, recorder.HistoryPruneParams{BatchSize: 4, MaxBytes: 5 * size})
	require.NoError(t, err)
	require.Equal(t, int64(15), n)
	st, err := recorder.HistoryStats(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Samples)
	require.Equal(t, 5*size, st.DocBytes)
	require.WithinDuration(t, time.Now(), *st.Newest, 2*time.Minute)
	require.WithinDuration(t, time.Now().Add(-5*time.Minute), *st.Oldest, 2*time.Minute)
}

func TestHistoryTimelineSummarisesChainsAndFindings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := testdb.New(t)
	t0 := time.Date(2026, 12, 3, 3, 12, 0, 0, time.UTC)
	// A tree as the recorder writes it: the root counts its waiters.
	tree := `[{"pid": 7, "depth": 0, "is_root": true, "root_pid": 7, "blocked_count": 1}, {"pid": 8, "depth": 1, "root_pid": 7, "parent_pid": 7}]`
	finding := `[{"code": "lock.root_blocker", "severity": "critical", "title": "pid 7 blocks 1 backend", "subject": {"pid": 7, "wait_seconds": %d}}]`
	insert := func(secs int, tree, findings string) {
		doc := fmt.Sprintf(`{"blocking_tree": %s, "findings": %s}`, tree, findings)
		_, err := pool.Exec(ctx, "INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc) VALUES ($1, 't', 0, $2)", t0.Add(time.Duration(secs)*time.Second), doc)
		require.NoError(t, err)
	}
	insert(0, "[]", "[]")
	insert(10, tree, fmt.Sprintf(finding, 3))
	insert(20, tree, fmt.Sprintf(finding, 13)) // same finding, new value: not new
	insert(30, "[]", "[]")

	items, err := recorder.HistoryTimeline(ctx, pool, t0, t0.Add(time.Minute))
	require.NoError(t, err)
	var titles []string
	for _, it := range items {
		titles = append(titles, it.At.Format("15:04:05")+" "+it.Title)
	}
	require.Equal(t, []string{
		"03:12:10 recorded finding appeared: critical pid 7 blocks 1 backend",
		"03:12:20 recorded lock chain: pid 7 blocked 1 backends (2 samples, 03:12:10Z to 03:12:20Z)",
		"03:12:30 recorded finding cleared: pid 7 blocks 1 backend",
	}, titles)
}

// TestHistoryChainsKeepsOverlappingChainsApart: two chains recorded in the
// same samples are two chains, each with its own root's count, and a gap
// longer than 35s starts a new chain of the same root.
func TestHistoryChainsKeepsOverlappingChainsApart(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Newest first, the largest root first within a sample.
	moments := []recorder.HistoryMoment{
		{At: at(100), RootPID: 7, Blocked: 1},
		{At: at(10), RootPID: 9, Blocked: 5},
		{At: at(10), RootPID: 7, Blocked: 2},
		{At: at(5), RootGID: "tx-1", Blocked: 3},
		{At: at(5), RootPID: 7, Blocked: 1},
		{At: at(0), RootPID: 9, Blocked: 4},
	}
	chains := recorder.HistoryChains(moments)
	type got struct {
		root           string
		blocked, count int
		first, last    time.Time
	}
	var out []got
	for _, ch := range chains {
		out = append(out, got{ch.Worst.Root(), ch.Worst.Blocked, ch.Samples, ch.First, ch.Last})
	}
	require.Equal(t, []got{
		{"pid 7", 1, 1, at(100), at(100)},
		{"pid 9", 5, 2, at(0), at(10)},
		{"pid 7", 2, 2, at(5), at(10)},
		{`prepared transaction "tx-1"`, 3, 1, at(5), at(5)},
	}, out)
}

// TestHistorySeriesSlicesTheRangeAndKeepsTheMoment: a chart's series is the
// newest sample of each slice, plus the sample shown at the moment even
// when a newer one shares its slice; a check history does not keep is
// ErrNotRecorded for PanelAt.
func TestHistorySeriesSlicesTheRangeAndKeepsTheMoment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.Pool(t, testdb.URL(t))
	t0 := time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC)
	for i := range 20 {
		doc := fmt.Sprintf(`{"queues": [{"queue": "q", "ready": %d}]}`, i)
		_, err := pool.Exec(ctx, "INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc) VALUES ($1, 't', 0, $2)", t0.Add(time.Duration(i)*time.Second), doc)
		require.NoError(t, err)
	}
	ready := func(es []recorder.HistoryEntry) []int {
		var out []int
		for _, e := range es {
			var qs []diagnostics.QueueStat
			require.NoError(t, json.Unmarshal(e.Data, &qs))
			out = append(out, int(qs[0].Ready))
		}
		return out
	}
	end := t0.Add(19 * time.Second)
	es, err := recorder.HistorySeries(ctx, pool, diagnostics.HistoryQueues, t0, end, time.Time{}, 4)
	require.NoError(t, err)
	require.Equal(t, []int{4, 9, 14, 18, 19}, ready(es), "the newest of each 4.75s slice (the range's end starts a fifth)")

	es, err = recorder.HistorySeries(ctx, pool, diagnostics.HistoryQueues, t0, end, t0.Add(6500*time.Millisecond), 4)
	require.NoError(t, err)
	require.Equal(t, []int{4, 6, 9, 14, 18, 19}, ready(es), "the sample shown at 03:00:06.5 is kept")

	res, e, err := recorder.PanelAt(ctx, pool, diagnostics.CheckQueueHealth, t0.Add(6500*time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, t0.Add(6*time.Second), e.At.UTC())
	require.Equal(t, int64(6), res.Rows[0].(diagnostics.QueueStat).Ready)
	_, _, err = recorder.PanelAt(ctx, pool, diagnostics.CheckLockWaits, t0)
	require.ErrorIs(t, err, recorder.ErrNotRecorded)
	_, _, err = recorder.PanelAt(ctx, pool, diagnostics.CheckQueueHealth, t0.Add(-time.Hour))
	require.ErrorIs(t, err, recorder.ErrNoHistory)
}

// A write cut short because the recorder is stopping (its context
// canceled) says nothing about whether the database keeps history: the
// status stays on.
func TestRecorderStoppedMidWriteStaysOn(t *testing.T) {
	ctx, url := freshDB(t)
	d := open(t, url, diagnostics.Config{})
	rec := recorder.New(d, testdb.Pool(t, url), recorder.Config{Interval: time.Hour, Name: "test"})
	require.NoError(t, rec.Record(ctx, diagnostics.Sample{At: time.Now()}))
	require.True(t, rec.Status().On)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, rec.Record(stopped, diagnostics.Sample{At: time.Now()}))
	require.True(t, rec.Status().On, "status after a stop: %+v", rec.Status())
}
