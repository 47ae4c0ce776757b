package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// jobListBudget bounds the jobs list inside the page's read timeout, so a
// filter that has to read most of the table still gets its page (form,
// tabs, and why nothing is listed) instead of a bare timeout.
const jobListBudget = 3 * time.Second

// jobListTimedOut says why a list can run out of its budget and what to do.
const jobListTimedOut = "The list is read newest first and stops once it has a page. No index narrows a kind or a " +
	"created time by itself, so a rare kind or a range far from now can read most of the jobs table (or the table " +
	"is locked: see the blocking tree). Narrow it with a status or an error class, or choose a range closer to now."

// jobsList serves GET /jobs: filtered, keyset-paginated by id (so a page
// costs the same on the millionth row as on the first). ?id= jumps to a job.
//
// A bad filter value is a 400 whose page keeps the form, with the message
// next to the field (JSON clients get the error alone).
func (s *Server) jobsList(c echo.Context) error {
	now := time.Now()
	f, ferr := parseJobFilter(paramsOf(c), now)
	if ferr != nil && (wantsJSON(c) || len(f.Form.Errors) == 0) {
		return ferr
	}
	if ferr == nil && f.JumpID > 0 {
		return c.Redirect(http.StatusSeeOther, "/jobs/"+itoa64(f.JumpID))
	}
	ctx, cancel := readContext(c)
	defer cancel()
	var jobs []queues.Job
	listTimedOut := false
	if ferr == nil {
		lctx, lcancel := context.WithTimeout(ctx, jobListBudget)
		var err error
		if f.Oldest {
			jobs, err = queues.JobListUnfinished(lctx, s.cfg.Pool, f.Unfinished)
		} else {
			jobs, err = queues.JobList(lctx, s.cfg.Pool, f.Params)
		}
		lcancel()
		switch {
		case err == nil:
		case errorsIsTimeout(err) && ctx.Err() == nil:
			if wantsJSON(c) {
				return echo.NewHTTPError(http.StatusGatewayTimeout, jobListTimedOut)
			}
			listTimedOut = true
		default:
			return err
		}
	}
	stats, err := queues.QueueCounts(ctx, s.cfg.Pool)
	if err != nil {
		return err
	}
	m := jobsModel(jobs, f, now)
	m.Tabs, m.TabsNote = jobTabs(f, stats, s.scheduledCount(ctx, f.Params.Queue))
	m.Bulk, m.CSRF = bulkActions(readRole(c)), csrfToken(c)
	status := http.StatusOK
	switch {
	case ferr != nil:
		status = http.StatusBadRequest
		m.Jobs.EmptyTitle, m.Jobs.EmptyWhy = "Fix the filter.", " The fields marked above refused what was typed; nothing was listed."
		setRefusal(c, ferr.Error())
	case listTimedOut:
		status = http.StatusGatewayTimeout
		m.Jobs.EmptyTitle, m.Jobs.EmptyWhy = "No page of jobs within "+humanize.Seconds(jobListBudget.Seconds())+".", " "+jobListTimedOut
	}
	return s.render(c, page{Title: "Jobs", Nav: "jobs", Model: m, Body: views.JobsBody(m), Status: status})
}

// jobScheduledCap bounds the count of scheduled jobs a tab shows: past it
// the tab says "10000+" rather than read a whole backlog's index.
const jobScheduledCap = 10000

// scheduledCount counts the ready jobs waiting for their time in queue (""
// for all), up to jobScheduledCap, within a second; -1 when it could not.
func (s *Server) scheduledCount(ctx context.Context, queue string) int64 {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := queues.JobScheduledCount(cctx, s.cfg.Pool, queue, jobScheduledCap)
	if err != nil {
		return -1
	}
	return n
}

