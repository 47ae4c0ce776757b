package queues

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// DeadLetterStatsParams bound the dead-letter reads of the console's
// panels and findings, so their cost stays flat however many jobs are dead.
type DeadLetterStatsParams struct {
	// Window is how far back a dead letter counts as recent (default 15
	// minutes).
	Window time.Duration
	// CountCap is where the recent counts stop (default 10,000): a count
	// equal to the cap means "at least that many". Dead counts are exact.
	CountCap int64
	// MaxGroups bounds how many (queue, error class) groups
	// DeadLetterClassStats returns (default DefaultDeadLetterGroups).
	MaxGroups int
}

// DefaultDeadLetterGroups is how many groups DeadLetterClassStats returns
// when DeadLetterStatsParams.MaxGroups is zero.
const DefaultDeadLetterGroups = 200

func (p DeadLetterStatsParams) withDefaults() DeadLetterStatsParams {
	if p.Window <= 0 {
		p.Window = 15 * time.Minute
	}
	if p.CountCap <= 0 {
		p.CountCap = 10_000
	}
	if p.MaxGroups <= 0 {
		p.MaxGroups = DefaultDeadLetterGroups
	}
	return p
}

// DeadLetterClassStat is the dead jobs of one queue with one error class
// ("" for jobs that died without one).
type DeadLetterClassStat struct {
	Queue      string `db:"queue" json:"queue"`
	ErrorClass string `db:"error_class" json:"error_class"`
	// Dead is exact; DeadRecent (died within the window) stops at the
	// count cap.
	Dead       int64 `db:"dead" json:"dead"`
	DeadRecent int64 `db:"dead_recent" json:"dead_recent"`
	// LastFinishedAt is the latest death of the group, nil only if none of
	// its dead jobs has a finished_at (the engine always sets one).
	LastFinishedAt *time.Time `db:"last_finished_at" json:"last_finished_at"`
}

// DeadLetterClassStats groups dead jobs by queue and error class, the most
// recent burst first (then the largest), at most p.MaxGroups groups: what an
// operator classifies before any requeue. The groups, their counts and last
// deaths come from dead_letter_counts and the recent counts from one scan of
// the window's deaths, so its cost follows the number of groups and of
// recent deaths, not of dead jobs.
func DeadLetterClassStats(ctx context.Context, db DBTX, p DeadLetterStatsParams) ([]DeadLetterClassStat, error) {
	p = p.withDefaults()
	return collectRows[DeadLetterClassStat](ctx, db, "dead_letter_class_stats", "group dead letters by class",
		p.Window.Seconds(), p.CountCap, p.MaxGroups)
}

// DeadLetterQueueCount is how many jobs of one queue are dead.
type DeadLetterQueueCount struct {
	Queue string `db:"queue" json:"queue"`
	// Dead is exact; DeadRecent (died within the window) stops at the
	// count cap.
	Dead       int64 `db:"dead" json:"dead"`
	DeadRecent int64 `db:"dead_recent" json:"dead_recent"`
}

// DeadLetterQueueCounts counts the dead jobs of every queue that has any,
// by queue name: Dead exact, DeadRecent stopping at p.CountCap (p.MaxGroups
// does not apply). It adds up DeadLetterClassStats over every group of the
// queue (a sum of recent counts each capped at CountCap, capped again, is
// the queue's recent count capped at CountCap). Its cost follows the number
// of groups, not of dead jobs.
func DeadLetterQueueCounts(ctx context.Context, db DBTX, p DeadLetterStatsParams) ([]DeadLetterQueueCount, error) {
	_, counts, err := DeadLetterClassStatsAll(ctx, db, p)
	return counts, err
}

// DeadLetterClassStatsAll is one statement answering both
// DeadLetterClassStats without its MaxGroups bound (every group, in the
// same order, so its first p.MaxGroups are DeadLetterClassStats' answer)
// and DeadLetterQueueCounts: a caller that shows both reads the window's
// deaths once.
func DeadLetterClassStatsAll(ctx context.Context, db DBTX, p DeadLetterStatsParams) ([]DeadLetterClassStat, []DeadLetterQueueCount, error) {
	p = p.withDefaults()
	var everyGroup *int // LIMIT NULL: no limit
	groups, err := collectRows[DeadLetterClassStat](ctx, db, "dead_letter_class_stats", "count dead letters by queue",
		p.Window.Seconds(), p.CountCap, everyGroup)
	if err != nil {
		return nil, nil, err
	}
	byQueue := slices.Clone(groups)
	slices.SortFunc(byQueue, func(a, b DeadLetterClassStat) int { return cmp.Compare(a.Queue, b.Queue) })
	var out []DeadLetterQueueCount
	for _, g := range byQueue {
		if len(out) == 0 || out[len(out)-1].Queue != g.Queue {
			out = append(out, DeadLetterQueueCount{Queue: g.Queue})
		}
		q := &out[len(out)-1]
		q.Dead += g.Dead
		q.DeadRecent = min(q.DeadRecent+g.DeadRecent, p.CountCap)
	}
	return groups, out, nil
}

// DeadLetterClassCount is one error class among the dead jobs a filter
// matches ("" for jobs that died without one).
type DeadLetterClassCount struct {
	ErrorClass string `db:"error_class" json:"error_class"`
	Count      int64  `db:"count" json:"count"`
}

// DeadLetterClassList lists the error classes of the dead jobs matching f
// with their counts, largest first, at most limit classes (default 50): a
// requeue's preview shows them so that one class is requeued at a time.
func DeadLetterClassList(ctx context.Context, db DBTX, f DeadLetterFilter, limit int) ([]DeadLetterClassCount, error) {
	if limit <= 0 {
		limit = 50
	}
	return collectRows[DeadLetterClassCount](ctx, db, "dead_letter_class_list", "list dead-letter classes",
		append(f.args(), limit)...)
}

// DeadLetterClassStatsSQL returns the statement DeadLetterClassStats runs,
// for pages that show operators the exact SQL behind what they see.
func DeadLetterClassStatsSQL() string { return sqlText("dead_letter_class_stats") }

// DeadLetterTotal is how many jobs are dead, exactly, and in how many
// (queue, error class) groups.
type DeadLetterTotal struct {
	Dead   int64 `db:"dead" json:"dead"`
	Groups int64 `db:"groups" json:"groups"`
}

// DeadLetterTotals counts the dead jobs of queue ("" for every queue) and
// their groups from dead_letter_counts: exact, at the cost of one row per
// group.
func DeadLetterTotals(ctx context.Context, db DBTX, queue string) (DeadLetterTotal, error) {
	var t DeadLetterTotal
	if err := db.QueryRow(ctx, sqlText("dead_letter_totals"), queue).Scan(&t.Dead, &t.Groups); err != nil {
		return t, fmt.Errorf("count dead letters: %w", err)
	}
	return t, nil
}
