package diagnostics

// RoundsRun returns how many rounds d has run for LatestRound, so tests can
// count them.
func RoundsRun(d *Diagnostics) int64 { return d.roundsRun.Load() }

// OwnPIDs returns the backend pids of d's primary connections, the ones its
// views leave out.
func OwnPIDs(d *Diagnostics) map[int32]bool {
	d.own.mu.Lock()
	defer d.own.mu.Unlock()
	out := make(map[int32]bool, len(d.own.pids))
	for p := range d.own.pids {
		out[int32(p)] = true
	}
	return out
}
