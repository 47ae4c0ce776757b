package web

import (
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// Parsers of the query-string filters of the jobs and audit lists. They are
// pure: a bad value becomes a badRequest naming the field and what it
// accepts, so the operator sees a 400 with the reason, never a 500.

// queryParams is how handlers read a request's query string: by name,
// through echo.Context's QueryParam (paramsOf), never as a whole, so a
// test can list every parameter a route reads. url.Values is one too.
type queryParams interface{ Get(name string) string }

// paramsOf reads c's query parameters by name.
func paramsOf(c echo.Context) queryParams { return contextParams{c} }

type contextParams struct{ c echo.Context }

func (p contextParams) Get(name string) string { return p.c.QueryParam(name) }

// maxFilterText bounds free-text filters: nothing legitimate is longer, and
// it keeps silly input away from the database.
const maxFilterText = 200

// filterTimeLayouts are the absolute forms a time filter accepts (UTC
// unless the value names its zone): RFC 3339, what an <input
// type="datetime-local"> sends, a date and time with a space, and a date.
var filterTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05",
	"2006-01-02 15:04", "2006-01-02"}

// relativeTimeRE is a time typed relative to now: "10m ago", "2 hours ago",
// "3d ago".
var relativeTimeRE = regexp.MustCompile(`^(\d{1,6})\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)\s+ago$`)

// filterTimeHelp says which forms a time filter takes.
const filterTimeHelp = "type 2026-12-03 10:00 (UTC), 2026-12-03, RFC 3339 (2026-12-03T10:00:00Z), " +
	"10m ago, 2h ago, 3d ago, today or yesterday"

// filterText returns a trimmed free-text filter, refusing control characters
// and overlong values.
func filterText(q queryParams, name string) (string, error) {
	v := strings.TrimSpace(q.Get(name))
	if len(v) > maxFilterText {
		return "", errBadRequest("%s is too long (at most %d characters)", name, maxFilterText)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return "", errBadRequest("%s contains a control character or invalid UTF-8", name)
		}
	}
	return v, nil
}

// filterTime parses an optional time filter; empty means no bound. Besides
// the layouts it takes now, today and yesterday (midnight UTC) and
// "<n><unit> ago" for seconds, minutes, hours, days and weeks.
func filterTime(q queryParams, name string, now time.Time) (*time.Time, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return nil, nil
	}
	if t, ok := parseTypedTime(strings.ToLower(v), now.UTC()); ok {
		return &t, nil
	}
	for _, layout := range filterTimeLayouts {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			if t.Year() < 1 || t.Year() > 9999 {
				break
			}
			t = t.UTC()
			return &t, nil
		}
	}
	return nil, errBadRequest("%s %q is not a time: %s", name, truncate(v, 40), filterTimeHelp)
}

// parseTypedTime reads the relative forms of a time filter.
func parseTypedTime(v string, now time.Time) (time.Time, bool) {
	midnight := now.Truncate(24 * time.Hour)
	switch v {
	case "now":
		return now, true
	case "today":
		return midnight, true
	case "yesterday":
		return midnight.AddDate(0, 0, -1), true
	}
	m := relativeTimeRE.FindStringSubmatch(v)
	if m == nil {
		return time.Time{}, false
	}
	n, _ := strconv.Atoi(m[1])
	var t time.Time
	switch m[2][0] {
	case 's':
		t = now.Add(-time.Duration(n) * time.Second)
	case 'm':
		t = now.Add(-time.Duration(n) * time.Minute)
	case 'h':
		t = now.Add(-time.Duration(n) * time.Hour)
	case 'd':
		t = now.AddDate(0, 0, -n)
	default:
		t = now.AddDate(0, 0, -7*n)
	}
	return t, t.Year() >= 1
}

// filterID parses an optional id from 1 to max; empty means 0 (no filter).
func filterID(q queryParams, name string, max int64) (int64, error) {
	v := strings.TrimSpace(q.Get(name))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case (err != nil || n <= 0) && max == math.MaxInt64:
		return 0, errBadRequest("%s %q is not a positive whole number", name, truncate(v, 40))
	case err != nil || n <= 0 || n > max:
		return 0, errBadRequest("%s %q is not a whole number from 1 to %d", name, truncate(v, 40), max)
	}
	return n, nil
}

// auditBeforeMax is the largest cursor the audit list takes: its query
// compares the cursor as a 32-bit integer.
const auditBeforeMax = math.MaxInt32

// filterLimit parses the page size: empty means def, otherwise 1..max.
func filterLimit(q queryParams, def, max int) (int, error) {
	v := strings.TrimSpace(q.Get("limit"))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, errBadRequest("limit %q must be a whole number from 1 to %d", truncate(v, 40), max)
	}
	return n, nil
}

// jobStatusScheduled and jobStatusAll are the /jobs states that are no
// status of the engine: ready jobs waiting for their time, and every job.
// No status at all lists the running and due jobs.
const (
	jobStatusScheduled = "scheduled"
	jobStatusAll       = "all"
)

