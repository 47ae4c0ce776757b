package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestScaleReusesOnlyItsOwnTable: a jobs table scale built and marked is
// reused at its size and rebuilt at another; an empty table is built; a
// table holding rows scale did not write is refused, never emptied.
func TestScaleReusesOnlyItsOwnTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	cfg := Config{Pool: pool}.withDefaults()

	size, err := builtSize(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, size, "an empty table is scale's to fill")

	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind) VALUES ('app', 'mail')`)
	require.NoError(t, err)
	_, err = builtSize(ctx, pool)
	require.ErrorContains(t, err, "rows scale did not write")
	require.ErrorContains(t, layoutFor(1000).build(ctx, cfg), "rows scale did not write")
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = 'app'`).Scan(&left))
	require.Equal(t, 1, left, "a table scale did not fill is never emptied")

	_, err = pool.Exec(ctx, `TRUNCATE jobs`)
	require.NoError(t, err)
	require.NoError(t, layoutFor(1000).build(ctx, cfg))
	size, err = builtSize(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1000, size)

	// Reused at its size: a row added since survives the second build.
	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind) VALUES ('marker', 'noop')`)
	require.NoError(t, err)
	require.NoError(t, layoutFor(1000).build(ctx, cfg))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = 'marker'`).Scan(&left))
	require.Equal(t, 1, left, "a table already at the size asked for is reused")

	// Rebuilt at another size.
	require.NoError(t, layoutFor(2000).build(ctx, cfg))
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&n))
	require.Equal(t, 2000, n)
	size, err = builtSize(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 2000, size)

	// The dead letters, loaded without the counting trigger, are counted
	// with each class's first and last death and sample, as the triggers
	// would have kept them.
	var wrong int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*)
		FROM (SELECT queue, coalesce(error_class, '') AS error_class, count(*) AS dead,
		             min(finished_at) AS first_at, max(finished_at) AS last_at,
		             (array_agg(id ORDER BY finished_at DESC, id DESC))[1] AS sample_id
		      FROM jobs WHERE status = 'dead' GROUP BY 1, 2) AS j
		FULL JOIN dead_letter_counts AS c USING (queue, error_class)
		WHERE (j.dead, j.first_at, j.last_at, j.sample_id) IS DISTINCT FROM
		      (c.dead, c.first_finished_at, c.last_finished_at, c.sample_job_id)`).Scan(&wrong))
	require.Zero(t, wrong, "dead-letter classes whose counters differ from the dead jobs")
}
