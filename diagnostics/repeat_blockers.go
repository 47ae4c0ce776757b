package diagnostics

import (
	"context"
	"time"

	"github.com/pgconsole/console/diagnostics/episodes"
)

// RepeatBlocker is a root application that held up the engine's job
// claims in recorded lock episodes (episodes.RepeatBlocker): the evidence
// of the finding "the same root application blocked the claims N times in
// the last hour".
type RepeatBlocker = episodes.RepeatBlocker

// RepeatBlockerWindow is how far back the repeat blockers are counted.
const RepeatBlockerWindow = time.Hour

// RepeatBlockers returns every root application that held up the engine's
// job claims in a lock episode that started in the hour before at, most
// episodes first. The threshold (Thresholds.RepeatBlockers) is the
// finding's to apply, so a round keeps them all.
func RepeatBlockers(ctx context.Context, db DBTX, at time.Time) ([]RepeatBlocker, error) {
	return episodes.RepeatBlockers(ctx, db, at.Add(-RepeatBlockerWindow), 1)
}

// RepeatBlockers runs the repeat blockers' statement as a panel.
func (d *Diagnostics) RepeatBlockers(ctx context.Context) Result[RepeatBlocker] {
	return panel(ctx, d, CheckRepeatBlockers, many(func(ctx context.Context, db DBTX) ([]RepeatBlocker, error) {
		return RepeatBlockers(ctx, db, d.now())
	}))
}

func readRepeatBlockers(ctx context.Context, db DBTX, s *roundState) ([]RepeatBlocker, error) {
	return RepeatBlockers(ctx, db, s.round.At)
}