// jobTabs are the state tabs of /jobs with their counts, read from the
// per-queue counters (queues.QueueCounts: cheap on millions of rows, and
// never the jobs themselves) and the capped count of scheduled jobs (-1
// when unknown): of the filtered queue, or of all queues; they do not
// narrow by kind, class or time. Done is the planner's estimate.
func jobTabs(f jobListFilter, stats []queues.QueueCount, scheduled int64) ([]views.JobTab, string) {
	var ready, running, dead, done int64
	for _, q := range stats {
		if f.Params.Queue == "" || q.Queue == f.Params.Queue {
			ready, running, dead, done = ready+q.Ready, running+q.Running, dead+q.Dead, done+q.DoneApprox
		}
	}
	note := "Counts of all queues"
	if f.Params.Queue != "" {
		note = "Counts of queue " + f.Params.Queue
	}
	note += "; done is estimated from table statistics."
	due, dueCount, schedCount := ready, strconv.FormatInt(ready, 10), ""
	switch {
	case scheduled < 0:
		dueCount = "≤" + dueCount
	case scheduled >= jobScheduledCap:
		due = max(ready-scheduled, 0)
		dueCount, schedCount = "≤"+strconv.FormatInt(due, 10), strconv.FormatInt(jobScheduledCap, 10)+"+"
	default:
		due = max(ready-scheduled, 0)
		dueCount, schedCount = strconv.FormatInt(due, 10), strconv.FormatInt(scheduled, 10)
	}
	tab := func(label, status, count, title string) views.JobTab {
		q := f.query()
		q.Del("status")
		if status != "" {
			q.Set("status", status)
		}
		return views.JobTab{Label: label, Status: status, Count: count, Title: title, Href: listHref("/jobs", q), Current: f.Form.Status == status}
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []views.JobTab{
		tab("Running + ready", "", n(running+due), "running jobs and ready jobs whose time has come, oldest first"),
		tab("Running", queues.StatusRunning, n(running), "held by a worker now, longest running first"),
		tab("Ready", queues.StatusReady, dueCount, "due and waiting for a worker, longest waiting first"),
		tab("Scheduled", jobStatusScheduled, schedCount, "ready, but not before their time (a retry's backoff or a run-at)"),
		tab("Dead", queues.StatusDead, n(dead), "failed for good, newest first"),
		tab("Done", queues.StatusDone, "≈"+n(done), "finished, newest first"),
		tab("All", jobStatusAll, "", "every job, newest first"),
	}, note
}

// bulkActions are the actions selected jobs can go to, for role: each
// button posts the selection to the action's preview. Selected jobs the
// action does not apply to are listed there as left alone.
func bulkActions(role string) []views.BulkAction {
	var out []views.BulkAction
	for _, b := range []struct{ name, label string }{
		{"jobs.retry_now", "Retry selected now"},
		{"deadletters.requeue", "Requeue selected dead jobs"},
		{"jobs.cancel", "Cancel selected"},
	} {
		if l, ok := actionLink(b.name, role, nil); ok {
			out = append(out, views.BulkAction{Name: b.name, Label: b.label, URL: "/actions/" + b.name + "/preview", Risk: l.Risk})
		}
	}
	return out
}

// jobStatusSev is the badge of a job status.
func jobStatusSev(status string) string {
	switch status {
	case queues.StatusDead:
		return "critical"
	case queues.StatusRunning:
		return "info"
	case queues.StatusDone:
		return "ok"
	}
	return "warning"
}

// jobSince is how long a job has been in its state, in words: running
// for, waiting for (due), due in (scheduled), or how long ago it finished,
// with the moment it counts from on hover. It is plain text (no <time>):
// the words around the age are the point, and the clock's tick would
// drop them.
func jobSince(j queues.Job, now time.Time) views.Cell {
	words := func(text string, t time.Time) views.Cell {
		return views.Cell{Text: text, Title: "since " + utc(t)}
	}
	switch {
	case j.Status == queues.StatusRunning && j.StartedAt != nil:
		return words("running for "+humanize.Seconds(max(now.Sub(*j.StartedAt).Seconds(), 0)), *j.StartedAt)
	case j.Status == queues.StatusReady && !j.AvailableAt.After(now):
		return words("waiting for "+humanize.Seconds(now.Sub(j.AvailableAt).Seconds()), j.AvailableAt)
	case j.Status == queues.StatusReady:
		return views.Cell{Text: "due in " + humanize.Seconds(j.AvailableAt.Sub(now).Seconds()), Title: "at " + utc(j.AvailableAt)}
	case j.FinishedAt != nil:
		return words(j.Status+" "+humanize.Seconds(max(now.Sub(*j.FinishedAt).Seconds(), 0))+" ago", *j.FinishedAt)
	}
	return views.Cell{}
}

// jobsModel maps one page of jobs and the filter to the /jobs view model.
func jobsModel(jobs []queues.Job, f jobListFilter, now time.Time) views.JobsPage {
	p := views.Panel{
		ID: "jobs", Title: "Jobs", Status: "ok",
		Columns: []views.Column{{Label: "Id", Num: true}, {Label: "Queue"}, {Label: "Kind"}, {Label: "Status"}, {Label: "For"},
			{Label: "Attempts", Num: true}, {Label: "Created"}, {Label: "Available"}, {Label: "Error class"}, {Label: "Last error"}},
		EmptyTitle: "No job matches.",
		EmptyWhy:   " Jobs matching the filter would be listed here, newest first; widen the filter or clear it.",
	}
	m := views.JobsPage{Filter: f.Form, Order: "newest first", FirstLabel: "Newest"}
	switch {
	case f.Oldest && f.Unfinished.AfterID > 0:
		p.EmptyTitle = "No newer job matches."
		p.EmptyWhy = " This is the end of the list for this filter; go back to the oldest jobs."
		p.Note = "Jobs with an id above " + itoa64(f.Unfinished.AfterID) + "."
	case f.Oldest && f.Form.Status == "" && len(f.query()) == 0:
		p.EmptyTitle = "Nothing running or waiting."
		p.EmptyWhy = " Running jobs and ready jobs whose time has come are listed here, the longest waiting first; the other tabs list scheduled, dead and done jobs."
	case f.Oldest:
		p.EmptyWhy = " Jobs matching the filter would be listed here, oldest first; widen the filter, clear it, or pick another tab."
	case f.Params.BeforeID > 0:
		p.EmptyTitle = "No older job matches."
		p.EmptyWhy = " This is the end of the list for this filter; go back to the newest jobs."
		p.Note = "Jobs with an id below " + itoa64(f.Params.BeforeID) + "."
	case f.Form.Status == jobStatusAll && len(f.query()) == 1:
		p.EmptyTitle = "No jobs yet."
		p.EmptyWhy = " Jobs appear here as soon as an application enqueues one."
	}
	if f.Oldest {
		m.Order, m.FirstLabel = "oldest first: the longest running or waiting on top", "Oldest"
	}
	for _, j := range jobs {
		created, avail := j.CreatedAt, j.AvailableAt
		p.Rows = append(p.Rows, []views.Cell{
			{Text: itoa64(j.ID), Href: "/jobs/" + itoa64(j.ID), Mono: true},
			{Text: j.Queue, Href: queueHref(j.Queue), Mono: true},
			{Text: j.Kind, Mono: true},
			{Text: j.Status, Sev: jobStatusSev(j.Status)},
			jobSince(j, now),
			{Text: fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts)},
			ageCell(&created, now),
			ageCell(&avail, now),
			{Text: deref(j.ErrorClass, ""), Mono: true},
			{Text: truncate(deref(j.LastError, ""), 100), Title: truncate(deref(j.LastError, ""), 1000)},
		})
	}
	m.Jobs = p
	if len(jobs) > 0 {
		last := jobs[len(jobs)-1].ID
		if f.Oldest {
			m.NewerHref = newerHref("/jobs", f.query(), last, len(jobs), f.Params.Limit)
		} else {
			m.OlderHref = olderHref("/jobs", f.query(), last, len(jobs), f.Params.Limit)
		}
	}
	if f.Params.BeforeID > 0 || f.Unfinished.AfterID > 0 {
		m.FirstHref = listHref("/jobs", f.query())
	}
	return m
}

