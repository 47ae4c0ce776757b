package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// pastQueues reads what the queue pages show at t's moment: the recorded
// queues of the newest sample at or before it (err is ErrNoHistory when
// there is none), and each queue's recorded trends over t's range.
func (s *Server) pastQueues(ctx context.Context, t travel) ([]diagnostics.QueueStat, recorder.HistoryEntry, map[string]map[string]trend, error) {
	e, err := recorder.HistoryAt(ctx, s.cfg.Pool, diagnostics.HistoryQueues, t.q.at, 0)
	if err != nil {
		return nil, e, nil, err
	}
	var now []diagnostics.QueueStat
	if err := decodeInto(e, "the queues", &now); err != nil {
		return nil, e, nil, err
	}
	entries, err := recorder.HistorySeries(ctx, s.cfg.Pool, diagnostics.HistoryQueues, t.q.from, t.q.to, t.q.at, 0)
	if err != nil {
		return nil, e, nil, err
	}
	trends := map[string]map[string]trend{}
	for _, q := range now {
		field := func(v func(diagnostics.QueueStat) float64) trend {
			return pastTrend(entries, t, func(rows []diagnostics.QueueStat) float64 {
				for _, r := range rows {
					if r.Queue == q.Queue {
						return v(r)
					}
				}
				return 0
			})
		}
		trends[q.Queue] = map[string]trend{
			"ready":                field(func(r diagnostics.QueueStat) float64 { return float64(r.Ready) }),
			"running":              field(func(r diagnostics.QueueStat) float64 { return float64(r.Running) }),
			"dead":                 field(func(r diagnostics.QueueStat) float64 { return float64(r.Dead) }),
			"oldest_ready_seconds": field(func(r diagnostics.QueueStat) float64 { return r.OldestReadySeconds }),
		}
	}
	return now, e, trends, nil
}

// decodeInto reads a recorded entry's data, what the sample kept ("the
// queues"), into v.
func decodeInto(e recorder.HistoryEntry, what string, v any) error {
	if len(e.Data) == 0 || string(e.Data) == "null" {
		return fmt.Errorf("%s were not recorded in the sample of %s UTC (the check failed then, or the console that recorded it did not keep them)", what, clock(e.At))
	}
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("read %s recorded at %s: %w", what, clock(e.At), err)
	}
	return nil
}

// pastWorkers reads the worker registry of the newest sample at or before
// at (err is ErrNoHistory when there is none).
func (s *Server) pastWorkers(ctx context.Context, at time.Time) ([]queues.Worker, recorder.HistoryEntry, error) {
	e, err := recorder.HistoryAt(ctx, s.cfg.Pool, diagnostics.HistoryWorkers, at, 0)
	if err != nil {
		return nil, e, err
	}
	var ws []queues.Worker
	return ws, e, decodeInto(e, "the workers", &ws)
}

// pastWorkersList is /workers?at=...: the registry as the sample read it,
// drawn as the live page draws it at the sample's moment.
func (s *Server) pastWorkersList(c echo.Context, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	window := s.cfg.Diagnostics.Thresholds().WorkerHeartbeat
	ws, e, err := s.pastWorkers(ctx, t.q.at)
	var m views.WorkersPage
	switch {
	case errors.Is(err, recorder.ErrNoHistory):
		m = views.WorkersPage{AliveWindow: humanize.Seconds(window.Seconds()),
			Missing: "No sample was recorded in the 30 seconds before " + clock(t.q.at) + " UTC. " + s.historyStatus().Reason}
	case err != nil && e.At.IsZero():
		return err
	case err != nil:
		m = views.WorkersPage{AliveWindow: humanize.Seconds(window.Seconds()), Missing: err.Error()}
	default:
		m = workersModel(ws, window, e.At)
	}
	m.History = "History · at " + clock(t.q.at)
	if err == nil {
		m.History += " (sample " + clock(e.At) + ")"
	}
	return s.render(c, page{Title: "Workers", Nav: "workers", Model: m, Body: views.WorkersBody(m), Travel: &t})
}

// checkNotRecorded is notRecordedPanel for a check of the catalog.
func checkNotRecorded(name string, at time.Time) views.Panel {
	ck, _ := diagnostics.CheckNamed(name)
	return notRecordedPanel(ck.Name, ck.Title, at)
}

// pastQueuesList is /queues?at=...: the recorded queue table, and a trend
// tile per queue over the picked range.
func (s *Server) pastQueuesList(c echo.Context, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	ck, _ := diagnostics.CheckNamed(diagnostics.CheckQueueHealth)
	res, e, err := recorder.PanelAt(ctx, s.cfg.Pool, ck.Name, t.q.at)
	if err != nil && !errors.Is(err, recorder.ErrNoHistory) {
		return err
	}
	m := views.QueuesPage{Queues: pastPanelView(ck, res, e, err, t.q.at, s.historyStatus().Reason), History: true}
	if err == nil {
		stats, _, trends, err := s.pastQueues(ctx, t)
		if err != nil {
			return err
		}
		th := s.cfg.Diagnostics.Thresholds()
		for _, q := range stats {
			m.Trends = append(m.Trends, queueTrendTile(q, trends[q.Queue], th))
		}
	}
	return s.render(c, page{Title: "Queues", Nav: "queues", Model: m, Body: views.QueuesBody(m), Travel: &t})
}

