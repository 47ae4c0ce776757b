package diagnostics

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// StandbyConflict is one database of a standby and the queries replay
// canceled there, by cause, since the standby's statistics were reset.
type StandbyConflict struct {
	// Standby names the standby (host:port/database of its URL).
	Standby    string `db:"-" json:"standby"`
	Database   string `db:"database" json:"database"`
	Tablespace int64  `db:"tablespace" json:"tablespace"`
	Lock       int64  `db:"lock" json:"lock"`
	Snapshot   int64  `db:"snapshot" json:"snapshot"`
	Bufferpin  int64  `db:"bufferpin" json:"bufferpin"`
	Deadlock   int64  `db:"deadlock" json:"deadlock"`
	// Total counts every cause the server knows, logical-slot conflicts
	// (16+) included.
	Total int64 `db:"total" json:"total"`
}

// add sums o into c, cause by cause.
func (c StandbyConflict) add(o StandbyConflict) StandbyConflict {
	c.Tablespace += o.Tablespace
	c.Lock += o.Lock
	c.Snapshot += o.Snapshot
	c.Bufferpin += o.Bufferpin
	c.Deadlock += o.Deadlock
	c.Total += o.Total
	return c
}

// sub is c less o, cause by cause.
func (c StandbyConflict) sub(o StandbyConflict) StandbyConflict {
	o.Tablespace, o.Lock, o.Snapshot, o.Bufferpin, o.Deadlock, o.Total = -o.Tablespace, -o.Lock, -o.Snapshot, -o.Bufferpin, -o.Deadlock, -o.Total
	return c.add(o)
}

// StandbyConflicts reads, on a standby, the canceled queries of each
// database (standby_conflicts.sql).
func StandbyConflicts(ctx context.Context, db DBTX) ([]StandbyConflict, error) {
	return collect[StandbyConflict](ctx, db, CheckStandbyConflicts, 0)
}

// ConflictWindow is what replay canceled on one standby over a window of
// rounds.
type ConflictWindow struct {
	Standby string
	// From and To are when the window's first and last reads were taken.
	From, To time.Time
	// Canceled is the increase of each count over the window, summed over
	// the standby's databases (Database is empty).
	Canceled StandbyConflict
	// Rows are the standby's cumulative counts by database, as of To.
	Rows []StandbyConflict
}

// standbyConflicts runs standby_conflicts.sql on one standby.
func (d *Diagnostics) standbyConflicts(ctx context.Context, s standbyPool) Result[StandbyConflict] {
	r := Result[StandbyConflict]{Name: CheckStandbyConflicts + " " + s.name, SQL: d.SQL(CheckStandbyConflicts)}
	p := d.exec(ctx, s.pool, pgx.ReadCommitted, r.Name, func(ctx context.Context, db DBTX) error {
		var err error
		r.Rows, err = StandbyConflicts(ctx, db)
		return err
	})
	for i := range r.Rows {
		r.Rows[i].Standby = s.name
	}
	r.Err, r.TimedOut, r.LockedBy, r.Took = p.Err, p.TimedOut, p.LockedBy, p.Took
	return r
}

// standbyConflictsPanel is standby_conflicts as one panel: the rows of
// every configured standby, and the first failure.
func (d *Diagnostics) standbyConflictsPanel(ctx context.Context) PanelResult {
	return d.standbysPanel(CheckStandbyConflicts, func(sp standbyPool) PanelResult { return untyped(d.standbyConflicts(ctx, sp)) })
}

// conflictWindow records a standby's counts read at now and returns what
// replay canceled since the start of its window, or nil on the first read
// (and after the standby's statistics went back: a reset or a restart).
func (d *Diagnostics) conflictWindow(standby string, now time.Time, rows []StandbyConflict, span time.Duration) *ConflictWindow {
	var sum StandbyConflict
	for _, r := range rows {
		sum = sum.add(r)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conflicts == nil {
		d.conflicts = map[string]*counterWindow[StandbyConflict]{}
	}
	w := d.conflicts[standby]
	if w == nil {
		w = &counterWindow[StandbyConflict]{}
		d.conflicts[standby] = w
	}
	from, ok := w.advance(now, sum, span, func(a, b StandbyConflict) bool { return b.Total < a.Total })
	if !ok {
		return nil
	}
	return &ConflictWindow{Standby: standby, From: from.at, To: now, Canceled: sum.sub(from.v), Rows: rows}
}
