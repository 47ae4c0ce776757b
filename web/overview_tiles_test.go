package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// A live tile's big number and its line end at the same moment: the
// round's. The sampler's newest point can be seconds older (or newer) than
// the round the number comes from; the line then ends on the round's own
// number at the round's time, and its readout names that time.
func TestTileLineEndsAtTheRound(t *testing.T) {
	noon := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	at := noon.Add(30 * time.Second)
	r := diagnostics.Round{At: at, Queues: []diagnostics.QueueStat{{Queue: "a", Ready: 100}, {Queue: "b", Ready: 30}}}
	th := diagnostics.DefaultThresholds()
	tiles := overviewTiles(r, nil, th)
	trends := map[string]trend{
		"queue-ready": trendOf(90, 100, 120), // the last sample at noon: 120
		"blocked":     {points: []trendPoint{{noon, 4}, {at.Add(10 * time.Second), 9}}, from: noon, to: at.Add(10 * time.Second)},
	}
	addSparklines(tiles, endAtRound(tiles, trends, r.At), th)
	byID := map[string]views.Tile{}
	for _, tl := range tiles {
		byID[tl.ID] = tl
	}

	ready := byID["queue-ready"]
	require.Equal(t, "130", ready.Value)
	require.Equal(t, "12:00:30 UTC · 130 ready jobs", ready.Spark.Latest, "the line ends on the tile's number, at the round's time")
	require.Len(t, ready.Spark.Dots, 4)

	blocked := byID["blocked"]
	require.Equal(t, "0", blocked.Value)
	require.Equal(t, "12:00:30 UTC · 0 blocked backends", blocked.Spark.Latest, "a sample newer than the round gives way to it")
	require.Len(t, blocked.Spark.Dots, 2)
}
