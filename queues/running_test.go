package queues

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunningSetMatchesAMap drives the running set with random adds and
// removes and checks it against a map after every step: each removes
// exactly the job its slot was given for, each sees every running job
// once, freed slots are used again rather than growing the set, and
// removing a job that is not in its slot (any more) changes nothing.
func TestRunningSetMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s runningSet
	want := map[int64]int64{} // id: generation
	slots := map[int64]int{}  // id: slot
	noop := func(error) {}
	var nextID int64
	for step := range 20000 {
		if len(want) == 0 || (len(want) < 300 && rng.IntN(2) == 0) {
			nextID++
			gen := rng.Int64N(5)
			slots[nextID] = s.add(runningJob{id: nextID, generation: gen, cancel: noop})
			want[nextID] = gen
		} else {
			for id := range want { // any running job
				s.remove(slots[id], id)
				// A second remove, and one naming another job: no-ops.
				s.remove(slots[id], id)
				s.remove(rng.IntN(len(s.slots)), -id)
				delete(want, id)
				delete(slots, id)
				break
			}
		}
		got := map[int64]int64{}
		s.each(func(j runningJob) {
			_, dup := got[j.id]
			require.False(t, dup, "step %d: job %d seen twice", step, j.id)
			got[j.id] = j.generation
		})
		require.Equal(t, want, got, "step %d", step)
		require.Equal(t, len(want), s.len(), "step %d", step)
	}
	require.LessOrEqual(t, len(s.slots), 300, "freed slots are reused")
}
