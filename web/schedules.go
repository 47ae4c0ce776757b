package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// scheduleNextRuns is how many upcoming runs each schedule shows.
const scheduleNextRuns = 3

// schedulesList serves GET /schedules.
func (s *Server) schedulesList(c echo.Context) error {
	ctx, cancel := readContext(c)
	defer cancel()
	list, err := queues.ScheduleList(ctx, s.cfg.Pool)
	if err != nil {
		return err
	}
	// The last result of each schedule: one primary-key read per schedule
	// (a handful); a job archived since shows as such.
	last := map[int64]*queues.Job{}
	for _, sc := range list {
		if sc.LastJobID == nil {
			continue
		}
		j, err := queues.JobGet(ctx, s.cfg.Pool, *sc.LastJobID)
		if err != nil && !errors.Is(err, queues.ErrNotFound) {
			return err
		}
		last[*sc.LastJobID] = j
	}
	runs, err := queues.MaintenanceRunList(ctx, s.cfg.Pool, retentionRunsScanned)
	if err != nil {
		return err
	}
	now := time.Now()
	m := schedulesModel(list, last, readRole(c), now)
	m.Retention = retentionModel(s.cfg.JobRetention, runs, now)
	return s.render(c, page{Title: "Schedules", Nav: "schedules", Model: m, Body: views.SchedulesBody(m)})
}

// schedulesModel maps the schedules and their last jobs (by id; nil when
// archived); next runs are computed from each spec (queues.NextRuns is
// pure).
func schedulesModel(list []queues.Schedule, last map[int64]*queues.Job, role string, now time.Time) views.SchedulesPage {
	p := views.Panel{
		ID: "schedules", Title: "Schedules", Status: "ok",
		Columns: []views.Column{{Label: "Name"}, {Label: "When"}, {Label: "Kind"}, {Label: "Queue"}, {Label: "Enabled"},
			{Label: "Next runs (UTC)"}, {Label: "Last run"}, {Label: "Last result"}, {Label: "Actions"}},
		EmptyTitle: "No schedules.",
		EmptyWhy:   " Cron schedules that enqueue maintenance jobs (archive jobs, prune the outbox and inbox) would be listed here; an operator creates them with New schedule.",
	}
	for _, sc := range list {
		enabled := views.Cell{Text: "yes"}
		names := []string{"schedule.run_now", "schedule.disable"}
		if !sc.Enabled {
			enabled = views.Cell{Text: "◆ no", Title: "disabled: the scheduler skips it"}
			names = []string{"schedule.run_now", "schedule.enable"}
		}
		lastJob := lastJobCell(sc.LastJobID, last)
		p.Rows = append(p.Rows, []views.Cell{
			{Text: sc.Name, Mono: true},
			{Text: cronWords(sc.Spec), Title: sc.Spec},
			{Text: sc.Kind, Mono: true},
			{Text: sc.Queue, Href: queueHref(sc.Queue), Mono: true},
			enabled,
			nextRunsCell(sc, now),
			ageCell(sc.LastRunAt, now),
			lastJob,
			{Actions: actionLinks(names, role, map[string]string{"name": sc.Name})},
		})
	}
	m := views.SchedulesPage{GeneratedAt: now.UTC().Format(time.RFC3339), Schedules: p}
	if l, ok := actionLink("schedule.create", role, nil); ok {
		m.NewHref = l.Href
	}
	return m
}

// nextRunsCell lists a schedule's next runs, or why there are none.
func nextRunsCell(sc queues.Schedule, now time.Time) views.Cell {
	if !sc.Enabled {
		return views.Cell{Text: "none (disabled)"}
	}
	runs, err := queues.NextRuns(sc.Spec, now, scheduleNextRuns)
	if err != nil {
		return views.Cell{Text: "invalid spec", Title: err.Error()}
	}
	if len(runs) == 0 {
		return views.Cell{Text: "never again"}
	}
	out := make([]string, len(runs))
	for i, t := range runs {
		out[i] = t.UTC().Format("2006-01-02 15:04:05")
	}
	return views.Cell{Text: strings.Join(out, ", "), Mono: true}
}

