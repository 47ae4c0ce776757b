package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// The queue pages of another engine (Config.QueueSource: River's). They
// read only through queues.Source and show the engine's states in its own
// words; the console's own engine keeps its pages (queues.go, jobs.go,
// deadletters.go, workers.go), which read richer facts (leases, tenants,
// settings, trends) that the interface would only flatten.

// sourceQueueActions are the actions a queue row offers, by whether it is
// paused; names no action registers are left out (actionLinks).
func sourceQueueActions(engine string, paused bool, role, queue string) []views.ActionLink {
	name := engine + ".queue.pause"
	if paused {
		name = engine + ".queue.resume"
	}
	return actionLinks([]string{name}, role, map[string]string{"queue": queue})
}

// sourceEngineName is how pages name an engine.
func sourceEngineName(engine string) string {
	if engine == queues.SourceRiver {
		return "River"
	}
	return "the console's engine"
}

// sourceQueues serves GET /queues from the Source.
func (s *Server) sourceQueues(c echo.Context) error {
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastSourceQueuesList(c, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	src := s.cfg.QueueSource
	qs, err := src.Queues(ctx)
	if err != nil {
		return err
	}
	m := sourceQueuesModel(src.Engine(), src.States(), qs, readRole(c))
	return s.render(c, page{Title: "Queues", Nav: "queues", Model: m, Body: views.SourcePageBody(m), Travel: &t})
}

// sourceQueuesModel maps the queues to a table: a column per state, each
// count linking to its jobs.
func sourceQueuesModel(engine string, states []string, qs []queues.SourceQueue, role string) views.SourcePage {
	p := views.Panel{ID: "queues", Title: "Queues", Status: "ok", Columns: []views.Column{{Label: "Queue"}},
		EmptyTitle: "No queues yet.",
		EmptyWhy:   " A queue appears here once a job is inserted into it or a client works it."}
	notes := map[string]string{}
	for _, q := range qs {
		for _, sc := range q.Counts {
			if sc.Note != "" {
				notes[sc.State] = sc.Note
			}
		}
	}
	for _, st := range states {
		p.Columns = append(p.Columns, views.Column{Label: st, Num: true, Hint: notes[st]})
	}
	p.Columns = append(p.Columns, views.Column{Label: "Oldest waiting", Num: true, Hint: "how long the oldest job ready to run has waited"},
		views.Column{Label: "State"}, views.Column{Label: "Actions"})
	for _, q := range qs {
		row := []views.Cell{{Text: q.Queue, Href: queueHref(q.Queue), Mono: true}}
		for _, st := range states {
			n := q.Count(st)
			cell := views.Cell{Text: humanize.Int(n)}
			if n > 0 {
				cell.Href = jobsHref("queue", q.Queue, "state", st)
			}
			row = append(row, cell)
		}
		state := views.Cell{Text: "running"}
		if q.Paused {
			state = views.Cell{Text: "◆ paused", Sev: "warning", Title: "paused: no client fetches this queue's jobs"}
		}
		row = append(row, oldestReadyCell(q.Waiting, q.OldestWaitingSeconds), state,
			views.Cell{Actions: sourceQueueActions(engine, q.Paused, role, q.Queue)})
		p.Rows = append(p.Rows, row)
	}
	return views.SourcePage{Title: "Queues", TestID: "queues", Panels: []views.Panel{p}, RefreshURL: "/queues",
		Sub: "Read from " + sourceEngineName(engine) + "'s tables; counts are exact unless their column says otherwise."}
}

// sourceQueueDetail serves GET /queues/:name from the Source.
func (s *Server) sourceQueueDetail(c echo.Context) error {
	name, err := queueNameParam(c)
	if err != nil {
		return err
	}
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastSourceQueueDetail(c, name, t)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	src := s.cfg.QueueSource
	qs, err := src.Queues(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(qs, func(q queues.SourceQueue) bool { return q.Queue == name })
	if i < 0 {
		return fmt.Errorf("no queue named %q in %s: it has no unfinished job and no client works it (check the name on /queues): %w",
			name, sourceEngineName(src.Engine()), errNotFound)
	}
	now := time.Now()
	m := sourceQueueDetailModel(src.Engine(), qs[i], readRole(c), now)
	failed, ferr := src.FailedGroups(ctx, name)
	m.Panels = append(m.Panels, failedGroupsPanel(failed, readRole(c), false, now))
	if ferr != nil {
		m.Panels[len(m.Panels)-1] = panelError(m.Panels[len(m.Panels)-1], ferr)
	}
	ws, werr := src.Workers(ctx)
	m.Panels = append(m.Panels, sourceWorkersPanel(ws, name, now))
	if werr != nil {
		m.Panels[len(m.Panels)-1] = panelError(m.Panels[len(m.Panels)-1], werr)
	}
	return s.render(c, page{Title: "Queue " + name, Nav: "queues", Model: m, Body: views.SourcePageBody(m), Travel: &t})
}

// sourceQueueDetailModel is one queue's counts and state; the panels are
// added by the handler.
func sourceQueueDetailModel(engine string, q queues.SourceQueue, role string, now time.Time) views.SourcePage {
	var facts []views.Fact
	for _, sc := range q.Counts {
		f := views.Fact{Label: sc.State, Value: humanize.Int(sc.Count), Title: sc.Note}
		if sc.Count > 0 {
			f.Href = jobsHref("queue", q.Queue, "state", sc.State)
		}
		facts = append(facts, f)
	}
	facts = append(facts, views.Fact{Label: "Oldest waiting", Value: oldestReadyCell(q.Waiting, q.OldestWaitingSeconds).Text})
	state := views.Fact{Label: "State", Value: "running"}
	if q.Paused {
		state.Value = "paused: no client fetches its jobs"
		if q.PausedAt != nil {
			a := age(*q.PausedAt, now)
			state.Value += " (since " + a.Text + ")"
			state.Title = a.UTC
		}
	}
	facts = append(facts, state)
	p := views.SourcePage{Title: "Queue " + q.Queue, TestID: "queue-detail", Facts: facts, RefreshURL: queueHref(q.Queue),
		Sub: "Read from " + sourceEngineName(engine) + "'s tables."}
	if acts := sourceQueueActions(engine, q.Paused, role, q.Queue); len(acts) > 0 {
		p.Panels = append(p.Panels, views.Panel{ID: "queue-actions", Title: "Actions", Status: "ok",
			Columns: []views.Column{{Label: "Change"}}, Rows: [][]views.Cell{{{Actions: acts}}}})
	}
	return p
}

// sourceJobFilterFields are the job list's filters, in the form's order.
var sourceJobFilterFields = []views.FilterInput{
	{Name: "queue", Label: "Queue"},
	{Name: "kind", Label: "Kind"},
	{Name: "state", Label: "State"},
	{Name: "args", Label: "Args contain", Placeholder: `{"customer_id": 42}`},
	{Name: "created_from", Label: "Created from", Placeholder: "1h ago"},
	{Name: "created_until", Label: "Created before", Placeholder: "now"},
}

// parseSourceJobFilter reads the job list's query: the filters above,
// before (the keyset cursor) and limit.
func parseSourceJobFilter(q queryParams, now time.Time) (queues.SourceJobFilter, []views.FilterInput, error) {
	var f queues.SourceJobFilter
	form := slices.Clone(sourceJobFilterFields)
	var errs []error
	texts := map[string]*string{"queue": &f.Queue, "kind": &f.Kind, "state": &f.State}
	for i := range form {
		name := form[i].Name
		form[i].Value = q.Get(name)
		if dst, ok := texts[name]; ok {
			v, err := filterText(q, name)
			errs = append(errs, err)
			*dst = v
		}
	}
	if args := strings.TrimSpace(q.Get("args")); args != "" {
		if len(args) > maxFilterText {
			errs = append(errs, errBadRequest("args: at most %d characters", maxFilterText))
		} else {
			f.ArgsContain = json.RawMessage(args)
		}
	}
	var err error
	f.CreatedFrom, err = filterTime(q, "created_from", now)
	errs = append(errs, err)
	f.CreatedBefore, err = filterTime(q, "created_until", now)
	errs = append(errs, err)
	f.BeforeID, err = filterID(q, "before", 1<<62)
	errs = append(errs, err)
	f.Limit, err = filterLimit(q, jobListDefaultLimit, jobListMaxLimit)
	errs = append(errs, err)
	return f, form, errors.Join(errs...)
}

// sourceJobsQuery is the filter as a query string, for the pages' links.
func sourceJobsQuery(form []views.FilterInput) url.Values {
	q := url.Values{}
	for _, f := range form {
		if f.Value != "" {
			q.Set(f.Name, f.Value)
		}
	}
	return q
}

// sourceJobs serves GET /jobs from the Source: filtered, keyset-paginated
// by id. A refused filter is a 400 whose page keeps the form and says why.
func (s *Server) sourceJobs(c echo.Context) error {
	now := time.Now()
	src := s.cfg.QueueSource
	f, form, ferr := parseSourceJobFilter(paramsOf(c), now)
	var jobs []queues.SourceJob
	if ferr == nil {
		ctx, cancel := readContext(c)
		defer cancel()
		var err error
		jobs, err = src.Jobs(ctx, f)
		if errors.Is(err, queues.ErrBadFilter) {
			ferr = errBadRequest("%s", err.Error())
		} else if err != nil {
			return err
		}
	}
	m := sourceJobsModel(src.Engine(), jobs, f, form, now)
	status := http.StatusOK
	if ferr != nil {
		if wantsJSON(c) {
			return ferr
		}
		status = http.StatusBadRequest
		m.Error = ferr.Error()
		setRefusal(c, ferr.Error())
	}
	return s.render(c, page{Title: "Jobs", Nav: "jobs", Model: m, Body: views.SourcePageBody(m), Status: status})
}

// sourceJobsModel maps a page of jobs to the list.
func sourceJobsModel(engine string, jobs []queues.SourceJob, f queues.SourceJobFilter, form []views.FilterInput, now time.Time) views.SourcePage {
	p := views.Panel{ID: "jobs", Title: "Jobs", Status: "ok",
		Columns: []views.Column{{Label: "Id", Num: true}, {Label: "Queue"}, {Label: "Kind"}, {Label: "State"},
			{Label: "Attempt", Num: true}, {Label: "Created"}, {Label: "Scheduled"}, {Label: "Error class"}, {Label: "Last error"}},
		EmptyTitle: "No job matches.",
		EmptyWhy:   " Jobs matching the filter would be listed here, newest first; widen the filter or clear it."}
	if f.BeforeID > 0 {
		p.Note = "Jobs with an id below " + itoa64(f.BeforeID) + "."
	}
	for _, j := range jobs {
		created, sched := j.CreatedAt, j.ScheduledAt
		p.Rows = append(p.Rows, []views.Cell{
			{Text: itoa64(j.ID), Href: "/jobs/" + itoa64(j.ID), Mono: true},
			{Text: j.Queue, Href: queueHref(j.Queue), Mono: true},
			{Text: j.Kind, Mono: true},
			{Text: j.State, Sev: sourceStateSev(j.State)},
			{Text: fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts)},
			ageCell(&created, now),
			ageCell(&sched, now),
			{Text: j.ErrorClass, Mono: true},
			{Text: truncate(j.LastError, 100), Title: truncate(j.LastError, 1000)},
		})
	}
	m := views.SourcePage{Title: "Jobs", TestID: "jobs", Filter: form, FilterAction: "/jobs", Panels: []views.Panel{p},
		Sub: "Read from " + sourceEngineName(engine) + "'s tables, newest first."}
	q := sourceJobsQuery(form)
	m.RefreshURL = listHref("/jobs", q)
	if len(jobs) > 0 {
		m.OlderHref = olderHref("/jobs", q, jobs[len(jobs)-1].ID, len(jobs), f.Limit)
	}
	return m
}

// sourceStateSev is the badge of a job state, either engine's.
func sourceStateSev(state string) string {
	switch state {
	case "discarded", queues.StatusDead:
		return "critical"
	case "running":
		return "info"
	case "completed", queues.StatusDone:
		return "ok"
	case "cancelled":
		return ""
	}
	return "warning"
}

// sourceJobDetail serves GET /jobs/:id from the Source.
func (s *Server) sourceJobDetail(c echo.Context) error {
	id, err := filterID(pathParam{c, "id"}, "id", 1<<62)
	if err != nil || id == 0 {
		return errBadRequest("%q is not a job id: give a whole number", truncate(c.Param("id"), 40))
	}
	ctx, cancel := readContext(c)
	defer cancel()
	j, err := s.cfg.QueueSource.Job(ctx, id)
	if err != nil {
		return err
	}
	m := sourceJobModel(s.cfg.QueueSource.Engine(), j, time.Now())
	return s.render(c, page{Title: "Job " + itoa64(id), Nav: "jobs", Model: m, Body: views.SourcePageBody(m)})
}

// pathParam reads one path parameter as a query parameter, for the filter
// parsers.
type pathParam struct {
	c    echo.Context
	name string
}

func (p pathParam) Get(name string) string {
	if name == p.name {
		return p.c.Param(name)
	}
	return ""
}

// sourceAttempt is one entry of a job's error history, as both engines
// write it (River's rivertype.AttemptError; the engine's errors array).
type sourceAttempt struct {
	At      time.Time `json:"at"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error"`
	Trace   string    `json:"trace"`
}

// sourceJobModel is one job: its facts, arguments and attempts.
func sourceJobModel(engine string, j queues.SourceJob, now time.Time) views.SourcePage {
	created, sched := j.CreatedAt, j.ScheduledAt
	facts := []views.Fact{
		{Label: "Queue", Value: j.Queue, Href: queueHref(j.Queue), Mono: true},
		{Label: "Kind", Value: j.Kind, Mono: true},
		{Label: "State", Value: j.State},
		{Label: "Attempt", Value: fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts)},
		{Label: "Priority", Value: humanize.Int(int64(j.Priority))},
		{Label: "Created", Value: ageCell(&created, now).Text, Title: ageCell(&created, now).Title},
		{Label: "Scheduled", Value: ageCell(&sched, now).Text, Title: ageCell(&sched, now).Title},
		{Label: "Attempted", Value: ageCell(j.AttemptedAt, now).Text},
		{Label: "Finalized", Value: ageCell(j.FinalizedAt, now).Text},
	}
	if j.ErrorClass != "" {
		facts = append(facts, views.Fact{Label: "Error class", Value: j.ErrorClass, Mono: true,
			Href: jobsHref("queue", j.Queue, "kind", j.Kind)})
	}
	facts = append(facts, views.Fact{Label: "Args", Value: truncate(indentJSON(j.Args), 2000), Mono: true})
	if len(j.Metadata) > 0 && string(j.Metadata) != "{}" {
		facts = append(facts, views.Fact{Label: "Metadata", Value: truncate(indentJSON(j.Metadata), 1000), Mono: true})
	}
	attempts := views.Panel{ID: "attempts", Title: "Failed attempts", Status: "ok",
		Columns:    []views.Column{{Label: "Attempt", Num: true}, {Label: "At"}, {Label: "Error"}, {Label: "Trace"}},
		EmptyTitle: "No failed attempt.", EmptyWhy: " Each attempt that returns an error or panics is recorded here."}
	var history []sourceAttempt
	if len(j.Errors) > 0 {
		if err := json.Unmarshal(j.Errors, &history); err != nil {
			attempts = panelError(attempts, fmt.Errorf("the error history is not the JSON expected: %w", err))
		}
	}
	for _, a := range history {
		at := a.At
		trace := ""
		if a.Trace != "" {
			trace = strings.SplitN(strings.TrimSpace(a.Trace), "\n", 2)[0] + " …"
		}
		attempts.Rows = append(attempts.Rows, []views.Cell{{Text: humanize.Int(int64(a.Attempt))}, ageCell(&at, now),
			{Text: truncate(a.Error, 300), Title: truncate(a.Error, 2000), Mono: true}, {Text: trace, Title: truncate(a.Trace, 4000), Mono: true}})
	}
	return views.SourcePage{Title: "Job " + itoa64(j.ID), TestID: "job-detail", Facts: facts, Panels: []views.Panel{attempts},
		Sub: "Read from " + sourceEngineName(engine) + "'s tables."}
}