// jobDetail serves GET /jobs/:id.
func (s *Server) jobDetail(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	now := time.Now()
	m := jobDetailModel(j, readRole(c), now)
	if j.Status == queues.StatusRunning {
		ctx, cancel := readContext(c)
		defer cancel()
		var owner *queues.Worker
		if workers, err := queues.WorkerList(ctx, s.cfg.Pool, s.cfg.Diagnostics.Thresholds().WorkerHeartbeat); err == nil && j.LeaseOwner != nil {
			for i := range workers {
				if workers[i].ID == *j.LeaseOwner {
					owner = &workers[i]
				}
			}
		}
		m.Running, m.StuckSev = runningText(j, owner, now)
		if tree := s.cfg.Diagnostics.BlockingTree(ctx); tree.Err == nil {
			if w, ok := diagnostics.JobLockWaitOf(tree.Rows, j.ID); ok {
				m.LockWait = jobLockWaitModel(w, readRole(c))
				m.LockWait.Actions = guardOffers(m.LockWait.Actions, s.backendGuard(ctx))
			}
		}
	}
	return s.render(c, page{Title: "Job " + itoa64(j.ID), Nav: "jobs", Model: m, Body: views.JobDetailBody(m)})
}

// jobPayload serves GET /jobs/:id/payload: the job's payload whole, as a
// JSON download, for the payloads the job page shows cut.
func (s *Server) jobPayload(c echo.Context) error {
	j, err := s.jobOf(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="job-%d-payload.json"`, j.ID))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, j.Payload)
}

// jobOf reads the job the route's :id names.
func (s *Server) jobOf(c echo.Context) (*queues.Job, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return nil, errBadRequest("job id %q is not a positive whole number", truncate(c.Param("id"), 40))
	}
	ctx, cancel := readContext(c)
	defer cancel()
	j, err := queues.JobGet(ctx, s.cfg.Pool, id)
	if errors.Is(err, queues.ErrNotFound) {
		return nil, fmt.Errorf("no job has id %d (it may never have existed, or was archived): %w", id, errNotFound)
	}
	return j, err
}

// maxPayloadShown is how much of a payload the job page shows; the rest is
// downloaded from /jobs/{id}/payload.
const maxPayloadShown = 64 << 10

// payloadShown is the payload as the job page shows it: pretty-printed, or
// its first maxPayloadShown bytes (cut on a character boundary) and true
// when it is longer.
func payloadShown(raw []byte) (string, bool) {
	if len(raw) <= maxPayloadShown {
		return prettyJSON(raw), false
	}
	cut := maxPayloadShown
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return string(raw[:cut]), true
}

// jobActionNames are the actions that fit a job in its status.
func jobActionNames(status string) []string {
	switch status {
	case queues.StatusReady:
		return []string{"job.retry_now", "job.cancel"}
	case queues.StatusRunning:
		return []string{"lease.expire", "job.cancel"}
	case queues.StatusDead:
		return []string{"job.retry_now"}
	}
	return nil
}

// prettyJSON indents a JSON document; anything else is shown as is.
func prettyJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// timeFact is a labelled age with the absolute UTC time on hover.
func timeFact(label string, t *time.Time, now time.Time) views.Fact {
	a := agePtr(t, now)
	return views.Fact{Label: label, Value: a.Text, Title: a.UTC, TS: a.UTC}
}

// jobDetailModel maps a job to /jobs/{id}.
func jobDetailModel(j *queues.Job, role string, now time.Time) views.JobDetail {
	created, avail := j.CreatedAt, j.AvailableAt
	m := views.JobDetail{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, Status: j.Status, StatusSev: jobStatusSev(j.Status),
		Facts: []views.Fact{
			{Label: "Status", Value: j.Status},
			{Label: "Priority", Value: strconv.Itoa(int(j.Priority))},
			{Label: "Attempts", Value: fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts)},
			timeFact("Created", &created, now),
			timeFact("Available", &avail, now),
			timeFact("Started", j.StartedAt, now),
			timeFact("Finished", j.FinishedAt, now),
			{Label: "Error class", Value: deref(j.ErrorClass, "none"), Mono: true},
			{Label: "Dedupe key", Value: deref(j.DedupeKey, "none"), Mono: true},
			{Label: "Tenant", Value: deref(j.TenantID, "none"), Mono: true},
		},
		Lease: []views.Fact{
			leaseOwnerFact(j.LeaseOwner),
			{Label: "Generation", Value: strconv.FormatInt(j.LeaseGeneration, 10), Mono: true,
				Title: "the fencing token: every claim bumps it, and ack or fail must present it"},
			leaseUntilFact(j, now),
		},
		PayloadHref:  "/jobs/" + itoa64(j.ID) + "/payload",
		PayloadBytes: len(j.Payload),
		LastError:    deref(j.LastError, ""),
		Actions:      actionLinks(jobActionNames(j.Status), role, map[string]string{"id": itoa64(j.ID)}),
		QueueHref:    queueHref(j.Queue),
	}
	if j.ErrorClass != nil && *j.ErrorClass != "" {
		m.ErrorClass = *j.ErrorClass
		m.ClassHref = jobsHref("queue", j.Queue, "error_class", *j.ErrorClass)
	}
	m.Payload, m.PayloadCut = payloadShown(j.Payload)
	m.Attempts = attemptsPanel(j, now)
	return m
}

// runningText says how long a running job has run and what its lease says
// of the worker running it (owner, nil when the registry has no such
// worker), with the badge: "critical" when the lease expired, "warning"
// when the worker's heartbeat is stale, else "info".
func runningText(j *queues.Job, owner *queues.Worker, now time.Time) (string, string) {
	s := "Running"
	if j.StartedAt != nil {
		s += " for " + humanize.Seconds(now.Sub(*j.StartedAt).Seconds())
	}
	s += fmt.Sprintf(" (attempt %d of %d)", j.Attempts, j.MaxAttempts)
	worker := "no worker"
	if j.LeaseOwner != nil {
		worker = "worker " + *j.LeaseOwner
	}
	heartbeat := ""
	switch {
	case owner == nil:
		heartbeat = "; the workers registry does not list it"
	case owner.Alive:
		heartbeat = fmt.Sprintf(", which heartbeated %s ago", humanize.Seconds(owner.LastSeenSeconds))
	default:
		heartbeat = fmt.Sprintf(", which last heartbeated %s ago and counts as dead", humanize.Seconds(owner.LastSeenSeconds))
	}
	if j.LeaseUntil == nil || j.LeaseUntil.Before(now) {
		ago := "has no lease"
		if j.LeaseUntil != nil {
			ago = "lease expired " + humanize.Seconds(now.Sub(*j.LeaseUntil).Seconds()) + " ago"
		}
		return fmt.Sprintf("%s on %s%s. Its %s: nobody renews it, so nothing is working on it. "+
			"The reaper puts it back to ready; expire the lease to do that now.", s, worker, heartbeat, ago), "critical"
	}
	sev := "info"
	if owner == nil || !owner.Alive {
		sev = "warning"
	}
	return fmt.Sprintf("%s on %s%s. Its lease runs %s more and is renewed while the worker lives.",
		s, worker, heartbeat, humanize.Seconds(j.LeaseUntil.Sub(now).Seconds())), sev
}

// leaseUntilFact says when the lease ends, and whether it already has.
func leaseUntilFact(j *queues.Job, now time.Time) views.Fact {
	f := timeFact("Lease until", j.LeaseUntil, now)
	if j.LeaseUntil == nil {
		f.Value = "no lease"
		return f
	}
	if j.Status == queues.StatusRunning && j.LeaseUntil.Before(now) {
		f.Label = "Lease expired"
		f.Title = f.Title + ": the owner stopped heartbeating; the reaper will requeue the job"
	}
	return f
}

// attemptsPanel lists the job's per-attempt error history.
func attemptsPanel(j *queues.Job, now time.Time) views.Panel {
	p := views.Panel{
		ID: "attempts", Title: "Attempts and their errors", Status: "ok",
		Columns:    []views.Column{{Label: "Attempt", Num: true}, {Label: "When"}, {Label: "Class"}, {Label: "Error"}},
		EmptyTitle: "No failed attempt.",
		EmptyWhy:   " Each failed attempt's error and class would be listed here, oldest first.",
	}
	errs, err := j.AttemptErrors()
	if err != nil {
		p.Status, p.Message = "error", "The error history could not be read: "+err.Error()
		return p
	}
	for _, e := range errs {
		at := e.At
		p.Rows = append(p.Rows, []views.Cell{
			{Text: strconv.Itoa(e.Attempt)},
			ageCell(&at, now),
			{Text: e.Class, Mono: true},
			{Text: truncate(e.Error, 300), Title: truncate(e.Error, 2000), Mono: true},
		})
	}
	return p
}

// leaseOwnerFact names the worker holding the lease, linked to the workers
// page where its heartbeat shows whether it is alive.
func leaseOwnerFact(owner *string) views.Fact {
	if owner == nil {
		return views.Fact{Label: "Owner", Value: "none"}
	}
	return views.Fact{Label: "Owner", Value: *owner, Mono: true, Href: "/workers", Title: "see its heartbeat on the workers page"}
}
