package bench

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// latencyBuckets is the size of a latencyHistogram: durations below 64 ns
// exactly, then 64 buckets per power of two up to 2^63 ns.
const latencyBuckets = 64 + 57*64

// latencyHistogram counts durations in log-linear buckets (each within
// 1/64 of its value), so a phase of any length keeps a fixed size and
// handlers record without a lock. The zero value is empty and ready.
type latencyHistogram struct {
	n      atomic.Int64
	counts [latencyBuckets]atomic.Int64
}

func latencyBucket(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < 64 {
		return int(v)
	}
	e := bits.Len64(v) - 1
	return 64 + (e-6)*64 + int((v>>(e-6))&63)
}

// bucketFloor is the smallest duration bucket i counts.
func bucketFloor(i int) time.Duration {
	if i < 64 {
		return time.Duration(i)
	}
	e, sub := (i-64)/64+6, (i-64)%64
	return time.Duration(uint64(64+sub) << (e - 6))
}

func (h *latencyHistogram) record(d time.Duration) {
	h.counts[latencyBucket(d)].Add(1)
	h.n.Add(1)
}

// add folds o's counts into h.
func (h *latencyHistogram) add(o *latencyHistogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
			h.n.Add(c)
		}
	}
}

// quantile is the q-quantile (0..1) by nearest rank, as the floor of its
// bucket; 0 when empty.
func (h *latencyHistogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(q*float64(n)+0.999999999), 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return bucketFloor(i)
		}
	}
	return bucketFloor(latencyBuckets - 1)
}
