package queues

import "context"

// runningSet is the jobs a Client is running: what the lease heartbeat
// renews, what Stop cancels and what the orphan check must not release.
// Every job enters it when its claim is started and leaves it when its
// outcome is written, so it churns once per job; lookups by id are rare (a
// lease the heartbeat found lost, an orphan check).
//
// So each job keeps the index of its slot, and removing it costs no
// hashing: a map keyed by job id, inserting and deleting once per job, was
// about 7 % of the engine's CPU in a burn-down of no-op jobs, most of it
// probing on delete. Lookups by id scan the slots. The caller holds
// Client.mu.
type runningSet struct {
	slots []runningJob // a slot whose cancel is nil is free
	free  []int        // indexes of free slots, the last freed on top
	n     int          // jobs in the set
}

// runningJob is one running job's entry.
type runningJob struct {
	id         int64
	generation int64
	cancel     context.CancelCauseFunc // never nil in a used slot
	jc         *jobContext             // its deadline, for renewLoop and leaseWatch
}

// add puts j in a free slot and returns the slot's index.
func (s *runningSet) add(j runningJob) int {
	s.n++
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.slots[i] = j
		return i
	}
	s.slots = append(s.slots, j)
	return len(s.slots) - 1
}

// remove frees slot i, which add returned for job id. A slot that no
// longer holds that job (freed already, perhaps given to another job since)
// is left as it is, as deleting a missing key from a map would.
func (s *runningSet) remove(i int, id int64) {
	if s.slots[i].cancel == nil || s.slots[i].id != id {
		return
	}
	s.slots[i] = runningJob{}
	s.free = append(s.free, i)
	s.n--
}

// len is how many jobs are running.
func (s *runningSet) len() int { return s.n }

// each calls f with every running job.
func (s *runningSet) each(f func(j runningJob)) {
	for _, j := range s.slots {
		if j.cancel != nil {
			f(j)
		}
	}
}
