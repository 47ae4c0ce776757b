package diagnostics

import (
	"context"

	"github.com/pgconsole/console/queues/river"
)

// Names under which a round reads River's tables (Round.River): a read
// that fails is listed in Round.Unavailable by these names.
const (
	CheckRiverQueues   = "river_queues"
	CheckRiverStuck    = "river_stuck"
	CheckRiverDiscards = "river_discards"
	CheckRiverLeader   = "river_leader"
)

// RiverQueueStat is one River queue as River's queue pages read it
// (river.QueueStat): the row Sample.RiverQueues and the flight recorder
// keep, named here for the packages that read samples.
type RiverQueueStat = river.QueueStat

// riverTables are River's tables the round reads, so a lock timeout names
// whoever holds them.
var riverTables = []string{"river_job", "river_queue", "river_leader"}

// riverStuckLimit and riverDiscardLimit bound what a round reads of stuck
// and recently discarded River jobs.
const (
	riverStuckLimit   = 50
	riverDiscardLimit = 5000
)

// RiverEvidence is what a findings round read of a River database
// (Config.River): its queues, the jobs running past their bound, the jobs
// discarded within Thresholds.DeadLetterWindow grouped by queue, kind and
// error class, and the leader. A field stays nil when its read failed (the
// round's Unavailable says why); Leader is nil too when nobody is elected,
// which LeaderRead tells apart.
type RiverEvidence struct {
	Queues     []river.QueueStat    `json:"queues"`
	Stuck      []river.StuckJob     `json:"stuck"`
	Discards   []river.DiscardGroup `json:"discards"`
	Leader     *river.Leader        `json:"leader,omitempty"`
	LeaderRead bool                 `json:"leader_read"`
}

// readRiver reads River's tables in the round's transaction, one savepoint
// per read, as the catalog's checks are read.
func readRiver(ctx context.Context, s *session, r *Round, t Thresholds) *RiverEvidence {
	var e RiverEvidence
	reads := []struct {
		name string
		fn   func(context.Context, DBTX) error
	}{
		{CheckRiverQueues, func(ctx context.Context, db DBTX) (err error) { e.Queues, err = river.QueueList(ctx, db); return }},
		{CheckRiverStuck, func(ctx context.Context, db DBTX) (err error) {
			e.Stuck, err = river.StuckRunning(ctx, db, t.RiverRescueAfter, float64(t.LongRunningJobFactor), riverStuckLimit)
			return
		}},
		{CheckRiverDiscards, func(ctx context.Context, db DBTX) (err error) {
			e.Discards, err = river.DiscardedSince(ctx, db, r.At.Add(-t.DeadLetterWindow), riverDiscardLimit)
			return
		}},
		{CheckRiverLeader, func(ctx context.Context, db DBTX) (err error) {
			e.Leader, err = river.LeaderGet(ctx, db)
			e.LeaderRead = err == nil
			return
		}},
	}
	for _, x := range reads {
		if ctx.Err() != nil {
			r.Unavailable = append(r.Unavailable, Unavailable{Check: x.name, Status: "skipped: findings budget exhausted", TimedOut: true, Err: ctx.Err()})
			continue
		}
		p := s.run(ctx, x.name, riverTables, x.fn)
		r.Timings[x.name] = p.Took
		if p.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(x.name, p))
		}
	}
	return &e
}

// sampleRiver reads River's queues into smp, for the flight recorder
// (HistoryRiverQueues), or takes them from fresh, a round someone watches
// that read them moments ago (ok).
func sampleRiver(ctx context.Context, s *session, smp *Sample, fresh Round, ok bool) {
	if ok && fresh.River != nil && fresh.River.Queues != nil && !fresh.Failed(CheckRiverQueues) {
		smp.RiverQueues = fresh.River.Queues
		return
	}
	s.run(ctx, CheckRiverQueues, riverTables, func(ctx context.Context, db DBTX) (err error) {
		smp.RiverQueues, err = river.QueueList(ctx, db)
		return
	})
}