// jobStatuses are the values the status filter accepts, in the order of
// the tabs ("any" is taken for "all" too).
var jobStatuses = []string{queues.StatusRunning, queues.StatusReady, jobStatusScheduled, queues.StatusDead, queues.StatusDone, jobStatusAll}

// jobListFilter is a parsed /jobs query: the list parameters, an id to jump
// to (0 for none), and the form as the operator typed it. Oldest says the
// list is of unfinished jobs (no status, running, ready or scheduled),
// oldest first through Unfinished; otherwise Params lists newest first.
type jobListFilter struct {
	Params     queues.JobListParams
	Oldest     bool
	Unfinished queues.JobListUnfinishedParams
	JumpID     int64
	Form       views.JobFilter
}

// oldestFirst says whether the /jobs list of status lists unfinished jobs
// oldest first, and which of their states.
func oldestFirst(status string) (running, due, scheduled, ok bool) {
	switch status {
	case "":
		return true, true, false, true
	case queues.StatusRunning:
		return true, false, false, true
	case queues.StatusReady:
		return false, true, false, true
	case jobStatusScheduled:
		return false, false, true, true
	}
	return false, false, false, false
}

// jobListDefaultLimit and jobListMaxLimit bound a page of /jobs.
const (
	jobListDefaultLimit = 50
	jobListMaxLimit     = 500
)

// parseJobFilter reads the /jobs query string: queue, kind, status,
// error_class, created_from, created_until, before (keyset cursor), limit
// and id (jump to one job). Every bad value is a message next to its field
// in f.Form.Errors, with what was typed kept in the form; the error returned
// is a badRequest saying all of them.
func parseJobFilter(q queryParams, now time.Time) (jobListFilter, error) {
	var f jobListFilter
	errs := map[string]string{}
	var msgs []string
	check := func(field string, err error) {
		if err != nil && errs[field] == "" {
			errs[field] = err.Error()
			msgs = append(msgs, err.Error())
		}
	}
	var err error
	p := &f.Params
	p.Queue, err = filterText(q, "queue")
	check("queue", err)
	p.Kind, err = filterText(q, "kind")
	check("kind", err)
	p.ErrorClass, err = filterText(q, "error_class")
	check("error_class", err)
	status := strings.ToLower(strings.TrimSpace(q.Get("status")))
	if status == "any" {
		status = jobStatusAll
	}
	if status != "" && !slices.Contains(jobStatuses, status) {
		check("status", errBadRequest("status %q is not one of %s", truncate(status, 40), strings.Join(jobStatuses, ", ")))
		status = ""
	}
	if status != jobStatusAll {
		p.Status = status
	}
	p.CreatedFrom, err = filterTime(q, "created_from", now)
	check("created_from", err)
	p.CreatedUntil, err = filterTime(q, "created_until", now)
	check("created_until", err)
	if p.CreatedFrom != nil && p.CreatedUntil != nil && !p.CreatedFrom.Before(*p.CreatedUntil) {
		check("created_until", errBadRequest("created_from must be before created_until"))
	}
	p.BeforeID, err = filterID(q, "before", math.MaxInt64)
	check("before", err)
	afterID, err := filterID(q, "after", math.MaxInt64)
	check("after", err)
	p.Limit, err = filterLimit(q, jobListDefaultLimit, jobListMaxLimit)
	check("limit", err)
	f.JumpID, err = filterID(q, "id", math.MaxInt64)
	check("id", err)
	running, due, scheduled, oldest := oldestFirst(status)
	switch {
	case oldest && p.BeforeID > 0:
		check("before", errBadRequest("before pages a newest-first list (dead, done, all); this list is oldest first: use after"))
	case !oldest && afterID > 0:
		check("after", errBadRequest("after pages an oldest-first list (running, ready, scheduled); this list is newest first: use before"))
	}
	f.Oldest = oldest
	f.Unfinished = queues.JobListUnfinishedParams{Queue: p.Queue, Kind: p.Kind, ErrorClass: p.ErrorClass,
		CreatedFrom: p.CreatedFrom, CreatedUntil: p.CreatedUntil, Running: running, Due: due, Scheduled: scheduled,
		AfterID: afterID, Limit: p.Limit}
	formStatus := p.Status
	if status == jobStatusAll {
		formStatus = jobStatusAll
	}
	f.Form = views.JobFilter{
		Queue: p.Queue, Kind: p.Kind, Status: formStatus, ErrorClass: p.ErrorClass,
		CreatedFrom: formTime(p.CreatedFrom), CreatedUntil: formTime(p.CreatedUntil),
		Statuses: jobStatuses, TimeHelp: strings.TrimPrefix(filterTimeHelp, "type "),
	}
	if q.Get("limit") != "" {
		f.Form.Limit = strconv.Itoa(p.Limit)
	}
	if len(errs) == 0 {
		return f, nil
	}
	// Keep what was typed in the boxes that refused it, so it can be
	// corrected rather than typed again.
	typed := func(name string) string { return truncate(strings.ToValidUTF8(q.Get(name), ""), maxFilterText) }
	for field, dst := range map[string]*string{"queue": &f.Form.Queue, "kind": &f.Form.Kind, "error_class": &f.Form.ErrorClass,
		"created_from": &f.Form.CreatedFrom, "created_until": &f.Form.CreatedUntil, "limit": &f.Form.Limit, "id": &f.Form.JumpID} {
		if errs[field] != "" {
			*dst = typed(field)
		}
	}
	f.Form.Errors = errs
	return f, errBadRequest("%s", strings.Join(msgs, "; "))
}

