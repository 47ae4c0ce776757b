package episodes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/internal/sqlset"
)

// Episode is one recorded lock episode: a root blocker and everyone who
// waited behind it, from the first wait to the first look that found none
// waiting.
type Episode struct {
	ID    int64     `db:"id" json:"id"`
	Start time.Time `db:"start_at" json:"start"`
	// LastSeen is the last look that saw it; End the first look that did
	// not (nil while open). EndSeen is false when the recorder stopped
	// before the end: End is then LastSeen, and the wait may have lasted
	// longer.
	LastSeen        time.Time  `db:"last_seen_at" json:"last_seen"`
	End             *time.Time `db:"end_at" json:"end"`
	EndSeen         bool       `db:"end_seen" json:"end_seen"`
	RecordedBy      string     `db:"recorded_by" json:"recorded_by"`
	RootPID         int32      `db:"root_pid" json:"root_pid"`
	RootApplication string     `db:"root_application" json:"root_application"`
	RootQuery       string     `db:"root_query" json:"root_query"`
	// LockType, LockMode and LockTarget are the lock the first waiter
	// waited for.
	LockType     string   `db:"lock_type" json:"lock_type"`
	LockMode     string   `db:"lock_mode" json:"lock_mode"`
	LockTarget   string   `db:"lock_target" json:"lock_target"`
	Tables       []string `db:"tables" json:"tables"`
	Applications []string `db:"applications" json:"applications"`
	JobKinds     []string `db:"job_kinds" json:"job_kinds"`
	Queues       []string `db:"queues" json:"queues"`
	// PeakWaiting is the most sessions waiting at once; JobsDelayed the
	// jobs whose sessions waited; ClaimsDelayed the engine's job claims
	// that waited.
	PeakWaiting   int     `db:"peak_waiting" json:"peak_waiting"`
	JobsDelayed   int     `db:"jobs_delayed" json:"jobs_delayed"`
	ClaimsDelayed int     `db:"claims_delayed" json:"claims_delayed"`
	WaitedSeconds float64 `db:"waited_seconds" json:"waited_seconds"`
	// Participants are the sessions involved, root first (List fills
	// them).
	Participants []Participant `db:"-" json:"participants"`
}

// Duration is how long the episode lasted: to its end, or to its last
// sighting while open or when the end was not seen.
func (e Episode) Duration() time.Duration {
	if e.End != nil {
		return e.End.Sub(e.Start)
	}
	return e.LastSeen.Sub(e.Start)
}

// Participant is one session of an episode.
type Participant struct {
	EpisodeID    int64      `db:"episode_id" json:"-"`
	Seq          int16      `db:"seq" json:"seq"`
	PID          int32      `db:"pid" json:"pid"`
	BackendStart *time.Time `db:"backend_start" json:"backend_start"`
	// Role is root (what everyone waited behind), blocker (waited, and
	// others waited on it) or waiter.
	Role        string  `db:"role" json:"role"`
	BlockedBy   []int32 `db:"blocked_by" json:"blocked_by"`
	Application string  `db:"application" json:"application"`
	Fingerprint string  `db:"fingerprint" json:"fingerprint"`
	Query       string  `db:"query" json:"query"`
	LockType    string  `db:"lock_type" json:"lock_type"`
	LockMode    string  `db:"lock_mode" json:"lock_mode"`
	LockTarget  string  `db:"lock_target" json:"lock_target"`
	// Held is what a root held on relations and advisory keys.
	Held        []string   `db:"held" json:"held"`
	JobID       *int64     `db:"job_id" json:"job_id"`
	JobKind     string     `db:"job_kind" json:"job_kind"`
	Queue       string     `db:"queue" json:"queue"`
	WaitStart   *time.Time `db:"wait_start" json:"wait_start"`
	FirstSeenAt time.Time  `db:"first_seen_at" json:"first_seen"`
	LastSeenAt  time.Time  `db:"last_seen_at" json:"last_seen"`
}