var cronWeekdays = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// cronWords says a cron spec in words where that is easy ("@every 1m" ->
// "every minute", "0 3 * * *" -> "daily at 03:00 UTC"), and returns the
// spec itself otherwise.
func cronWords(spec string) string {
	spec = strings.TrimSpace(spec)
	switch spec {
	case "@hourly":
		return "hourly, on the hour"
	case "@daily", "@midnight":
		return "daily at 00:00 UTC"
	case "@weekly":
		return "weekly, Sunday at 00:00 UTC"
	case "@monthly":
		return "monthly, on day 1 at 00:00 UTC"
	case "@yearly", "@annually":
		return "yearly, 1 January at 00:00 UTC"
	}
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil || d <= 0 {
			return spec
		}
		return "every " + durationWords(d)
	}
	f := strings.Fields(spec)
	if len(f) != 5 {
		return spec
	}
	min, hour, dom, mon, dow := f[0], f[1], f[2], f[3], f[4]
	num := func(s string, lo, hi int) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= lo && n <= hi
	}
	step := func(s string) (int, bool) {
		r, ok := strings.CutPrefix(s, "*/")
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(r)
		return n, err == nil && n > 0
	}
	if mon != "*" {
		return spec
	}
	m, mOK := num(min, 0, 59)
	h, hOK := num(hour, 0, 23)
	at := fmt.Sprintf("%02d:%02d UTC", h, m)
	switch {
	case min == "*" && hour == "*" && dom == "*" && dow == "*":
		return "every minute"
	case hour == "*" && dom == "*" && dow == "*":
		if n, ok := step(min); ok {
			return "every " + cronPlural(n, "minute")
		}
		if mOK {
			return fmt.Sprintf("hourly at minute %d", m)
		}
	case mOK && dom == "*" && dow == "*":
		if n, ok := step(hour); ok {
			return fmt.Sprintf("every %s at minute %d", cronPlural(n, "hour"), m)
		}
		if hOK {
			return "daily at " + at
		}
	case mOK && hOK && dom == "*":
		if d, ok := num(dow, 0, 7); ok {
			return "every " + cronWeekdays[d] + " at " + at
		}
	case mOK && hOK && dow == "*":
		if d, ok := num(dom, 1, 31); ok {
			return fmt.Sprintf("monthly on day %d at %s", d, at)
		}
	}
	return spec
}

// durationWords: 1m -> "minute", 90s -> "1m30s", 2h -> "2 hours".
func durationWords(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return cronPlural(int(d/time.Hour), "hour")
	case d%time.Minute == 0:
		return cronPlural(int(d/time.Minute), "minute")
	case d%time.Second == 0 && d < time.Minute:
		return cronPlural(int(d/time.Second), "second")
	}
	return d.String()
}

// cronPlural: (1, "minute") -> "minute", (5, "minute") -> "5 minutes".
func cronPlural(n int, unit string) string {
	if n == 1 {
		return unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// lastJobCell links a schedule's last job and says how it ended.
func lastJobCell(id *int64, last map[int64]*queues.Job) views.Cell {
	if id == nil {
		return views.Cell{Text: "no run yet"}
	}
	c := views.Cell{Text: "job " + itoa64(*id) + ": archived", Href: "/jobs/" + itoa64(*id)}
	j, ok := last[*id]
	if !ok {
		c.Text = "job " + itoa64(*id)
		return c
	}
	if j == nil {
		return c
	}
	c.Text = "job " + itoa64(*id) + ": " + j.Status
	if j.Status == queues.StatusDead || (j.Status == queues.StatusReady && j.Attempts > 0) {
		c.Text += " (" + deref(j.ErrorClass, "failed") + ")"
		c.Title = truncate(deref(j.LastError, ""), 500)
	}
	return c
}

// retentionRunsScanned is how many of the newest maintenance runs the page
// looks through for the retention's last one.
const retentionRunsScanned = 50

// retentionModel says how long done jobs are kept (this console's
// --job-retention) and what the newest recorded prune_jobs run did, which
// may have been another process's: the leader's setting is the one that
// applies. No I/O.
func retentionModel(keep time.Duration, runs []queues.MaintenanceRun, now time.Time) views.Retention {
	r := views.Retention{On: keep > 0}
	if r.On {
		r.Sentence = "Done jobs are kept " + humanize.Seconds(keep.Seconds()) + "; older ones are deleted every hour, in batches that pause " +
			"while the server writes WAL fast or a standby lags. Dead jobs are kept (they are the dead letters). Set with --job-retention."
	} else {
		r.Sentence = "This console keeps every done job (--job-retention 0): the jobs table grows with every job that finishes " +
			"(about 240 bytes each) until an archive_jobs schedule or a retention removes them."
	}
	for _, run := range runs {
		if run.Kind != queues.KindPruneJobs {
			continue
		}
		var p struct {
			Retention string `json:"retention"`
		}
		kept := "—"
		if json.Unmarshal(run.Params, &p) == nil && p.Retention != "" {
			if d, err := time.ParseDuration(p.Retention); err == nil {
				kept = humanize.Seconds(d.Seconds())
			}
		}
		a := age(run.StartedAt, now)
		r.LastRun = []views.Fact{
			{Label: "Started", Value: a.Text, TS: a.UTC},
			{Label: "State", Value: run.State},
			{Label: "Done jobs deleted", Value: strconv.FormatInt(run.RowsMoved, 10)},
			{Label: "Batches", Value: strconv.Itoa(run.Batches)},
			{Label: "Kept", Value: kept},
			{Label: "WAL meanwhile", Value: humanize.Bytes(float64(run.WALBytes))},
		}
		if run.LastError != nil {
			r.LastRun = append(r.LastRun, views.Fact{Label: "Error", Value: *run.LastError})
		}
		break
	}
	return r
}
