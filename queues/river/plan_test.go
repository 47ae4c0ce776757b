package river_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	riverqueue "github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues/river"
)

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	Plans     []planNode `json:"Plans"`
}

// flatten lists a plan's nodes.
func (n planNode) flatten() []planNode {
	out := []planNode{n}
	for _, c := range n.Plans {
		out = append(out, c.flatten()...)
	}
	return out
}

// TestJobListUsesRiversIndexes: on 100,000 River jobs inserted by River's
// client, each shape of the job list (first page, a later page, by state,
// by arguments, by queue) reads river_job through one of River's own
// indexes, never a sequential scan, so a page costs the same on a large
// table.
func TestJobListUsesRiversIndexes(t *testing.T) {
	testdb.SkipShort(t, "100,000 River jobs")
	t.Parallel()
	ctx := context.Background()
	pool := riverPool(t)
	c := insertClient(t, pool)
	const total = 100_000
	for start := 0; start < total; start += 10_000 {
		batch := make([]riverqueue.InsertManyParams, 0, 10_000)
		for i := start; i < start+10_000; i++ {
			batch = append(batch, riverqueue.InsertManyParams{Args: okArgs{N: i},
				InsertOpts: &riverqueue.InsertOpts{Queue: fmt.Sprintf("q%d", i%8)}})
		}
		n, err := c.InsertManyFast(ctx, batch)
		require.NoError(t, err)
		require.Equal(t, 10_000, n)
	}
	_, err := pool.Exec(ctx, "ANALYZE river_job")
	require.NoError(t, err)
	maxID := int64(testdb.Count(t, pool, "SELECT max(id)::int FROM river_job"))

	explain := func(args ...any) []planNode {
		t.Helper()
		var raw []byte
		require.NoError(t, pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+river.JobListSQL(), args...).Scan(&raw))
		var plans []struct{ Plan planNode }
		require.NoError(t, json.Unmarshal(raw, &plans))
		return plans[0].Plan.flatten()
	}
	for name, args := range map[string][]any{
		"FirstPage": {"", "", "", nil, nil, nil, int64(0), 50},
		"LaterPage": {"", "", "", nil, nil, nil, maxID - 50_000, 50},
		"Discarded": {"", "", river.StateDiscarded, nil, nil, nil, int64(0), 50},
		"ByArgs":    {"", "", "", `{"n": 4242}`, nil, nil, int64(0), 50},
		"ByQueue":   {"q3", "", "", nil, nil, nil, int64(0), 50},
	} {
		nodes := explain(args...)
		var indexes, seqScans []string
		for _, n := range nodes {
			if n.Relation != "river_job" {
				continue
			}
			if strings.Contains(n.NodeType, "Seq Scan") {
				seqScans = append(seqScans, n.NodeType)
			}
			if n.IndexName != "" {
				indexes = append(indexes, n.IndexName)
			}
		}
		for _, n := range nodes {
			if n.NodeType == "Bitmap Index Scan" {
				indexes = append(indexes, n.IndexName)
			}
		}
		require.Empty(t, seqScans, "%s: the list must not read river_job whole", name)
		require.NotEmpty(t, indexes, "%s: the list reads river_job through an index: %+v", name, nodes)
		t.Logf("%s: %v", name, indexes)
	}
}
