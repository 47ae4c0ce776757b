package diagnostics

// RoundsRun returns how many rounds d has run for LatestRound, so tests can
// count them.
func RoundsRun(d *Diagnostics) int64 { return d.roundsRun.Load() }
