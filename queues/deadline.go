package queues

import (
	"context"
	"time"
)

// A running job's lease has two ends: the database's lease_until, which
// the reaper reads, and a local deadline on this worker's monotonic clock,
// which the worker enforces itself. Without the local one nothing cancels a
// handler while the database is unreachable (a silent partition: packets
// dropped, no reset), and the handler runs on after the reaper has given
// its job to another worker.
//
// The local deadline is the time the last claim or renewal that held the
// job was sent, plus the lease, less leaseMargin. The database computes
// lease_until from its own clock when it runs the statement, which is
// never before the statement was sent, so counting from the send already
// covers the statement's time in flight (a renewal that came back after
// five seconds extends the lease from when it left). The margin covers the
// rest: the two clocks' rates (NTP slews a clock by at most 0.05 %), how
// late leaseWatch may wake, and the time a cancelled handler needs to
// return before the database's lease actually ends.

// leaseMarginDivisor sets leaseMargin to a tenth of the lease (3 s of the
// default 30 s): the renewals, every third of the lease, keep the deadline
// at least half a lease ahead while the database answers.
const leaseMarginDivisor = 10

// leaseMargin is how long before the database's lease ends the worker
// takes it for lost.
func leaseMargin(lease time.Duration) time.Duration { return lease / leaseMarginDivisor }

// leaseDeadline is the local deadline (Client.clock) of a lease of length
// lease granted by a statement sent at sent (Client.clock).
func leaseDeadline(sent, lease time.Duration) time.Duration {
	return sent + lease - leaseMargin(lease)
}

// LeaseDeadline returns when the running job's lease ends on this worker's
// clock unless a renewal reaches the database before: the handler's
// context is cancelled then with cause ErrLeaseDeadline. It moves later
// with every renewal (each third of ClientConfig.LeaseDuration), so read
// it when it is needed, as a bound for work that must not outlive the
// lease (a statement_timeout, say). ok is false when ctx is not the
// context of a running job's handler (or one derived from it).
func LeaseDeadline(ctx context.Context) (deadline time.Time, ok bool) {
	jc := jobContextOf(ctx)
	if jc == nil {
		return time.Time{}, false
	}
	return jc.client.epoch.Add(time.Duration(jc.deadline.Load())), true
}

// jobKey finds a running job's *jobContext in its handler's context.
type jobKey struct{}

// jobContextOf is the running job's context that ctx is or derives from,
// or nil.
func jobContextOf(ctx context.Context) *jobContext {
	jc, _ := ctx.Value(jobKey{}).(*jobContext)
	return jc
}

// leaseWatch cancels, with cause ErrLeaseDeadline, the handler of every
// running job whose local lease deadline has passed. It runs beside
// renewLoop, apart from it, until the drain ends: a renewal waiting on an
// unreachable database must not hold it up. It wakes at the earliest
// deadline it saw, and at least every half margin for the jobs claimed
// since, whose deadlines it has not seen.
func (c *Client) leaseWatch(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := c.clock()
		wait := leaseMargin(c.cfg.LeaseDuration) / 2
		if next, ok := c.expireLeases(now); ok {
			wait = min(wait, next-now)
		}
		t.Reset(max(wait, time.Millisecond))
	}
}

// expireLeases cancels the running jobs whose local deadline is not after
// now (Client.clock), each once, and returns the earliest deadline still
// ahead (ok false when there is none). A job completed in its handler's
// transaction (JobCompleteTx) is cancelled too: until that transaction
// commits the job is not done, and a handler cut off before its COMMIT
// must stop like any other.
func (c *Client) expireLeases(now time.Duration) (next time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running.each(func(r runningJob) {
		jc := r.jc
		if jc == nil || jc.leaseExpired {
			return
		}
		d := time.Duration(jc.deadline.Load())
		if d <= now {
			jc.leaseExpired = true
			r.cancel(ErrLeaseDeadline)
			return
		}
		if !ok || d < next {
			next, ok = d, true
		}
	})
	return next, ok
}
