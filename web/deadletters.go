package web

import (
	"fmt"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// deadLetters serves GET /deadletters (optionally ?queue=): dead jobs
// grouped by queue and error class.
func (s *Server) deadLetters(c echo.Context) error {
	queue, err := filterText(paramsOf(c), "queue")
	if err != nil {
		return err
	}
	ctx, cancel := readContext(c)
	defer cancel()
	groups, err := queues.DeadLetterGroups(ctx, s.cfg.Pool, queue)
	if err != nil {
		return err
	}
	total, err := queues.DeadLetterTotals(ctx, s.cfg.Pool, queue)
	if err != nil {
		return err
	}
	m := deadLettersModel(groups, total, queue, readRole(c), time.Now())
	return s.render(c, page{Title: "Dead letters", Nav: "deadletters", Model: m, Body: views.DeadLettersBody(m)})
}

// deadLettersModel maps the groups and the exact total to the /deadletters
// page.
func deadLettersModel(groups []queues.DeadLetterGroup, total queues.DeadLetterTotal, queue, role string, now time.Time) views.DeadLettersPage {
	p := deadLetterPanel(groups, role, true, now)
	if queue != "" {
		p.Note = "Only queue " + queue + ". "
		p.EmptyTitle = "No dead jobs in queue " + queue + "."
	}
	if total.Groups > int64(len(groups)) {
		p.Note += fmt.Sprintf("The %d largest of %s groups. ", len(groups), humanize.Int(total.Groups))
	}
	p.Note += "Counts and the total are exact: the engine counts dead jobs per group as they die and are requeued."
	m := views.DeadLettersPage{GeneratedAt: now.UTC().Format(time.RFC3339), Total: humanize.Int(total.Dead), Groups: p, RefreshURL: "/deadletters"}
	if queue != "" {
		m.RefreshURL = deadLettersHref(queue)
	}
	return m
}

// deadLetterPanel is the table of dead-letter groups, each with a link to
// its jobs and the "requeue this class" action. withQueue shows the queue
// column (the queue detail page leaves it out).
func deadLetterPanel(groups []queues.DeadLetterGroup, role string, withQueue bool, now time.Time) views.Panel {
	p := views.Panel{
		ID: "deadletters", Title: "Dead letters by error class", Status: "ok",
		EmptyTitle: "No dead jobs.",
		EmptyWhy:   " Jobs that failed permanently, were cancelled or ran out of attempts would be grouped here by error class.",
	}
	if withQueue {
		p.Columns = append(p.Columns, views.Column{Label: "Queue"})
	}
	p.Columns = append(p.Columns, views.Column{Label: "Error class"}, views.Column{Label: "Dead", Num: true},
		views.Column{Label: "First seen"}, views.Column{Label: "Last seen"}, views.Column{Label: "Sample error"}, views.Column{Label: "Actions"})
	for _, g := range groups {
		class := views.Cell{Text: g.ErrorClass, Mono: true, Href: jobsHref("queue", g.Queue, "status", queues.StatusDead, "error_class", g.ErrorClass)}
		if g.ErrorClass == "" {
			class = views.Cell{Text: "(no class)", Href: jobsHref("queue", g.Queue, "status", queues.StatusDead), Title: "cancelled, or died before errors were classified"}
		}
		sample := views.Cell{Text: truncate(g.SampleError, 160), Title: truncate(g.SampleError, 1000), Mono: true}
		if g.SampleJobID > 0 {
			sample.Href = "/jobs/" + itoa64(g.SampleJobID)
		}
		first, last := g.FirstSeen, g.LastSeen
		row := []views.Cell{}
		if withQueue {
			row = append(row, views.Cell{Text: g.Queue, Href: queueHref(g.Queue), Mono: true})
		}
		row = append(row, class, views.Cell{Text: humanize.Int(g.Count)}, ageCell(&first, now), ageCell(&last, now), sample, deadLetterActions(g, role))
		p.Rows = append(p.Rows, row)
	}
	return p
}

// deadLettersHref is the dead-letter page of a queue.
func deadLettersHref(queue string) string {
	return "/deadletters?queue=" + url.QueryEscape(queue)
}

// deadLetterActions is the "requeue this class" button of a group. A group
// without a class gets none: the action reads an empty class as "every
// class", which would requeue the whole queue.
func deadLetterActions(g queues.DeadLetterGroup, role string) views.Cell {
	if g.ErrorClass == "" {
		return views.Cell{Text: "no class: retry each from its job page", Title: "the requeue action reads an empty class as every class, so it is not offered here"}
	}
	return views.Cell{Actions: actionLinks([]string{"deadletters.requeue"}, role, map[string]string{"queue": g.Queue, "error_class": g.ErrorClass})}
}