// ListParams filter the episodes List returns. Zero values are defaults.
type ListParams struct {
	// Since and Until bound the episodes' start; default the last hour.
	Since, Until time.Time
	// MinDuration leaves out shorter episodes.
	MinDuration time.Duration
	// Table, Application, JobKind and Queue keep the episodes that waited
	// on that table, involved that application (root or waiter), delayed
	// a job of that kind or queue. Empty: any.
	Table, Application, JobKind, Queue string
	// Limit bounds the episodes: default ListMax, at most ListMax+1 (a
	// page and one more, which tells whether another page follows).
	Limit int
	// Bare leaves the participants out: a time line needs the episodes'
	// rows only.
	Bare bool
	// After is where the page before ended (its last episode's Cursor):
	// List returns the episodes that come after it in its order. Nil: the
	// first page.
	After *Cursor
}

// Cursor is an episode's place in List's order (most waited first, then
// the latest start, then the highest id): a page that ends with it is
// followed by the episodes after it, read from there through an index
// rather than by skipping the pages before.
type Cursor struct {
	WaitedSeconds float64
	Start         time.Time
	ID            int64
}

// Cursor is e's place in List's order.
func (e Episode) Cursor() Cursor {
	return Cursor{WaitedSeconds: e.WaitedSeconds, Start: e.Start, ID: e.ID}
}

// String writes c as one URL-safe word: waited seconds, start (Unix
// microseconds) and id, joined by "_"; ParseCursor reads it back.
func (c Cursor) String() string {
	return strconv.FormatFloat(c.WaitedSeconds, 'g', -1, 64) + "_" + strconv.FormatInt(c.Start.UnixMicro(), 10) + "_" +
		strconv.FormatInt(c.ID, 10)
}

// ErrBadCursor is ParseCursor's error for text that is not a Cursor.
var ErrBadCursor = errors.New("not a page cursor: give the after= of the page's \"next\" link")

// ParseCursor reads what Cursor.String wrote.
func ParseCursor(s string) (Cursor, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 {
		return Cursor{}, ErrBadCursor
	}
	waited, err1 := strconv.ParseFloat(parts[0], 64)
	micros, err2 := strconv.ParseInt(parts[1], 10, 64)
	id, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || math.IsNaN(waited) || math.IsInf(waited, 0) || waited < 0 {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{WaitedSeconds: waited, Start: time.UnixMicro(micros).UTC(), ID: id}, nil
}

// ListMax is the most episodes List returns.
const ListMax = 200

// List returns the episodes matching p, most waited first (a page of at
// most p.Limit, after p.After), with their participants (episode_list.sql, episode_participants.sql).
func List(ctx context.Context, db DBTX, p ListParams) ([]Episode, error) {
	if p.Until.IsZero() {
		p.Until = time.Now()
	}
	if p.Since.IsZero() {
		p.Since = p.Until.Add(-time.Hour)
	}
	if p.Limit <= 0 {
		p.Limit = ListMax
	}
	p.Limit = min(p.Limit, ListMax+1)
	// The first page starts after an episode that waited forever.
	after := Cursor{WaitedSeconds: math.Inf(1), Start: p.Until}
	if p.After != nil {
		after = *p.After
	}
	// Planned for each call's window (not a prepared statement's generic
	// plan): a short window reads lock_episodes_start_idx and sorts its few
	// episodes, a long one walks lock_episodes_impact_idx to the limit, and
	// one plan for both sorted every episode of 30 days on each page.
	eps, err := sqlset.All[Episode](ctx, db, sqlText("episode_list"), pgx.QueryExecModeCacheDescribe, p.Since, p.Until, p.MinDuration.Seconds(),
		p.Table, p.Application, p.JobKind, p.Queue, p.Limit, after.WaitedSeconds, after.Start, after.ID)
	if err != nil {
		return nil, fmt.Errorf("list lock episodes: %w", err)
	}
	if len(eps) == 0 || p.Bare {
		return eps, nil
	}
	ids := make([]int64, len(eps))
	at := map[int64]int{}
	for i, e := range eps {
		ids[i], at[e.ID] = e.ID, i
	}
	parts, err := sqlset.All[Participant](ctx, db, sqlText("episode_participants"), ids)
	if err != nil {
		return nil, fmt.Errorf("read the sessions of lock episodes: %w", err)
	}
	for _, p := range parts {
		i := at[p.EpisodeID]
		eps[i].Participants = append(eps[i].Participants, p)
	}
	return eps, nil
}

// PruneParams bound what is kept. Zero values are defaults.
type PruneParams struct {
	// Retention is how long episodes are kept; default 30 days.
	Retention time.Duration
	// MaxBytes caps the kept episodes' rows (as recorded in bytes, before
	// TOAST; on disk they take about twice that once updated and
	// vacuumed); the oldest go first. Default 512 MiB; negative means no
	// cap.
	MaxBytes int64
	// BatchSize is the episodes per statement; default 1000.
	BatchSize int
}

// Prune deletes episodes older than the retention, then the oldest while
// the rest exceed the size cap, in batches of short statements
// (episode_prune_age.sql, episode_prune_size.sql). It returns how many
// episodes it deleted; ctx ends it between batches.
func Prune(ctx context.Context, db DBTX, p PruneParams) (int64, error) {
	if p.Retention <= 0 {
		p.Retention = 30 * 24 * time.Hour
	}
	if p.MaxBytes == 0 {
		p.MaxBytes = 512 << 20
	}
	if p.BatchSize <= 0 {
		p.BatchSize = 1000
	}
	total, err := sqlset.InBatches(ctx, db, sqlText("episode_prune_age"), p.Retention.Seconds(), p.BatchSize)
	if err != nil {
		return total, fmt.Errorf("prune lock episodes older than %s: %w", p.Retention, err)
	}
	if p.MaxBytes > 0 {
		n, err := sqlset.InBatches(ctx, db, sqlText("episode_prune_size"), p.MaxBytes, p.BatchSize)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune lock episodes above %d bytes: %w", p.MaxBytes, err)
		}
	}
	return total, nil
}

