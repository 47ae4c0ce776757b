package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// phaseBackends records, when each floor phase starts its loops, the
// server processes of each phase's connections then alive.
type phaseBackends struct {
	t      *testing.T
	ctx    context.Context
	pool   *pgxpool.Pool                 // the caller's: it looks
	byLine map[string]map[string][]int32 // phase starting → phase → pids
}

func (p *phaseBackends) Write(b []byte) (int, error) {
	for _, phase := range []string{"seed", "engine"} {
		if !strings.Contains(string(b), "floor: "+phase+" statements working") {
			continue
		}
		seen := map[string][]int32{"seed": p.pids("seed"), "engine": p.pids("engine")}
		// A closed connection's server process exits on its own time:
		// wait (boundedly) for those of the "seed" phase to be gone.
		for deadline := time.Now().Add(10 * time.Second); phase == "engine" && len(seen["seed"]) > 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			seen["seed"] = p.pids("seed")
		}
		p.byLine[phase] = seen
	}
	return len(b), nil
}

// pids are the server processes of a floor phase's connections.
func (p *phaseBackends) pids(phase string) []int32 {
	rows, err := p.pool.Query(p.ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, floorApplication(phase))
	require.NoError(p.t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(p.t, err)
	return pids
}

// TestFloorPhasesStartOnNewConnections: each floor phase runs on server
// processes of its own, as a burn-down on its new pool does, never on the
// processes of the phase before it (which have the shared buffers' pages
// mapped already): the "seed" phase's are gone when the engine phase starts.
func TestFloorPhasesStartOnNewConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	rec := &phaseBackends{t: t, ctx: ctx, pool: pool, byLine: map[string]map[string][]int32{}}

	r, err := Floor(ctx, Config{Pool: pool, PoolSize: 2, Jobs: 300, Batch: 50, Progress: rec})
	require.NoError(t, err)
	require.Positive(t, r.Value("jobs_per_second"))

	seed, engine := rec.byLine["seed"], rec.byLine["engine"]
	require.NotNil(t, seed, "the seed phase's start was not logged")
	require.NotNil(t, engine, "the engine phase's start was not logged")
	require.NotEmpty(t, seed["seed"], "the seed phase's jobs were enqueued on connections of its own")
	require.NotEmpty(t, engine["engine"], "the engine phase's jobs were enqueued on connections of its own")
	require.Empty(t, engine["seed"], "the seed phase's connections are closed before the engine phase starts")
	for _, pid := range engine["engine"] {
		require.NotContains(t, seed["seed"], pid, "the engine phase runs on new server processes")
	}
}
