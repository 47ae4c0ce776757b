package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// readTimeout bounds every read page's database work, so a page answers
// (with a 504 or a panel error) while the database is in trouble.
const readTimeout = 5 * time.Second

// readContext is the request's context with the read pages' timeout.
func readContext(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), readTimeout)
}

// readRole is the signed-in operator's role, for the action buttons.
func readRole(c echo.Context) string {
	p, _ := principalFrom(c)
	return p.Role
}

// panelError turns a failed panel query into the panel's own status, so the
// rest of the page still renders.
func panelError(p views.Panel, err error) views.Panel {
	p.Rows = nil
	p.Status = "error"
	if errorsIsTimeout(err) {
		p.Status = "timed_out"
		p.Message = "The database did not answer within " + humanize.Seconds(readTimeout.Seconds()) + "; reload to try again."
		return p
	}
	p.Message = "Could not read this panel: " + err.Error()
	return p
}

func errorsIsTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// queuesList serves GET /queues.
func (s *Server) queuesList(c echo.Context) error {
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastQueuesList(c, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	stats, err := queues.QueueHealth(ctx, s.cfg.Pool, queues.QueueHealthParams{DeadWindow: s.cfg.Diagnostics.Thresholds().DeadLetterWindow})
	if err != nil {
		return err
	}
	now := time.Now()
	m := queuesModel(stats, readRole(c), now)
	th := s.cfg.Diagnostics.Thresholds()
	for _, q := range stats {
		m.Trends = append(m.Trends, queueTrendTile(q, queueSeries(s.cfg.Sampler, q.Queue, now), th))
	}
	return s.render(c, page{Title: "Queues", Nav: "queues", Model: m, Body: views.QueuesBody(m), Travel: &t})
}

// queueActions are the row actions of a queue: pause or resume (whichever
// applies) and throttle.
func queueActions(q queues.QueueStat, role string) []views.ActionLink {
	names := []string{"queue.pause", "queue.throttle", "tenant.throttle"}
	if q.Paused {
		names = []string{"queue.resume", "queue.throttle", "tenant.throttle"}
	}
	return actionLinks(names, role, map[string]string{"queue": q.Queue})
}

// queueLimits says a queue's settings in a few words.
func queueLimits(paused bool, maxWorkers *int, rate *float64) string {
	var parts []string
	if paused {
		parts = append(parts, "paused")
	}
	if maxWorkers != nil {
		parts = append(parts, fmt.Sprintf("max %d workers", *maxWorkers))
	}
	if rate != nil {
		parts = append(parts, "max "+humanRate(*rate))
	}
	if len(parts) == 0 {
		return "running, no limits"
	}
	return strings.Join(parts, " · ")
}

// queueHref is the detail page of a queue.
func queueHref(name string) string { return "/queues/" + url.PathEscape(name) }

// jobsHref is the jobs list with a filter.
func jobsHref(kv ...string) string {
	return listHref("/jobs", queryOf(kv...))
}

// oldestReadyCell is the age of the oldest due ready job, or a dash.
func oldestReadyCell(due int64, seconds float64) views.Cell {
	if due == 0 {
		return views.Cell{Text: "–", Title: "no due ready job"}
	}
	return views.Cell{Text: humanize.Seconds(seconds)}
}

// exactCount is the hint of the counts kept exact as jobs move.
const exactCount = "exact: counted as jobs move"

// dueCell is a queue's due count: exact, or an upper bound ("≤ n") when
// its jobs scheduled for later were counted only up to the cap.
func dueCell(q queues.QueueStat) views.Cell {
	if q.ReadyExact() {
		return views.Cell{Text: humanize.Int(q.Ready)}
	}
	return views.Cell{Text: "≤ " + humanize.Int(q.Ready),
		Title: fmt.Sprintf("estimated: over %s jobs are scheduled for later, counted no further", humanize.Int(q.Scheduled))}
}

// queuesModel maps the queue stats to the /queues table.
func queuesModel(stats []queues.QueueStat, role string, now time.Time) views.QueuesPage {
	p := views.Panel{
		ID: "queues", Title: "Queues", Status: "ok",
		Columns: []views.Column{{Label: "Queue"}, {Label: "Ready", Num: true, Hint: exactCount},
			{Label: "Due", Num: true, Hint: "ready jobs whose available_at has come: exact, or ≤ when many are scheduled for later"},
			{Label: "Running", Num: true, Hint: exactCount}, {Label: "Expired leases", Num: true, Hint: "running past lease_until: a dead or stalled worker the reaper has not handled"},
			{Label: "Dead", Num: true, Hint: exactCount}, {Label: "Done (approx)", Num: true, Hint: "estimated from planner statistics"},
			{Label: "Oldest ready", Num: true}, {Label: "Settings"}, {Label: "Actions"}},
		EmptyTitle: "No queues yet.",
		EmptyWhy:   " A queue appears here once a job is enqueued into it or an operator changes its settings.",
	}
	for _, q := range stats {
		settings := views.Cell{Text: queueLimits(q.Paused, q.MaxWorkers, q.RatePerSecond)}
		if q.Paused {
			settings.Text = "◆ " + settings.Text
			settings.Title = "paused: no job of this queue is claimed"
		}
		expired := views.Cell{Text: humanize.Int(q.ExpiredLeases)}
		if q.ExpiredLeases > 0 {
			expired.Href = jobsHref("queue", q.Queue, "status", queues.StatusRunning)
		}
		dead := views.Cell{Text: humanize.Int(q.Dead)}
		if q.Dead > 0 {
			dead.Href = "/deadletters?queue=" + url.QueryEscape(q.Queue)
		}
		p.Rows = append(p.Rows, []views.Cell{
			{Text: q.Queue, Href: queueHref(q.Queue), Mono: true},
			{Text: humanize.Int(q.ReadyTotal()), Href: jobsHref("queue", q.Queue, "status", queues.StatusReady)},
			dueCell(q),
			{Text: humanize.Int(q.Running), Href: jobsHref("queue", q.Queue, "status", queues.StatusRunning)},
			expired,
			dead,
			{Text: "~" + humanize.Int(q.DoneApprox)},
			oldestReadyCell(q.Ready, q.OldestReadySeconds),
			settings,
			{Actions: queueActions(q, role)},
		})
	}
	return views.QueuesPage{GeneratedAt: now.UTC().Format(time.RFC3339), Queues: p}
}

// queueNameParam is the :name of a queue page: UTF-8 text without NUL of
// at most maxFilterText bytes, else a 400 that says so.
func queueNameParam(c echo.Context) (string, error) {
	name, err := url.PathUnescape(c.Param("name"))
	if err != nil || name == "" || len(name) > maxFilterText || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
		return "", errBadRequest("%q is not a queue name: a queue name is UTF-8 text of at most %d bytes", truncate(c.Param("name"), 40), maxFilterText)
	}
	return name, nil
}

