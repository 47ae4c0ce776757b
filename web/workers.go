package web

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// workersList serves GET /workers, live or at a recorded moment (?at=).
func (s *Server) workersList(c echo.Context) error {
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastWorkersList(c, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	window := s.cfg.Diagnostics.Thresholds().WorkerHeartbeat
	ws, err := queues.WorkerList(ctx, s.cfg.Pool, window)
	if err != nil {
		return err
	}
	m := workersModel(ws, window, time.Now())
	return s.render(c, page{Title: "Workers", Nav: "workers", Model: m, Body: views.WorkersBody(m), Travel: &t})
}

// workersModel maps the registry, live or recorded, to the /workers page;
// window is how recently a live worker heartbeated.
func workersModel(ws []queues.Worker, window time.Duration, now time.Time) views.WorkersPage {
	m := views.WorkersPage{GeneratedAt: now.UTC().Format(time.RFC3339), AliveWindow: humanize.Seconds(window.Seconds()),
		Workers: workerPanel(ws, "", now)}
	for _, w := range ws {
		if w.Alive {
			m.Live++
		} else {
			m.Stale++
		}
	}
	return m
}

// workerPanel is the table of engine processes; queue, when set, narrows
// the in-flight column to that queue (the queue detail page).
func workerPanel(ws []queues.Worker, queue string, now time.Time) views.Panel {
	p := views.Panel{
		ID: "workers", Title: "Worker processes", Status: "ok", Cards: true,
		Columns: []views.Column{{Label: "Health"}, {Label: "State"}, {Label: "Worker"}, {Label: "Host"}, {Label: "PID", Num: true}, {Label: "Queues"},
			{Label: "Concurrency", Num: true}, {Label: "In flight", Num: true}, {Label: "Heartbeat"},
			{Label: "Session", Hint: "the worker's long-lived database session: a dead process's is gone, a paused one's stays"},
			{Label: "Started"}, {Label: "Version"}},
		EmptyTitle: "No worker process has registered.",
		EmptyWhy:   " Every engine process registers here and heartbeats every few seconds; none has, so no job is being worked on.",
	}
	if queue != "" {
		p.Title = "Workers serving " + queue
		p.EmptyTitle = "No worker serves queue " + queue + "."
		p.EmptyWhy = " Its ready jobs wait until a process with this queue in its configuration starts."
		p.Columns[7] = views.Column{Label: "In flight here", Num: true, Hint: "jobs of this queue the process is running"}
	}
	for _, w := range ws {
		health, state := workerState(w, now)
		inFlight := w.InFlight
		if queue != "" {
			inFlight = w.InFlightByQueue[queue]
		}
		seen, started := w.LastSeenAt, w.StartedAt
		p.Rows = append(p.Rows, []views.Cell{
			health,
			state,
			{Text: w.ID, Mono: true},
			{Text: w.Host},
			{Text: fmt.Sprint(w.PID), Mono: true},
			{Text: workerQueues(w)},
			{Text: humanize.Int(int64(w.Concurrency))},
			{Text: humanize.Int(int64(inFlight))},
			ageCell(&seen, now),
			sessionCell(w, now),
			ageCell(&started, now),
			{Text: w.Version, Mono: true},
		})
	}
	return p
}

// sessionCell is the liveness evidence beside the heartbeat: whether the
// worker's long-lived session is on the server, and when the worker was
// found dead and its jobs reclaimed early.
func sessionCell(w queues.Worker, now time.Time) views.Cell {
	switch {
	case w.ReclaimedAt != nil && w.StoppedAt != nil:
		a := age(*w.ReclaimedAt, now)
		return views.Cell{Text: fmt.Sprintf("gone: found dead %s, %s running jobs reclaimed", a.Text, humanize.Int(int64(w.ReclaimedJobs))),
			Title: "heartbeat stale and session gone from the server at " + a.UTC + ": its jobs ran again elsewhere without waiting for their leases"}
	case w.StoppedAt != nil:
		return views.Cell{Text: "closed at stop"}
	case w.BackendPID == nil:
		return views.Cell{Text: "none recorded", Title: "this worker does not listen; only its heartbeat and its leases tell whether it is alive"}
	case w.SessionOpen:
		return views.Cell{Text: fmt.Sprintf("open (backend %d)", *w.BackendPID), Mono: true}
	}
	return views.Cell{Sev: "warning", Text: fmt.Sprintf("gone (backend %d)", *w.BackendPID), Mono: true,
		Title: "the session is no longer on the server: once the heartbeat is stale too, another worker reclaims its jobs"}
}

// workerQueues lists a worker's queues with their in-flight counts.
func workerQueues(w queues.Worker) string {
	qs := append([]string(nil), w.Queues...)
	sort.Strings(qs)
	for i, q := range qs {
		if n := w.InFlightByQueue[q]; n > 0 {
			qs[i] = fmt.Sprintf("%s (%d)", q, n)
		}
	}
	return strings.Join(qs, ", ")
}

// workerState is a worker's health badge and its state in words: live,
// stale (not Alive: no heartbeat within the workers.none_alive threshold),
// stopped, or found dead by another worker (which took its jobs back).
func workerState(w queues.Worker, now time.Time) (health, state views.Cell) {
	switch {
	case w.ReclaimedAt != nil && w.StoppedAt != nil:
		a := age(*w.ReclaimedAt, now)
		return views.Cell{Sev: "warning"}, views.Cell{Text: "found dead " + a.Text, Title: a.UTC + ": another worker took its running jobs back"}
	case w.StoppedAt != nil:
		a := age(*w.StoppedAt, now)
		return views.Cell{Sev: "warning"}, views.Cell{Text: "stopped " + a.Text, Title: a.UTC}
	case !w.Alive:
		return views.Cell{Sev: "warning"}, views.Cell{Text: "stale: no heartbeat for " + humanize.Seconds(now.Sub(w.LastSeenAt).Seconds()),
			Title: "its in-flight counts are no longer true; its leases expire and the reaper requeues them"}
	}
	return views.Cell{Sev: "ok"}, views.Cell{Text: "live"}
}
