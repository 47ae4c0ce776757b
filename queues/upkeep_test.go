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