// formTime writes a parsed time back into a filter box.
func formTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// query is the filter's query string without the cursor, for the "older"
// link and the links that keep the filter.
func (f jobListFilter) query() url.Values {
	return queryOf("queue", f.Form.Queue, "kind", f.Form.Kind, "status", f.Form.Status,
		"error_class", f.Form.ErrorClass, "created_from", f.Form.CreatedFrom,
		"created_until", f.Form.CreatedUntil, "limit", f.Form.Limit)
}

// auditListFilter is a parsed /audit query.
type auditListFilter struct {
	Params audit.ListParams
	Form   views.AuditFilter
}

// auditListDefaultLimit and auditListMaxLimit bound a page of /audit.
const (
	auditListDefaultLimit = 50
	auditListMaxLimit     = 500
)

// auditOutcomes are the values the outcome filter accepts.
var auditOutcomes = []string{string(audit.OutcomeSucceeded), string(audit.OutcomeFailed), string(audit.OutcomeRefused)}

// parseAuditFilter reads the /audit query string: actor, action, target,
// outcome, incident, before (keyset cursor) and limit.
func parseAuditFilter(q queryParams) (auditListFilter, error) {
	var f auditListFilter
	var err error
	p := &f.Params
	if p.Actor, err = filterText(q, "actor"); err != nil {
		return f, err
	}
	if p.Action, err = filterText(q, "action"); err != nil {
		return f, err
	}
	if p.Target, err = filterText(q, "target"); err != nil {
		return f, err
	}
	outcome := strings.ToLower(strings.TrimSpace(q.Get("outcome")))
	if outcome != "" && outcome != "any" {
		if !audit.Outcome(outcome).Valid() {
			return f, errBadRequest("outcome %q is not one of %s", truncate(outcome, 40), strings.Join(auditOutcomes, ", "))
		}
		p.Outcome = outcome
	}
	incident, err := filterID(q, "incident", math.MaxInt64)
	if err != nil {
		return f, err
	}
	if incident > 0 {
		p.IncidentID = &incident
	}
	if p.BeforeID, err = filterID(q, "before", auditBeforeMax); err != nil {
		return f, err
	}
	if p.Limit, err = filterLimit(q, auditListDefaultLimit, auditListMaxLimit); err != nil {
		return f, err
	}
	f.Form = views.AuditFilter{Actor: p.Actor, Action: p.Action, Target: p.Target, Outcome: p.Outcome, Outcomes: auditOutcomes}
	if incident > 0 {
		f.Form.Incident = strconv.FormatInt(incident, 10)
	}
	if q.Get("limit") != "" {
		f.Form.Limit = strconv.Itoa(p.Limit)
	}
	return f, nil
}

// query is the filter's query string without the cursor.
func (f auditListFilter) query() url.Values {
	return queryOf("actor", f.Form.Actor, "action", f.Form.Action, "target", f.Form.Target,
		"outcome", f.Form.Outcome, "incident", f.Form.Incident, "limit", f.Form.Limit)
}

// olderHref is the "older" link of a keyset page: the same filter, with the
// cursor at the smallest id shown. A short page has no older link.
func olderHref(path string, q url.Values, lastID int64, shown, limit int) string {
	if shown < limit || lastID <= 1 {
		return ""
	}
	q2 := url.Values{}
	for k, v := range q {
		q2[k] = v
	}
	q2.Set("before", strconv.FormatInt(lastID, 10))
	return path + "?" + q2.Encode()
}

// newerHref continues an oldest-first list of path after lastID, keeping
// q; empty when the page shown was short (the last one).
func newerHref(path string, q url.Values, lastID int64, shown, limit int) string {
	if shown < limit {
		return ""
	}
	q2 := url.Values{}
	for k, v := range q {
		q2[k] = v
	}
	q2.Set("after", strconv.FormatInt(lastID, 10))
	return path + "?" + q2.Encode()
}

// queryOf is a query string of key, value pairs, leaving out the keys
// whose value is empty.
func queryOf(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// listHref is path with q, or path alone when q is empty.
func listHref(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