// queueDetail serves GET /queues/:name. The counts come from the same query
// as the list; dead letters and workers are panels that fail on their own.
func (s *Server) queueDetail(c echo.Context) error {
	name, err := queueNameParam(c)
	if err != nil {
		return err
	}
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastQueueDetail(c, name, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	stats, err := queues.QueueHealth(ctx, s.cfg.Pool, queues.QueueHealthParams{DeadWindow: s.cfg.Diagnostics.Thresholds().DeadLetterWindow})
	if err != nil {
		return err
	}
	var stat *queues.QueueStat
	for i := range stats {
		if stats[i].Queue == name {
			stat = &stats[i]
		}
	}
	if stat == nil {
		// A queue whose jobs are all done is in none of the counts.
		done, err := queues.QueueDoneRecent(ctx, s.cfg.Pool, name, 0)
		if err != nil {
			return err
		}
		if done == 0 {
			return fmt.Errorf("no queue named %q: it has no ready, running, dead or recently done job and no settings (check the name on /queues): %w", name, errNotFound)
		}
		stat = &queues.QueueStat{Queue: name, DoneApprox: done}
	}
	groups, gerr := queues.DeadLetterGroups(ctx, s.cfg.Pool, name)
	workers, werr := queues.WorkerList(ctx, s.cfg.Pool, s.cfg.Diagnostics.Thresholds().WorkerHeartbeat)
	now := time.Now()
	m := queueDetailModel(*stat, readRole(c), now)
	m.Trends = queueDetailTrends(*stat, queueSeries(s.cfg.Sampler, name, now), s.cfg.Diagnostics.Thresholds())
	m.DeadLetters = deadLetterPanel(groups, readRole(c), false, time.Now())
	if gerr != nil {
		m.DeadLetters = panelError(m.DeadLetters, gerr)
	}
	m.Workers = workerPanel(workersOf(workers, name), name, time.Now())
	if werr != nil {
		m.Workers = panelError(m.Workers, werr)
	}
	tenants, terr := queues.TenantReadyList(ctx, s.cfg.Pool, name, queueTenantsTop)
	limits, lerr := queues.TenantLimitsList(ctx, s.cfg.Pool, name)
	m.Tenants = tenantPanel(tenants, limits, name, readRole(c))
	if err := errors.Join(terr, lerr); err != nil {
		m.Tenants = panelError(m.Tenants, err)
	}
	return s.render(c, page{Title: "Queue " + name, Nav: "queues", Model: m, Body: views.QueueDetailBody(m), Travel: &t})
}

// queueDetailModel maps one queue's counts and settings, live or recorded
// alike.
func queueDetailModel(q queues.QueueStat, role string, now time.Time) views.QueueDetail {
	oldest := "–"
	if q.Ready > 0 {
		oldest = humanize.Seconds(q.OldestReadySeconds)
	}
	m := views.QueueDetail{
		Name:        q.Queue,
		GeneratedAt: now.UTC().Format(time.RFC3339),
		Counts: []views.Fact{
			{Label: "Ready", Value: humanize.Int(q.ReadyTotal()), Href: jobsHref("queue", q.Queue, "status", queues.StatusReady), Title: exactCount},
			{Label: "Due now", Value: dueCell(q).Text, Title: dueCell(q).Title},
			{Label: "Oldest due ready", Value: oldest},
			{Label: "Running", Value: humanize.Int(q.Running), Href: jobsHref("queue", q.Queue, "status", queues.StatusRunning), Title: exactCount},
			{Label: "Expired leases", Value: humanize.Int(q.ExpiredLeases)},
			{Label: "Dead", Value: humanize.Int(q.Dead), Href: jobsHref("queue", q.Queue, "status", queues.StatusDead), Title: exactCount},
			{Label: "Done (approx)", Value: "~" + humanize.Int(q.DoneApprox), Title: "estimated from planner statistics"},
		},
		Settings: []views.Fact{
			{Label: "State", Value: map[bool]string{true: "paused: no claims", false: "running"}[q.Paused]},
			{Label: "Max workers", Value: optInt(q.MaxWorkers, "no limit")},
			{Label: "Rate", Value: optRate(q.RatePerSecond, "no limit")},
		},
		Actions:    queueActions(q, role),
		JobsHref:   jobsHref("queue", q.Queue),
		RefreshURL: queueHref(q.Queue),
	}
	if q.SettingsUpdatedAt != nil {
		a := age(*q.SettingsUpdatedAt, now)
		m.Settings = append(m.Settings, views.Fact{Label: "Changed", Value: a.Text + " by " + cmp.Or(q.SettingsUpdatedBy, "unknown"), Title: a.UTC})
	} else {
		m.Settings = append(m.Settings, views.Fact{Label: "Changed", Value: "never (defaults)"})
	}
	return m
}

// optInt formats an optional limit.
func optInt(n *int, none string) string {
	if n == nil {
		return none
	}
	return humanize.Int(int64(*n))
}

// optRate formats an optional rate.
func optRate(r *float64, none string) string {
	if r == nil {
		return none
	}
	return humanRate(*r)
}

// workersOf keeps the workers that serve queue.
func workersOf(ws []queues.Worker, queue string) []queues.Worker {
	var out []queues.Worker
	for _, w := range ws {
		for _, q := range w.Queues {
			if q == queue {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// itoa64 formats an id.
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// queueSeriesFields are the per-queue series the sampler keeps.
var queueSeriesFields = []string{"ready", "running", "dead", "expired_leases", "oldest_ready_seconds"}

// queueSeries reads a queue's recent samples for its sparklines (nil
// sampler: none).
func queueSeries(smp *sampler.Sampler, queue string, now time.Time) map[string]trend {
	out := map[string]trend{}
	for _, f := range queueSeriesFields {
		out[f] = series(smp, "queue."+queue+"."+f, now)
	}
	return out
}

// queueBacklogState is a queue's state against the backlog thresholds: a
// paused queue with work waiting, or a backlog too old or too large, is a
// warning.
func queueBacklogState(q queues.QueueStat, th diagnostics.Thresholds) string {
	switch {
	case th.QueueBacklogAge > 0 && q.Ready > 0 && q.OldestReadySeconds >= th.QueueBacklogAge.Seconds():
		return "warning"
	case th.QueueBacklogReady > 0 && q.Ready >= th.QueueBacklogReady:
		return "warning"
	case q.Paused && q.ReadyTotal() > 0:
		return "warning"
	}
	return "ok"
}

// queueBacklogThreshold says when a backlog becomes a finding.
func queueBacklogThreshold(th diagnostics.Thresholds) string {
	s := "alert at " + humanize.Seconds(th.QueueBacklogAge.Seconds()) + " waited"
	if th.QueueBacklogReady > 0 {
		s += " or " + humanize.Int(th.QueueBacklogReady) + " ready"
	}
	return s
}

// queueTrendTile is a queue's tile on /queues: ready jobs and their trend.
func queueTrendTile(q queues.QueueStat, trend map[string]trend, th diagnostics.Thresholds) views.Tile {
	meta := oldestText(q.Ready, q.OldestReadySeconds)
	if q.Paused {
		meta = "paused · " + meta
	}
	return views.Tile{
		ID: "queue-" + q.Queue, Label: q.Queue + " · ready", Value: humanize.Int(q.ReadyTotal()), Meta: meta,
		State: queueBacklogState(q, th), Threshold: queueBacklogThreshold(th), Href: queueHref(q.Queue),
		Spark: spark(trend["ready"], float64(th.QueueBacklogReady), "ready jobs of "+q.Queue, count),
	}
}

// queueDetailTrends are the tiles of /queues/{name}.
func queueDetailTrends(q queues.QueueStat, trend map[string]trend, th diagnostics.Thresholds) []views.Tile {
	state := queueBacklogState(q, th)
	expiredState := "ok"
	if th.ExpiredLeases > 0 && q.ExpiredLeases >= th.ExpiredLeases {
		expiredState = "warning"
	}
	deadState := "ok"
	if q.Dead > 0 {
		deadState = "warning"
	}
	oldest := "–"
	if q.Ready > 0 {
		oldest = humanize.Seconds(q.OldestReadySeconds)
	}
	return []views.Tile{
		{ID: "ready", Label: "Ready", Value: humanize.Int(q.ReadyTotal()), Meta: humanize.Int(q.Ready) + " due now", State: state,
			Href: jobsHref("queue", q.Queue, "status", queues.StatusReady), Threshold: queueBacklogThreshold(th),
			Spark: spark(trend["ready"], float64(th.QueueBacklogReady), "ready jobs", count)},
		{ID: "oldest", Label: "Oldest due ready", Value: oldest, State: state,
			Threshold: "alert at " + humanize.Seconds(th.QueueBacklogAge.Seconds()),
			Spark:     spark(trend["oldest_ready_seconds"], th.QueueBacklogAge.Seconds(), "oldest ready age", humanize.Seconds)},
		{ID: "running", Label: "Running", Value: humanize.Int(q.Running), Meta: humanize.Int(q.ExpiredLeases) + " expired leases", State: expiredState,
			Href: jobsHref("queue", q.Queue, "status", queues.StatusRunning), Threshold: fmt.Sprintf("alert at %d expired", th.ExpiredLeases),
			Spark: spark(trend["running"], 0, "running jobs", count)},
		{ID: "dead", Label: "Dead", Value: humanize.Int(q.Dead), State: deadState, Href: deadLettersHref(q.Queue),
			Threshold: fmt.Sprintf("alert at %d in %s", th.DeadLetters, humanize.Seconds(th.DeadLetterWindow.Seconds())),
			Spark:     spark(trend["dead"], 0, "dead jobs", count)},
	}
}
