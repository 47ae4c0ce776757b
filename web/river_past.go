package web

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// The River queue pages at a recorded moment (?at=): the flight recorder
// keeps River's queue rows (river.QueueStat) when River is the queue
// source, and a past page is the live page drawn from the recorded rows
// of the newest sample at or before the moment, at the sample's time.

// pastSourceQueues reads the queues of the newest sample at or before t's
// moment as the live pages read them (river.SourceQueues); err is
// recorder.ErrNoHistory when no sample is near enough.
func (s *Server) pastSourceQueues(ctx context.Context, t travel) ([]queues.SourceQueue, recorder.HistoryEntry, error) {
	if engine := s.cfg.QueueSource.Engine(); engine != queues.SourceRiver {
		return nil, recorder.HistoryEntry{}, fmt.Errorf("the flight recorder keeps no queues of %s: %w", sourceEngineName(engine), recorder.ErrNoHistory)
	}
	e, err := recorder.HistoryAt(ctx, s.cfg.Pool, diagnostics.HistoryRiverQueues, t.q.at, 0)
	if err != nil {
		return nil, e, err
	}
	var rows []river.QueueStat
	if err := decodeInto(e, "River's queues", &rows); err != nil {
		return nil, e, err
	}
	return river.SourceQueues(rows), e, nil
}

// pastSourceMark is the history mark of a past page, and what the page
// says in place of its panels when no sample was recorded or the one found
// could not be read (e and err from pastSourceQueues). failed is err when
// no page can say it (the recorder could not be read): the handler
// returns it.
func (s *Server) pastSourceMark(t travel, e recorder.HistoryEntry, err error) (mark, missing string, failed error) {
	mark = "History · at " + clock(t.q.at)
	switch {
	case errors.Is(err, recorder.ErrNoHistory):
		return mark, "No sample of River's queues was recorded in the 30 seconds before " + clock(t.q.at) + " UTC. " + s.historyStatus().Reason, nil
	case err != nil && e.At.IsZero():
		return "", "", err
	case err != nil:
		return mark, err.Error(), nil
	}
	return mark + " (sample " + clock(e.At) + ")", "", nil
}

// pastSourceQueuesList is /queues?at=... with River as the source.
func (s *Server) pastSourceQueuesList(c echo.Context, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	qs, e, err := s.pastSourceQueues(ctx, t)
	history, missing, err := s.pastSourceMark(t, e, err)
	if err != nil {
		return err
	}
	src := s.cfg.QueueSource
	m := sourceQueuesModel(src.Engine(), src.States(), qs, historyRole)
	m.RefreshURL = ""
	m.History, m.Missing = history, missing
	if m.Missing != "" {
		m.Panels = nil
	}
	return s.render(c, page{Title: "Queues", Nav: "queues", Model: m, Body: views.SourcePageBody(m), Travel: &t})
}

// pastSourceQueueDetail is /queues/{name}?at=... with River as the source:
// the queue's recorded counts and state; the failed-job groups and the
// clients, which history does not keep, say so.
func (s *Server) pastSourceQueueDetail(c echo.Context, name string, t travel) error {
	ctx, cancel := readContext(c)
	defer cancel()
	qs, e, err := s.pastSourceQueues(ctx, t)
	history, missing, err := s.pastSourceMark(t, e, err)
	if err != nil {
		return err
	}
	src := s.cfg.QueueSource
	m := views.SourcePage{Title: "Queue " + name, TestID: "queue-detail", History: history, Missing: missing}
	if m.Missing == "" {
		i := slices.IndexFunc(qs, func(q queues.SourceQueue) bool { return q.Queue == name })
		if i < 0 {
			m.Missing = fmt.Sprintf("Queue %q had no unfinished job and was not in river_queue in the sample of %s UTC.", name, clock(e.At))
		} else {
			mark, missing := m.History, m.Missing
			m = sourceQueueDetailModel(src.Engine(), qs[i], historyRole, e.At)
			m.History, m.Missing, m.RefreshURL = mark, missing, ""
		}
	}
	m.Panels = append(m.Panels,
		notRecordedPanel("deadletters", "Failed jobs by error class", t.q.at),
		notRecordedPanel("workers", "Clients working jobs", t.q.at))
	return s.render(c, page{Title: "Queue " + name, Nav: "queues", Model: m, Body: views.SourcePageBody(m), Travel: &t})
}