// indentJSON lays out a JSON value for reading; what does not parse is
// shown as it is.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// sourceDeadLetters serves GET /deadletters (optionally ?queue=) from the
// Source: the jobs that failed for good, by queue and error class.
func (s *Server) sourceDeadLetters(c echo.Context) error {
	queue, err := filterText(paramsOf(c), "queue")
	if err != nil {
		return err
	}
	ctx, cancel := readContext(c)
	defer cancel()
	src := s.cfg.QueueSource
	g, err := src.FailedGroups(ctx, queue)
	if err != nil {
		return err
	}
	now := time.Now()
	p := failedGroupsPanel(g, readRole(c), true, now)
	if queue != "" {
		p.Note = "Only queue " + queue + ". " + p.Note
		p.EmptyTitle = "No failed jobs in queue " + queue + "."
	}
	m := views.SourcePage{Title: "Dead letters", TestID: "deadletters", Panels: []views.Panel{p}, RefreshURL: listHref("/deadletters", queryOf("queue", queue)),
		Sub: humanize.Int(g.Total) + " jobs failed for good in " + sourceEngineName(src.Engine()) + ", grouped by queue and the class of their last error."}
	return s.render(c, page{Title: "Dead letters", Nav: "deadletters", Model: m, Body: views.SourcePageBody(m)})
}

