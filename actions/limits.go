package actions

import "fmt"

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
		numberParam(&l.RatePerSecond, "rate_per_second", rateDesc),
		boolParam(&l.ClearLimits, "clear_limits", "Remove both limits before applying the ones given."),
	}
}

// check refuses a count outside [lo, hi], a rate not above 0, and a request
// that changes nothing.
func (l *limits) check(countName string, lo, hi int64) error {
	if l.Count != nil && (*l.Count < lo || *l.Count > hi) {
		return invalid(countName, "must be between %d and %d", lo, hi)
	}
	if l.RatePerSecond != nil && *l.RatePerSecond <= 0 {
		return invalid("rate_per_second", "must be above 0")
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
