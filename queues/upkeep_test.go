package queues

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The reaper's next tick waits reapInterval, or reapSpacing times as long
// as the last tick took when that is longer: behind a pinned xmin horizon a
// tick takes seconds, and ticks one after another would keep a connection
// and a core busy walking dead index entries.
func TestReapSpacedByItsCost(t *testing.T) {
	t.Parallel()
	c := &Client{cfg: ClientConfig{PollInterval: time.Second, LeaseDuration: 30 * time.Second}}
	require.Equal(t, 3*time.Second, c.reapInterval())
	require.Equal(t, 3*time.Second, c.reapWait(0), "a quick tick: the interval")
	require.Equal(t, 3*time.Second, c.reapWait(100*time.Millisecond))
	require.Equal(t, 40*time.Second, c.reapWait(2*time.Second), "a 2 s tick: the next waits 20 times that")
}

// The reaper's scans start at the floor its last complete scan left (its
// start on the database's clock less a LeaseDuration), and one from the
// start runs every reapFullEvery intervals, spaced by its cost: behind a
// pinned xmin horizon a scan from the start walks every lease taken since
// the pin.
func TestReapFloor(t *testing.T) {
	t.Parallel()
	const interval, lease = 3 * time.Second, 30 * time.Second
	var r reapState
	t0 := time.Now()
	db := t0.Add(-time.Hour) // the database's clock, an hour behind this process's
	require.True(t, r.from(t0, interval).IsZero(), "no floor yet: a scan from the start")

	// A scan that did not cover its range (an error, or ten full batches)
	// leaves no floor.
	r.done(t0, time.Second, true, time.Time{}, lease)
	require.True(t, r.from(t0.Add(interval), interval).IsZero())

	r.done(t0.Add(interval), time.Second, true, db.Add(interval), lease)
	require.Equal(t, db.Add(interval-lease), r.from(t0.Add(2*interval), interval),
		"a complete scan sets the floor from its start on the database's clock")

	// Bounded scans move it on; an incomplete one leaves it.
	r.done(t0.Add(2*interval), time.Millisecond, false, db.Add(2*interval), lease)
	require.Equal(t, db.Add(2*interval-lease), r.from(t0.Add(3*interval), interval))
	r.done(t0.Add(3*interval), time.Millisecond, false, time.Time{}, lease)
	require.Equal(t, db.Add(2*interval-lease), r.from(t0.Add(4*interval), interval))

	// The last scan from the start began at t0+interval and took 1 s: the
	// next one after reapFullEvery intervals.
	require.False(t, r.from(t0.Add(interval+reapFullEvery*interval-time.Millisecond), interval).IsZero())
	require.True(t, r.from(t0.Add(interval+reapFullEvery*interval), interval).IsZero())

	// One that took 10 s: the next after 20 times that.
	r.done(t0.Add(time.Minute), 10*time.Second, true, time.Time{}, lease)
	require.False(t, r.from(t0.Add(time.Minute+reapSpacing*10*time.Second-time.Millisecond), interval).IsZero())
	require.True(t, r.from(t0.Add(time.Minute+reapSpacing*10*time.Second), interval).IsZero())
}
