package queues

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the delay before retry number attempt (1 for the first
// retry) with capped exponential backoff and full jitter: a uniformly random
// duration in [0, min(max, base*2^(attempt-1))]. Full jitter spreads the
// retries of jobs that failed together (a dependency outage) instead of
// sending them back in waves.
func Backoff(attempt int, base, max time.Duration) time.Duration {
	ceiling := BackoffCeiling(attempt, base, max)
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// BackoffCeiling is the upper bound Backoff draws from: base*2^(attempt-1),
// capped at max.
func BackoffCeiling(attempt int, base, max time.Duration) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < attempt; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// DefaultRetryBase and DefaultRetryMax are the backoff of a Client whose
// ClientConfig leaves RetryBase and RetryMax zero.
const (
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 10 * time.Minute
)

// FailedAttempt is what the engine does with a running job whose attempt
// fails with a retryable error (a cancelled statement, a dropped
// connection), as JobFail decides it: the job goes dead when its attempts
// are spent, else back to ready after a backoff of at most RetryWithin
// (the ceiling of a Client with the default backoff; a client with its own
// RetryBase, RetryMax or RetryDelayFunc waits otherwise).
type FailedAttempt struct {
	Dead        bool
	RetryWithin time.Duration
}

// AttemptFailure says what a failure of the attempt a running job is on
// does to it.
func AttemptFailure(attempts, maxAttempts int) FailedAttempt {
	if attempts >= maxAttempts {
		return FailedAttempt{Dead: true}
	}
	return FailedAttempt{RetryWithin: BackoffCeiling(attempts, DefaultRetryBase, DefaultRetryMax)}
}
