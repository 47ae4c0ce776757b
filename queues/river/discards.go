package river

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/pgconsole/console/internal/sqlset"
)

// DiscardGroup is a run of River jobs discarded since a moment that share
// a queue, a kind and the class of their last error (ErrorClass): what a
// burst of failures looks like to an operator deciding what to retry.
type DiscardGroup struct {
	Queue      string `json:"queue"`
	Kind       string `json:"kind"`
	ErrorClass string `json:"error_class"`
	Count      int64  `json:"count"`
	// SampleError is the newest job's last error, SampleJobID that job.
	SampleError string    `json:"sample_error"`
	SampleJobID int64     `json:"sample_job_id"`
	FirstSeen   time.Time `json:"first_seen"`
	LastSeen    time.Time `json:"last_seen"`
}

// discardRow is a row of discarded_since.sql.
type discardRow struct {
	ID           int64     `db:"id"`
	Queue        string    `db:"queue"`
	Kind         string    `db:"kind"`
	FinalizedAt  time.Time `db:"finalized_at"`
	LastError    string    `db:"last_error"`
	LastPanicked bool      `db:"last_panicked"`
}

// DiscardedSince groups the River jobs discarded since since (at most
// limit of them, the newest first) by queue, kind and error class, the
// largest group first. A job discarded without an error has class "".
func DiscardedSince(ctx context.Context, db sqlset.DBTX, since time.Time, limit int) ([]DiscardGroup, error) {
	rows, err := collectRows[discardRow](ctx, db, "discarded_since", "read recently discarded River jobs", since, limit)
	if err != nil {
		return nil, err
	}
	type key struct{ queue, kind, class string }
	index := map[key]int{}
	out := []DiscardGroup{}
	for _, r := range rows {
		k := key{r.Queue, r.Kind, ""}
		if r.LastError != "" || r.LastPanicked {
			k.class = ErrorClass(r.LastError, r.LastPanicked)
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, DiscardGroup{Queue: k.queue, Kind: k.kind, ErrorClass: k.class,
				SampleError: r.LastError, SampleJobID: r.ID, LastSeen: r.FinalizedAt})
		}
		out[i].Count++
		out[i].FirstSeen = r.FinalizedAt
	}
	slices.SortStableFunc(out, func(a, b DiscardGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ErrorClass, b.ErrorClass))
	})
	return out, nil
}
