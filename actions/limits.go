package actions

import (
	"fmt"
	"math"
)

// A throttle's rate lies in [minRate, maxRate] per second: one claim every
// 1,000 seconds at the slowest, a million per second at the fastest, so the
// engine's token arithmetic (a wait of 1/rate) stays finite.
const (
	minRate = 0.001
	maxRate = 1e6
)

// limits are a throttle's parameters, shared by queue.throttle and
// relay.throttle: a count (max_workers, batch_size), a rate, and
// clear_limits to remove both first. A nil limit stays as it is.
type limits struct {
	Count         *int64
	RatePerSecond *float64
	ClearLimits   bool
}

func (l *limits) fields(countName, countDesc, rateDesc string) []field {
	return []field{
		optIntParam(&l.Count, countName, countDesc),
		numberParam(&l.RatePerSecond, "rate_per_second", rateDesc, minRate, maxRate),
		boolParam(&l.ClearLimits, "clear_limits", "Remove both limits before applying the ones given."),
	}
}

// check refuses a count outside [lo, hi], a rate outside [minRate, maxRate],
// and a request that changes nothing.
func (l *limits) check(countName string, lo, hi int64) error {
	if l.Count != nil && (*l.Count < lo || *l.Count > hi) {
		return invalid(countName, "must be between %d and %d", lo, hi)
	}
	if r := l.RatePerSecond; r != nil && (math.IsNaN(*r) || *r < minRate || *r > maxRate) {
		return invalid("rate_per_second", "must be between %g and %g", minRate, maxRate)
	}
	if l.Count == nil && l.RatePerSecond == nil && !l.ClearLimits {
		return fmt.Errorf("give %s, rate_per_second or clear_limits: %w", countName, ErrInvalid)
	}
	return nil
}

// apply sets the stored count and rate to the ones asked for.
func (l *limits) apply(count **int, rate **float64) {
	if l.ClearLimits {
		*count, *rate = nil, nil
	}
	if l.Count != nil {
		n := int(*l.Count)
		*count = &n
	}
	if l.RatePerSecond != nil {
		r := *l.RatePerSecond
		*rate = &r
	}
}

// limitsState is what a change of a queue's or the relay's settings rests
// on: the settings it starts from (not who set them, nor the moving counts
// the preview also shows).
type limitsState struct {
	Paused        bool     `json:"paused"`
	Count         *int     `json:"count"`
	RatePerSecond *float64 `json:"rate_per_second"`
}

// limitsText says paused-or-running and the two limits, as a sentence
// does: "paused, max workers 2, rate no limit".
func limitsText(paused bool, countName string, count *int, rate *float64) string {
	state := "running"
	if paused {
		state = "paused"
	}
	return state + ", " + countName + " " + limitText(count) + ", rate " + limitText(rate)
}