// Stat is how much is kept.
type Stat struct {
	Episodes int64 `db:"episodes" json:"episodes"`
	RowBytes int64 `db:"row_bytes" json:"row_bytes"`
	// TableBytes is both tables on disk, indexes and TOAST included.
	TableBytes int64      `db:"table_bytes" json:"table_bytes"`
	Oldest     *time.Time `db:"oldest" json:"oldest"`
	Newest     *time.Time `db:"newest" json:"newest"`
}

// Stats reads how much is kept (episode_stats.sql).
func Stats(ctx context.Context, db DBTX) (Stat, error) {
	st, err := sqlset.One[Stat](ctx, db, sqlText("episode_stats"))
	if err != nil {
		return st, fmt.Errorf("read the size of the lock episodes: %w", err)
	}
	return st, nil
}

// RepeatBlocker is an application that held up the engine's job claims
// again and again: the finding "the same root application blocked the
// claims N times in the last hour".
type RepeatBlocker struct {
	RootApplication string    `db:"root_application" json:"root_application"`
	Episodes        int       `db:"episodes" json:"episodes"`
	ClaimsDelayed   int       `db:"claims_delayed" json:"claims_delayed"`
	WaitedSeconds   float64   `db:"waited_seconds" json:"waited_seconds"`
	LastAt          time.Time `db:"last_at" json:"last_at"`
	// Targets are the locks waited for; Statements the root's statements
	// (at most five of each).
	Targets    []string `db:"targets" json:"targets"`
	Statements []string `db:"statements" json:"statements"`
}

// RepeatBlockersMin is how many episodes in the window make a finding.
const RepeatBlockersMin = 3

// RepeatBlockers returns the root applications that blocked the engine's
// job claims at least min times since since (episode_repeat_blockers.sql);
// min below 1 means RepeatBlockersMin.
func RepeatBlockers(ctx context.Context, db DBTX, since time.Time, min int) ([]RepeatBlocker, error) {
	if min < 1 {
		min = RepeatBlockersMin
	}
	out, err := sqlset.All[RepeatBlocker](ctx, db, sqlText("episode_repeat_blockers"), since, min)
	if err != nil {
		return nil, fmt.Errorf("read which applications blocked the job claims: %w", err)
	}
	return out, nil
}

// Sentence says a RepeatBlocker as an operator reads it.
func (r RepeatBlocker) Sentence(window string) string {
	app := r.RootApplication
	if app == "" {
		app = "(no application_name)"
	}
	return fmt.Sprintf("The same root application %q blocked the job claims %d times in the %s (%d claims held up, %s waited in all)",
		app, r.Episodes, window, r.ClaimsDelayed, humanize.SecondsTenths(r.WaitedSeconds))
}

// RepeatBlockersSQL is the statement RepeatBlockers runs, for the panels
// and runbook pages that show it.
func RepeatBlockersSQL() string { return sqlText("episode_repeat_blockers") }
