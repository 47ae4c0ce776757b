package actions

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
)

// TestRefusalFolderWindows: a window's folded refusals are one row, written
// at the kind's next refusal after the window, or by the window's timer
// when no refusal comes; the first refusal of each window is audited.
func TestRefusalFolderWindows(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var written []audit.Event
	f := newRefusalFolder(time.Minute, func(_ context.Context, ev audit.Event) {
		mu.Lock()
		defer mu.Unlock()
		written = append(written, ev)
	})
	k := refusalKind{actor: "vera", action: "queue.pause", reason: "forbidden"}
	ev := func(i int) audit.Event {
		return audit.Event{Actor: "vera", Action: "queue.pause", Error: fmt.Sprint("refusal ", i)}
	}
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)

	now, ended := f.fold(k, ev(0), t0)
	require.True(t, now, "the first refusal is audited")
	require.Nil(t, ended)
	for i := 1; i <= 5; i++ {
		now, ended = f.fold(k, ev(i), t0.Add(time.Duration(i)*time.Second))
		require.False(t, now, "refusal %d within the window is folded", i)
		require.Nil(t, ended)
	}
	now, ended = f.fold(k, ev(6), t0.Add(61*time.Second))
	require.True(t, now, "the first refusal after the window opens a new one")
	require.NotNil(t, ended, "and brings the ended window's row")
	require.Equal(t, "5 more refusals (forbidden) of queue.pause by vera from 2026-12-06T05:00:01Z to 2026-12-06T05:00:05Z, folded into this row; the last: refusal 5", ended.Error)

	other := refusalKind{actor: "vera", action: "queue.pause", reason: "invalid"}
	now, _ = f.fold(other, ev(7), t0.Add(62*time.Second))
	require.True(t, now, "another kind of reason is audited at once")

	// A short window whose timer writes the row by itself.
	short := newRefusalFolder(50*time.Millisecond, f.write)
	start := time.Now()
	now, _ = short.fold(k, ev(8), start)
	require.True(t, now)
	now, _ = short.fold(k, ev(9), start)
	require.False(t, now)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(written)
		mu.Unlock()
		if n == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the window's timer wrote no row")
		time.Sleep(10 * time.Millisecond)
	}
	require.Contains(t, written[0].Error, "1 more refusals (forbidden)")
	short.mu.Lock()
	require.Empty(t, short.folds, "an ended window is forgotten")
	short.mu.Unlock()
}