// pastQueueDetail is /queues/{name}?at=...: the queue's recorded counts
// and settings with their trends; what history does not keep (dead-letter
// groups, workers, tenants) says so.
func (s *Server) pastQueueDetail(c echo.Context, name string, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	stats, e, trends, err := s.pastQueues(ctx, t)
	if err != nil && !errors.Is(err, recorder.ErrNoHistory) {
		return err
	}
	var m views.QueueDetail
	switch {
	case err != nil:
		m = views.QueueDetail{Name: name, Missing: "No sample was recorded in the 30 seconds before " + clock(t.q.at) + " UTC. " + s.historyStatus().Reason}
	default:
		var stat *diagnostics.QueueStat
		for i := range stats {
			if stats[i].Queue == name {
				stat = &stats[i]
			}
		}
		if stat == nil {
			m = views.QueueDetail{Name: name, Missing: fmt.Sprintf("Queue %q had no jobs and no settings in the sample of %s UTC.", name, clock(e.At))}
			break
		}
		m = queueDetailModel(*stat, historyRole, e.At)
		m.Trends = queueDetailTrends(*stat, trends[name], s.cfg.Diagnostics.Thresholds())
	}
	m.History = "History · at " + clock(t.q.at)
	if err == nil {
		m.History += " (sample " + clock(e.At) + ")"
	}
	m.RefreshURL = ""
	m.Tenants = checkNotRecorded(diagnostics.CheckTenantBacklog, t.q.at)
	m.DeadLetters = checkNotRecorded(diagnostics.CheckDeadLetters, t.q.at)
	m.Workers = checkNotRecorded(diagnostics.CheckWorkers, t.q.at)
	if ws, we, werr := s.pastWorkers(ctx, t.q.at); werr == nil {
		m.Workers = workerPanel(workersOf(ws, name), name, we.At)
	}
	return s.render(c, page{Title: "Queue " + name, Nav: "queues", Model: m, Body: views.QueueDetailBody(m), Travel: &t})
}

// pastOutbox is /outbox?at=...: the recorded backlog and relay state with
// their trends; the event lists and lookups, which history does not keep,
// say so or are left out.
func (s *Server) pastOutbox(c echo.Context, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	var m views.OutboxPage
	e, err := recorder.HistoryAt(ctx, s.cfg.Pool, diagnostics.HistoryOutbox, t.q.at, 0)
	switch {
	case errors.Is(err, recorder.ErrNoHistory):
		m.Missing = "No sample was recorded in the 30 seconds before " + clock(t.q.at) + " UTC. " + s.historyStatus().Reason
	case err != nil:
		return err
	default:
		var o diagnostics.OutboxStat
		if err := decodeInto(e, "the outbox", &o); err != nil {
			m.Missing = err.Error()
			break
		}
		entries, err := recorder.HistorySeries(ctx, s.cfg.Pool, diagnostics.HistoryOutbox, t.q.from, t.q.to, t.q.at, 0)
		if err != nil {
			return err
		}
		trends := map[string]trend{
			"outbox.pending": pastTrend(entries, t, func(o *diagnostics.OutboxStat) float64 { return float64(o.Pending) }),
			"outbox.dead":    pastTrend(entries, t, func(o *diagnostics.OutboxStat) float64 { return float64(o.Dead) }),
		}
		m = outboxModel(o, queues.RelaySettings{Paused: o.RelayPaused}, trends, s.cfg.Diagnostics.Thresholds(), historyRole, e.At)
		// Only what was recorded: the relay's limits are not, nor the
		// published estimate in samples older than it (they carry no
		// count cap either).
		m.Relay = m.Relay[:1]
		if o.CountCap == 0 {
			m.States = m.States[:3]
		}
		m.History = "History · at " + clock(t.q.at) + " (sample " + clock(e.At) + ")"
	}
	if m.History == "" {
		m.History = "History · at " + clock(t.q.at)
	}
	m.Stuck = notRecordedPanel("outbox-stuck", "Oldest undelivered events", t.q.at)
	m.Dead = notRecordedPanel("outbox-dead", "Dead events", t.q.at)
	m.Recent = notRecordedPanel("outbox-recent", "Recent events", t.q.at)
	return s.render(c, page{Title: "Outbox", Nav: "outbox", Model: m, Body: views.OutboxBody(m), Travel: &t})
}
