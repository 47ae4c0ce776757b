package web

import (
	"fmt"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// riverDiscardsLink links a River discard burst to its queue's dead
// letters: River's discarded jobs grouped by error class, where each class
// is retried (river.retry) after a look at its jobs. Nil without a queue.
func riverDiscardsLink(f findings.Finding) *views.FindingJob {
	queue, _ := f.Subject["queue"].(string)
	if queue == "" {
		return nil
	}
	return &views.FindingJob{Label: fmt.Sprintf("Discarded jobs of queue %s, by error class", queue), Href: deadLettersHref(queue)}
}

// riverQueueTiles are the overview's queue tiles when the database's jobs
// are River's: its available, running and discarded jobs summed over
// River's queues, each in the state of the River findings about it
// (worst). Unknown when the round could not read River's queues.
func riverQueueTiles(e *diagnostics.RiverEvidence, worst func(codes ...string) string, th diagnostics.Thresholds) []views.Tile {
	var available, busy, discarded int64
	var oldest float64
	for _, q := range e.Queues {
		available += q.Available
		busy += q.Running
		discarded += q.Discarded
		oldest = max(oldest, q.OldestAvailableSeconds)
	}
	running := views.Tile{ID: "river-running", Label: "Running jobs", Value: humanize.Int(busy), Number: num(busy),
		State: worst(findings.CodeRiverStuckRunning), Href: jobsHref("state", river.StateRunning),
		Threshold: "alert at " + humanize.Seconds(th.RiverRescueAfter.Seconds())}
	if e.Stuck != nil {
		running.Meta = humanize.Int(int64(len(e.Stuck))) + " running past their bound"
	}
	tiles := []views.Tile{
		{ID: "river-available", Label: "Available jobs", Value: humanize.Int(available), Number: num(available), Meta: oldestText(available, oldest),
			State: worst(findings.CodeRiverBacklog, findings.CodeRiverQueuePaused, findings.CodeRiverNoLeader), Href: "/queues",
			Threshold: "alert at " + humanize.Seconds(th.QueueBacklogAge.Seconds())},
		running,
		{ID: "river-discarded", Label: "Discarded jobs", Value: humanize.Int(discarded), Number: num(discarded),
			State: worst(findings.CodeRiverDiscardBurst), Href: "/deadletters",
			Threshold: fmt.Sprintf("alert at %d in %s", th.DeadLetters, humanize.Seconds(th.DeadLetterWindow.Seconds()))},
	}
	if e.Queues == nil {
		for i := range tiles {
			tiles[i].State, tiles[i].Value, tiles[i].Number, tiles[i].Meta = "unknown", "?", nil, ""
		}
	}
	return tiles
}