// riverRetryAction retries River's discarded jobs (actions' river.retry).
const riverRetryAction = "river.retry"

// failedGroupsPanel is the table of failed-job groups, each linking to its
// jobs. withQueue shows the queue column (a queue's page leaves it out).
func failedGroupsPanel(g queues.SourceFailedGroups, role string, withQueue bool, now time.Time) views.Panel {
	p := views.Panel{ID: "deadletters", Title: "Failed jobs by error class", Status: "ok",
		EmptyTitle: "No failed jobs.",
		EmptyWhy:   " Jobs that ran out of attempts or were discarded would be grouped here by the class of their last error."}
	if withQueue {
		p.Columns = append(p.Columns, views.Column{Label: "Queue"})
	}
	p.Columns = append(p.Columns, views.Column{Label: "Error class"}, views.Column{Label: "Jobs", Num: true},
		views.Column{Label: "First seen"}, views.Column{Label: "Last seen"}, views.Column{Label: "Sample error"})
	// River's discarded jobs are retried through River's client, by
	// queue and class (river.retry), for a role allowed to.
	_, canRetry := actionLink(riverRetryAction, role, nil)
	if canRetry {
		p.Columns = append(p.Columns, views.Column{Label: "Action"})
		p.Cards = true // a phone shows each group as a card, its retry link in reach
	}
	if g.Read < g.Total {
		p.Note = fmt.Sprintf("Grouped from the %s newest of %s failed jobs. ", humanize.Int(g.Read), humanize.Int(g.Total))
	}
	for _, fg := range g.Groups {
		class := views.Cell{Text: fg.ErrorClass, Mono: true}
		if fg.ErrorClass == "" {
			class = views.Cell{Text: "(no error)", Title: "discarded or cancelled without an error recorded"}
		}
		sample := views.Cell{Text: truncate(fg.SampleError, 160), Title: truncate(fg.SampleError, 1000), Mono: true}
		if fg.SampleJobID > 0 {
			sample.Href = "/jobs/" + itoa64(fg.SampleJobID)
		}
		first, last := fg.FirstSeen, fg.LastSeen
		var row []views.Cell
		if withQueue {
			row = append(row, views.Cell{Text: fg.Queue, Href: queueHref(fg.Queue), Mono: true})
		}
		row = append(row, class, views.Cell{Text: humanize.Int(fg.Count)}, ageCell(&first, now), ageCell(&last, now), sample)
		if canRetry {
			l, _ := actionLink(riverRetryAction, role, map[string]string{"queue": fg.Queue, "error_class": fg.ErrorClass})
			row = append(row, views.Cell{Text: "Retry these " + humanize.Int(fg.Count) + "…", Href: l.Href, Title: l.Label})
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// sourceWorkersList serves GET /workers from the Source: the processes
// working jobs and the leader.
func (s *Server) sourceWorkersList(c echo.Context) error {
	ctx, cancel := readContext(c)
	defer cancel()
	src := s.cfg.QueueSource
	ws, err := src.Workers(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	m := views.SourcePage{Title: "Workers", TestID: "workers", Facts: leaderFacts(ws.Leader, now),
		Panels: []views.Panel{sourceWorkersPanel(ws, "", now)}, RefreshURL: "/workers",
		Sub: "Read from " + sourceEngineName(src.Engine()) + "'s tables."}
	return s.render(c, page{Title: "Workers", Nav: "workers", Model: m, Body: views.SourcePageBody(m)})
}

// leaderFacts say who leads and until when.
func leaderFacts(l *queues.SourceLeader, now time.Time) []views.Fact {
	if l == nil {
		return []views.Fact{{Label: "Leader", Value: "none elected: no client runs the maintenance services (scheduling, rescuing stuck jobs, cleaning)"}}
	}
	elected, expires := age(l.ElectedAt, now), age(l.ExpiresAt, now)
	state := "lease until " + expires.Text
	if l.Expired {
		state = "lease expired " + expires.Text + ": no client renewed it"
	}
	return []views.Fact{
		{Label: "Leader", Value: l.ID, Mono: true},
		{Label: "Elected", Value: elected.Text, Title: elected.UTC},
		{Label: "Lease", Value: state, Title: expires.UTC},
	}
}

// sourceWorkersPanel lists the workers; queue "" keeps all, else those
// working it.
func sourceWorkersPanel(ws queues.SourceWorkers, queue string, now time.Time) views.Panel {
	p := views.Panel{ID: "workers", Title: "Clients working jobs", Status: "ok",
		Columns:    []views.Column{{Label: "Client"}, {Label: "Queues"}, {Label: "Running", Num: true}, {Label: "Newest start"}},
		EmptyTitle: "No client is working a job.",
		EmptyWhy:   " Clients are seen through the jobs they run; an idle client is not listed."}
	for _, w := range ws.Workers {
		if queue != "" && !slices.Contains(w.Queues, queue) {
			continue
		}
		seen := w.LastSeen
		p.Rows = append(p.Rows, []views.Cell{{Text: w.ID, Mono: true}, {Text: strings.Join(w.Queues, ", "), Mono: true},
			{Text: humanize.Int(w.Running)}, ageCell(&seen, now)})
	}
	return p
}
