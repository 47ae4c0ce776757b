package web

import (
	"sort"
	"time"

	"github.com/pgconsole/console/diagnostics"
)

// sparkWindow is how much history a tile's sparkline shows.
const sparkWindow = 30 * time.Minute

// series reads one sampler series as plain values, oldest first, within the
// sparkline window. A nil sampler (tests, CLI) gives nothing.
func series(s *diagnostics.Sampler, name string, now time.Time) []float64 {
	if s == nil {
		return nil
	}
	var out []float64
	for _, p := range s.Series(name) {
		if now.Sub(p.At) <= sparkWindow {
			out = append(out, p.Value)
		}
	}
	return out
}

// combined merges the series whose names match, point by point at equal
// sample times, with sum or max: the total ready jobs over every queue, the
// worst replication lag over every standby.
func combined(s *diagnostics.Sampler, match func(string) bool, useMax bool, now time.Time) []float64 {
	if s == nil {
		return nil
	}
	byTime := map[time.Time]float64{}
	for _, name := range s.SeriesNames() {
		if !match(name) {
			continue
		}
		for _, p := range s.Series(name) {
			if now.Sub(p.At) > sparkWindow {
				continue
			}
			cur, seen := byTime[p.At]
			switch {
			case !seen:
				byTime[p.At] = p.Value
			case useMax && p.Value > cur:
				byTime[p.At] = p.Value
			case !useMax:
				byTime[p.At] = cur + p.Value
			}
		}
	}
	times := make([]time.Time, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	out := make([]float64, len(times))
	for i, t := range times {
		out[i] = byTime[t]
	}
	return out
}
