package diagnostics

import "time"

// reading is one read of cumulative counters and when it was taken.
type reading[T any] struct {
	at time.Time
	v  T
}

// counterWindow keeps two reads of cumulative counters (the checkpointer's,
// a standby's conflicts), so a round measures what happened over the last
// span to twice the span, however often rounds run, without keeping every
// read.
type counterWindow[T any] struct {
	base, next *reading[T]
}

// advance records v read at now and returns the read the window starts
// at. ok is false on the first read, and when restarted says the counters
// went back (a stats reset or a server restart): the window starts again
// from v.
func (w *counterWindow[T]) advance(now time.Time, v T, span time.Duration, restarted func(from, to T) bool) (from reading[T], ok bool) {
	cur := &reading[T]{at: now, v: v}
	if w.base == nil || restarted(w.base.v, v) {
		w.base, w.next = cur, nil
		return reading[T]{}, false
	}
	from = *w.base
	if w.next == nil {
		w.next = cur
	}
	if now.Sub(w.base.at) >= span {
		w.base, w.next = w.next, cur
	}
	return from, true
}

// CheckpointWindow is the checkpointer's counters at the start and the end
// of a window of rounds.
type CheckpointWindow struct {
	From, To   time.Time
	Start, End CheckpointerStat
}

// Requested and Timed are the checkpoints of each kind in the window.
func (w CheckpointWindow) Requested() int64 {
	return w.End.CheckpointsRequested - w.Start.CheckpointsRequested
}

// Timed: see Requested.
func (w CheckpointWindow) Timed() int64 { return w.End.CheckpointsTimed - w.Start.CheckpointsTimed }

// checkpointWindow records the checkpointer's counters read at now and
// returns the window they close, or nil on the first read and after a
// reset.
func (d *Diagnostics) checkpointWindow(now time.Time, c CheckpointerStat, span time.Duration) *CheckpointWindow {
	d.mu.Lock()
	defer d.mu.Unlock()
	from, ok := d.checkpoints.advance(now, c, span, func(a, b CheckpointerStat) bool {
		return b.CheckpointsRequested < a.CheckpointsRequested || b.CheckpointsTimed < a.CheckpointsTimed
	})
	if !ok {
		return nil
	}
	return &CheckpointWindow{From: from.at, To: now, Start: from.v, End: c}
}
